// Plain text with its inline markup lifted out: what the model translates, and the tags to put
// back into the translation where the alignment says their words went.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "text/aligned_translation.h"

namespace transerve::text {

struct InlineTag {
  ByteRange range;    // the bytes of MarkedText::text it wraps; empty for a void element
  std::string open;   // the start tag's source bytes, or a void element's (<br>, <img>, a comment)
  std::string close;  // the end tag's bytes; empty for a void element
  // The index in MarkedText::tags of the tag this one sits directly inside, -1 at the top. The
  // ranges alone cannot say whether a void element at a tag's end is inside it or after it.
  int parent = -1;
  bool is_void() const { return close.empty(); }
};

struct MarkedText {
  std::string text;
  // Properly nested, in document order (the order of their start tags; at equal starts the
  // outer tag first); a tag's parent comes before it and its range contains the tag's.
  std::vector<InlineTag> tags;
};

// Text runs of the output pass through this (HTML escaping); identity for plain text.
using EscapeFn = std::function<std::string(std::string_view)>;

// The translation `t` (t.source == source.text) with every tag of `source` inserted exactly
// once around the target words its source words align to, nesting kept (a child inside its
// parent, siblings in the order their words took, never overlapping), so the result is
// well-formed whatever the alignment says. Tag boundaries fall on word boundaries of the target
// (inside a word only where the word came through unchanged, as in H<sub>2</sub>O), with the
// whitespace around them as in the source; without an alignment, tags go to the same relative
// positions. Text runs are written through `escape`.
std::string InsertTags(const MarkedText& source, const AlignedTranslation& t,
                       const EscapeFn& escape);

}  // namespace transerve::text
