// How an HTML source spelled its text, for writing translated text back the same way: which
// character references it used for which characters, the markup gumbo merged into a text node,
// and escaping that follows the source. Internal to HtmlDocument.
#pragma once

#include <unicode/umachine.h>

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace transerve::text::html {

// One entity-decoded code point and how the source spelled it (the first spelling seen).
using Spellings = std::unordered_map<UChar32, std::string>;

// Learns from `original` (as in the source) and `decoded` (gumbo's text) how each character was
// written. Stops where the two no longer line up.
void LearnSpellings(std::string_view original, std::string_view decoded, Spellings* out);

// Whether `s` holds what HTML reads as the start of a tag ("<b", "</", "<!", "<?").
bool HasTagStart(std::string_view s);

// A text node's original text can hold markup gumbo dropped (a stray end tag, a <td> outside a
// table) between the pieces of text it merged: the pieces and the markup, in order, each piece
// with its decoded text. Empty where original and decoded do not line up.
struct TextPart {
  bool markup = false;
  size_t begin = 0, end = 0;  // in the original text
  std::string decoded;
};
std::vector<TextPart> SplitMergedText(std::string_view original, std::string_view decoded);

// `text` escaped for HTML text (or a double-quoted attribute value): &, < (and > and ") as
// references unless the source wrote them bare where that is safe; every other character as
// the source spelled it (&nbsp; &copy; &#8212; CR LF), else as it is.
std::string Escape(std::string_view text, const Spellings& spellings, bool attribute);

}  // namespace transerve::text::html
