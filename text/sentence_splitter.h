// Cuts a text into sentences (what the model translates) and layout (what it must not touch:
// whitespace, line breaks, bullets, list numbering), so that the translation can be put back
// together with the source's layout exactly.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "text/aligned_translation.h"

namespace transerve::text {

struct TextPiece {
  ByteRange range;
  bool translate = false;  // a sentence (true) or layout (false)
};

struct SplitOptions {
  bool split_sentences = true;  // false: each line is one piece (layout still kept)
  std::string language = "en";  // the source language's break rules (ICU locale)
};

// Pieces covering `text` exactly and in order (their ranges concatenate to the whole text),
// none empty, no two layout pieces side by side. Sentences hold no leading or trailing
// whitespace; every line break (\n, \r\n, \r, \v, \f, U+0085, U+2028, U+2029) is a boundary,
// and so is a tab inside a line (it separates columns). Layout: whitespace (Unicode), line
// breaks, indentation, up to two list markers at a line's start ("- ", "• ", "1. ", "(iv) ",
// "- 1. "), and any piece with no letter or digit ("-----", an emoji alone). Sentence breaks
// follow ICU's rules for `options.language`, corrected as text/sentence_breaks.h describes.
std::vector<TextPiece> SplitSentences(std::string_view text, const SplitOptions& options);

// A sentence longer than `max_units` (as `units` counts them, e.g. model tokens) cut into parts
// of at most that many, at the safest points found: clause punctuation (, ; : . ! ? and dashes
// followed by a space; CJK commas and stops), then spaces, then any code point boundary; a
// part ends after the whitespace that follows its cut. A preferred cut is taken when it keeps
// at least a quarter of what would fit. The parts cover the sentence exactly; none is dropped
// or truncated; a character that alone counts more than `max_units` is a part by itself.
// O(log n) calls of `units` a part, on texts no longer than about twice the part.
std::vector<ByteRange> CutLongSentence(std::string_view sentence, int max_units,
                                       const std::function<int(std::string_view)>& units);

}  // namespace transerve::text
