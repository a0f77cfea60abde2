// UTF-8 helpers with SentencePiece's exact rules: which byte sequences count as one valid
// character, and how far a lead byte claims to reach (used to step through normalized text).
#ifndef TRANSERVE_MODEL_TOKENIZER_UTF8_H_
#define TRANSERVE_MODEL_TOKENIZER_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace transerve::utf8 {

// U+FFFD, which SentencePiece substitutes for every malformed byte.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// Length a lead byte announces (1 for ASCII and stray continuation bytes, 2, 3 or 4), without
// checking the bytes that follow. SentencePiece steps through already-normalized text with it.
inline int OneCharLen(char lead) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[static_cast<uint8_t>(lead) >> 4];
}

// Length of the well-formed character at the start of `s` (shortest form, no surrogates, at most
// U+10FFFF), or 0 when `s` is empty or starts with a malformed sequence.
size_t ValidCharLen(std::string_view s);

// True when all of `s` is well-formed UTF-8. On failure, *error_offset (if given) is the byte
// offset of the first malformed sequence.
bool IsValid(std::string_view s, size_t* error_offset = nullptr);

}  // namespace transerve::utf8

#endif  // TRANSERVE_MODEL_TOKENIZER_UTF8_H_
