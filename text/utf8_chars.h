// Code points of UTF-8 text by byte position, and what counts as a word character: the small
// helpers the text layer's files share (ICU's macros, which never read past the string and give
// a negative code point for an invalid sequence).
#pragma once

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace transerve::text {

// The number of code points of UTF-8 text (the bytes that start one; for valid UTF-8, what
// the request limits count as characters).
inline int64_t CountCodePoints(std::string_view s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

// The code point starting at byte `pos` (-1 at the end or for invalid bytes); `*length` gets
// its byte length.
inline UChar32 CharAt(std::string_view s, size_t pos, size_t* length = nullptr) {
  if (pos >= s.size()) return -1;
  int32_t i = static_cast<int32_t>(pos);
  UChar32 c;
  U8_NEXT(s.data(), i, static_cast<int32_t>(s.size()), c);
  if (length != nullptr) *length = static_cast<size_t>(i) - pos;
  return c;
}

// The code point ending at byte `pos` (-1 at the start).
inline UChar32 CharBefore(std::string_view s, size_t pos) {
  if (pos == 0 || pos > s.size()) return -1;
  int32_t i = static_cast<int32_t>(pos);
  UChar32 c;
  U8_PREV(s.data(), 0, i, c);
  return c;
}

// The byte position of the next / previous code point boundary.
inline size_t NextChar(std::string_view s, size_t pos) {
  int32_t i = static_cast<int32_t>(pos);
  U8_FWD_1(reinterpret_cast<const uint8_t*>(s.data()), i, static_cast<int32_t>(s.size()));
  return static_cast<size_t>(i);
}
inline size_t PrevChar(std::string_view s, size_t pos) {
  int32_t i = static_cast<int32_t>(pos);
  U8_BACK_1(reinterpret_cast<const uint8_t*>(s.data()), 0, i);
  return static_cast<size_t>(i);
}

// Letters, digits and marks make words: a tag or a mapped point never lands inside one.
inline bool IsWordChar(UChar32 c) {
  return c >= 0 &&
         (u_isalnum(c) || u_getCombiningClass(c) > 0 || u_charType(c) == U_NON_SPACING_MARK);
}

// Letters, digits, marks and '_' make words for caller terms and glossary terms: such a term
// never starts or ends inside one.
inline bool IsTermChar(UChar32 c) {
  return c >= 0 && (c == '_' || u_isalnum(c) || u_charType(c) == U_NON_SPACING_MARK ||
                    u_charType(c) == U_COMBINING_SPACING_MARK);
}

}  // namespace transerve::text
