// Deterministic generators of varied test text for the SentencePiece oracle test: the lines that
// are encoded (every kind of character a tokenizer trips on) and a training corpus for spm_train.
#ifndef TRANSERVE_TESTS_MODEL_TOKENIZER_ORACLE_TEXT_H_
#define TRANSERVE_TESTS_MODEL_TOKENIZER_ORACLE_TEXT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace transerve::testing {

// A small fixed PRNG (SplitMix64) so that the text is the same on every platform and library.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform-enough integer in [0, n); n > 0.
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(Next() % n); }
  bool Chance(uint32_t percent) { return Below(100) < percent; }

 private:
  uint64_t state_;
};

// `count` lines without '\n': ASCII prose, Unicode punctuation, full-width forms, accents and
// combining marks, emoji sequences, CJK and other scripts, tabs and odd spaces, leading/trailing
// and repeated whitespace, very long words, digits, control characters, random code points,
// literal special tokens and U+2581, and (in some lines) malformed UTF-8.
std::vector<std::string> GenerateOracleLines(uint64_t seed, int count);

// Well-formed lines in the same mix (without malformed bytes), for spm_train.
std::vector<std::string> GenerateTrainingCorpus(uint64_t seed, int count);

// Appends the UTF-8 encoding of `cp` (any value up to U+10FFFF, surrogates included when asked
// for: they make malformed UTF-8).
void AppendCodePoint(uint32_t cp, std::string* out);

}  // namespace transerve::testing

#endif  // TRANSERVE_TESTS_MODEL_TOKENIZER_ORACLE_TEXT_H_
