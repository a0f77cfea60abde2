// Byte-level equivalents of the regex and strip: the delimiters are ASCII, so matching on UTF-8
// bytes finds exactly the code-point matches Python finds.
#include "model/tokenizer/marian_text_rules.h"

#include <cstdint>

namespace transerve::marian_text {
namespace {

bool IsPythonSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Decodes the (valid) character starting at `p`; sets *len.
uint32_t DecodeAt(std::string_view s, size_t p, size_t* len) {
  const auto b0 = static_cast<uint8_t>(s[p]);
  auto cont = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>(s[p + i]) & 0x3F);
  };
  if (b0 < 0x80 || p + 1 >= s.size()) {
    *len = 1;
    return b0;
  }
  if (b0 < 0xE0) {
    *len = 2;
    return ((b0 & 0x1Fu) << 6) | cont(1);
  }
  if (b0 < 0xF0 && p + 2 < s.size()) {
    *len = 3;
    return ((b0 & 0x0Fu) << 12) | (cont(1) << 6) | cont(2);
  }
  if (p + 3 < s.size()) {
    *len = 4;
    return ((b0 & 0x07u) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
  }
  *len = 1;
  return b0;
}

}  // namespace

size_t MatchLanguageCodeAt(std::string_view text, size_t pos) {
  if (text.compare(pos, 2, ">>") != 0) return 0;
  // `.+` needs at least one character, and neither it nor the closing "<<" may cross a newline.
  const size_t body = pos + 2;
  size_t line_end = text.find('\n', body);
  if (line_end == std::string_view::npos) line_end = text.size();
  if (line_end < body + 3) return 0;
  // Greedy: the last "<<" on the line that leaves at least one character for `.+`.
  const size_t close = text.substr(body + 1, line_end - body - 1).rfind("<<");
  if (close == std::string_view::npos) return 0;
  return (body + 1 + close + 2) - pos;
}

std::string RemoveLanguageCodes(std::string_view text) {
  std::string out;
  size_t copied = 0;  // text[copied, ...) has not been copied yet
  size_t pos = 0;
  while ((pos = text.find(">>", pos)) != std::string_view::npos) {
    const size_t len = MatchLanguageCodeAt(text, pos);
    if (len == 0) {
      ++pos;
      continue;
    }
    out.append(text.substr(copied, pos - copied));
    pos += len;
    copied = pos;
  }
  out.append(text.substr(copied));
  return out;
}

std::string_view StripPythonWhitespace(std::string_view text) {
  while (!text.empty()) {
    size_t len = 0;
    if (!IsPythonSpace(DecodeAt(text, 0, &len))) break;
    text.remove_prefix(len);
  }
  while (!text.empty()) {
    size_t start = text.size() - 1;
    while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
    size_t len = 0;
    if (!IsPythonSpace(DecodeAt(text, start, &len))) break;
    text.remove_suffix(text.size() - start);
  }
  return text;
}

}  // namespace transerve::marian_text
