// The inline markup of a subtitle cue's text, lifted out as text::MarkedText tags and written
// back. SubRip players read <i>, <b>, <u>, <s> and <font ...> and the {\...} overrides of ASS;
// WebVTT has <c.class>, <i>, <b>, <u>, <v Name>, <lang tag>, <ruby>, <rt> and timestamps, and
// escapes &, < and > as character references. Anything else is text: a '<' that opens no known
// tag stays a character of the sentence.
#pragma once

#include <string>
#include <string_view>

#include "text/marked_text.h"

namespace transerve::files {

// `source` with its tags lifted out. A tag whose end tag is missing (WebVTT's <v Name> usually
// has none) or an end tag without its start is kept as a void tag, at its place.
text::MarkedText LiftSubtitleTags(std::string_view source, bool subrip);

// The markup written back: LiftSubtitleTags's inverse for well-formed input.
std::string WriteSubtitleMarkup(const text::MarkedText& marked, bool subrip);

// WebVTT: &, < and > as &amp;, &lt; and &gt;. SubRip: as it is.
std::string EscapeSubtitleText(std::string_view text, bool subrip);

// The end of the tag starting at markup[pos], or pos when none starts there.
size_t SubtitleTagEnd(std::string_view markup, size_t pos, bool subrip);

}  // namespace transerve::files
