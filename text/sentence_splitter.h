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

// Pieces covering `text` exactly and in order (their ranges concatenate to the whole text).
// Sentences hold no leading or trailing whitespace; every line break is a boundary.
std::vector<TextPiece> SplitSentences(std::string_view text, const SplitOptions& options);

// A sentence longer than `max_units` (as `units` counts them, e.g. model tokens) cut into parts
// of at most that many, at the safest points found: clause punctuation, then spaces, then any
// character boundary. The parts cover the sentence exactly; none is dropped or truncated.
std::vector<ByteRange> CutLongSentence(std::string_view sentence, int max_units,
                                       const std::function<int(std::string_view)>& units);

}  // namespace transerve::text
