#include "text/layout_marks.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace transerve::text {
namespace {

// The code point at `pos` and its length in bytes; a negative code point for an invalid byte.
struct Decoded {
  UChar32 c = -1;
  size_t length = 0;
};

Decoded DecodeAt(std::string_view text, size_t pos) {
  if (pos >= text.size()) return {};
  const auto* s = reinterpret_cast<const uint8_t*>(text.data() + pos);
  const int32_t n = static_cast<int32_t>(std::min<size_t>(4, text.size() - pos));
  int32_t i = 0;
  UChar32 c;
  U8_NEXT(s, i, n, c);
  return {c, static_cast<size_t>(i)};
}

bool IsLineBreak(UChar32 c) {
  return c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x85 || c == 0x2028 ||
         c == 0x2029;
}

// Bullets people type or paste at the start of a list item.
constexpr std::array<UChar32, 14> kBullets = {'-',    '*',    '+',    0x2022, 0x00B7,
                                              0x2013, 0x2014, 0x2023, 0x2043, 0x25E6,
                                              0x25AA, 0x25CF, 0x25CB, 0x25A0};

bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsRomanDigit(char c) {
  return std::string_view("ivxlcdmIVXLCDM").find(c) != std::string_view::npos;
}

// Bytes of the number that opens `line` ("12." "1.2)" "a)" "(iv)"), 0 if none.
size_t NumberLength(std::string_view line) {
  size_t i = 0;
  if (!line.empty() && line[0] == '(') {
    // "(3)", "(b)", "(iv)"
    i = 1;
    size_t digits = 0;
    while (i < line.size() && IsAsciiDigit(line[i]) && digits < 3) ++i, ++digits;
    if (digits == 0) {
      size_t letters = 0;
      while (i < line.size() && IsRomanDigit(line[i]) && letters < 6) ++i, ++letters;
      if (letters == 0 && i < line.size() && IsAsciiLetter(line[i])) ++i, ++letters;
      if (letters == 0) return 0;
    }
    return i < line.size() && line[i] == ')' ? i + 1 : 0;
  }
  // "1." "10)" "1.2." : up to three digits a group, groups joined by dots.
  while (true) {
    size_t digits = 0;
    while (i < line.size() && IsAsciiDigit(line[i]) && digits < 3) ++i, ++digits;
    if (digits == 0) break;
    if (i < line.size() && line[i] == ')') return i + 1;
    if (i < line.size() && line[i] == '.') {
      ++i;
      if (i < line.size() && IsAsciiDigit(line[i])) continue;
      return i;
    }
    return 0;
  }
  if (i != 0) return 0;
  // "a)" "iv)": a letter or a roman numeral closed by a parenthesis ("a." would also catch an
  // initial such as "A. Smith").
  while (i < line.size() && IsRomanDigit(line[i]) && i < 6) ++i;
  if (i == 0 && !line.empty() && IsAsciiLetter(line[0])) i = 1;
  return i != 0 && i < line.size() && line[i] == ')' ? i + 1 : 0;
}

// Bytes of whitespace starting at `pos`.
size_t SpaceRunLength(std::string_view text, size_t pos) {
  size_t p = pos;
  while (size_t n = SpaceLength(text, p)) p += n;
  return p - pos;
}

}  // namespace

size_t LineBreakLength(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  if (text[pos] == '\r') return pos + 1 < text.size() && text[pos + 1] == '\n' ? 2 : 1;
  const uint8_t lead = static_cast<uint8_t>(text[pos]);
  if (lead < 0x80) return IsLineBreak(lead) ? 1 : 0;
  if (lead != 0xC2 && lead != 0xE2) return 0;  // U+0085, U+2028 and U+2029 start so
  const Decoded d = DecodeAt(text, pos);
  return IsLineBreak(d.c) ? d.length : 0;
}

size_t SpaceLength(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  const uint8_t lead = static_cast<uint8_t>(text[pos]);
  if (lead < 0x80) return (lead == ' ' || lead == '\t') ? 1 : 0;
  const Decoded d = DecodeAt(text, pos);
  if (d.c < 0 || IsLineBreak(d.c)) return 0;
  return (u_isUWhiteSpace(d.c) || d.c == 0xFEFF) ? d.length : 0;
}

size_t ListMarkerLength(std::string_view line) {
  size_t marker = NumberLength(line);
  if (marker == 0) {
    const Decoded d = DecodeAt(line, 0);
    if (std::find(kBullets.begin(), kBullets.end(), d.c) != kBullets.end()) marker = d.length;
  }
  if (marker == 0) return 0;
  const size_t spaces = SpaceRunLength(line, marker);
  if (spaces == 0 && marker < line.size()) return 0;  // "-5", "1.5", "*emphasis*"
  return marker + spaces;
}

size_t CharLength(std::string_view text, size_t pos) {
  return std::max<size_t>(1, DecodeAt(text, pos).length);
}

bool HasLetterOrDigit(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const Decoded d = DecodeAt(text, pos);
    if (d.c >= 0 && u_isalnum(d.c)) return true;
    pos += std::max<size_t>(1, d.length);
  }
  return false;
}

}  // namespace transerve::text
