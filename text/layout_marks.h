// The layout a plain-text line carries around its sentences: line breaks, Unicode whitespace
// and the bullet or number that opens a list item. Byte-level scanners over UTF-8 (invalid
// bytes are never whitespace or markers).
#pragma once

#include <cstddef>
#include <string_view>

namespace transerve::text {

// Bytes of the line break at `pos` (\n, \r\n, \r, \v, \f, U+0085, U+2028, U+2029); 0 if none.
size_t LineBreakLength(std::string_view text, size_t pos);

// Bytes of the whitespace character at `pos` (Unicode White_Space other than line breaks, and
// the byte-order mark); 0 if none.
size_t SpaceLength(std::string_view text, size_t pos);

// Bytes of the list marker opening `line` together with the whitespace after it: a bullet
// ("- ", "* ", "• ", "· ", "– ") or a number ("1. ", "2) ", "10. ", "1.2. ", "a) ", "(iv) ").
// The marker must be followed by whitespace or end the line; 0 if `line` starts with none.
size_t ListMarkerLength(std::string_view line);

// Bytes of the UTF-8 character at `pos` (1 for an invalid byte), so a scan never stops inside
// a code point.
size_t CharLength(std::string_view text, size_t pos);

// Whether `text` holds a letter or a digit in any script (a piece without one, such as "***"
// or an emoji alone, is nothing to translate).
bool HasLetterOrDigit(std::string_view text);

}  // namespace transerve::text
