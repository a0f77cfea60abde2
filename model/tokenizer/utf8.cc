// UTF-8 validity as SentencePiece's string_util::DecodeUTF8 defines it (which is also what
// Python's strict UTF-8 codec accepts).
#include "model/tokenizer/utf8.h"

namespace transerve::utf8 {
namespace {

inline bool IsTrail(uint8_t c) { return (c & 0xC0) == 0x80; }

inline bool IsScalarValue(uint32_t cp) { return cp < 0xD800 || (cp >= 0xE000 && cp <= 0x10FFFF); }

}  // namespace

size_t ValidCharLen(std::string_view s) {
  if (s.empty()) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  if (p[0] < 0x80) return 1;
  if (n >= 2 && (p[0] & 0xE0) == 0xC0 && IsTrail(p[1])) {
    const uint32_t cp = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    return cp >= 0x80 ? 2 : 0;
  }
  if (n >= 3 && (p[0] & 0xF0) == 0xE0 && IsTrail(p[1]) && IsTrail(p[2])) {
    const uint32_t cp = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    return cp >= 0x800 && IsScalarValue(cp) ? 3 : 0;
  }
  if (n >= 4 && (p[0] & 0xF8) == 0xF0 && IsTrail(p[1]) && IsTrail(p[2]) && IsTrail(p[3])) {
    const uint32_t cp =
        ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    return cp >= 0x10000 && IsScalarValue(cp) ? 4 : 0;
  }
  return 0;
}

bool IsValid(std::string_view s, size_t* error_offset) {
  size_t pos = 0;
  while (pos < s.size()) {
    // ASCII runs are the common case; skip them without the general decoder.
    if (static_cast<uint8_t>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t len = ValidCharLen(s.substr(pos));
    if (len == 0) {
      if (error_offset != nullptr) *error_offset = pos;
      return false;
    }
    pos += len;
  }
  return true;
}

}  // namespace transerve::utf8
