// SentencePiece's text normalizer: precompiled charsmap rules, whitespace trimming and
// collapsing, the dummy-prefix and the U+2581 whitespace escape, with user-defined symbols
// passed through untouched. Reproduces sentencepiece::normalizer::Normalizer (0.1.9x).
#ifndef TRANSERVE_MODEL_TOKENIZER_NORMALIZER_H_
#define TRANSERVE_MODEL_TOKENIZER_NORMALIZER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tokenizer/piece_trie.h"
#include "model/tokenizer/precompiled_charsmap.h"

namespace transerve {

namespace spm {
class NormalizerSpec;
}

// U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's visible whitespace.
inline constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";

class Normalizer {
 public:
  Normalizer() = default;

  // `user_defined_symbols` are matched (longest first) before the rules and copied verbatim.
  static absl::StatusOr<Normalizer> Create(
      const spm::NormalizerSpec& spec, bool treat_whitespace_as_suffix,
      const std::vector<std::string_view>& user_defined_symbols);

  // Replaces *out with the normalized form of `input`.
  void Normalize(std::string_view input, std::string* out) const;

 private:
  // The replacement for the longest normalization unit at the start of `input`, and how many
  // input bytes it consumes. Malformed UTF-8 becomes U+FFFD one byte at a time.
  std::pair<std::string_view, size_t> NormalizePrefix(std::string_view input) const;

  PrecompiledCharsMap charsmap_;
  PieceTrie user_defined_;
  bool add_dummy_prefix_ = true;
  bool remove_extra_whitespaces_ = true;
  bool escape_whitespaces_ = true;
  bool treat_whitespace_as_suffix_ = false;
};

}  // namespace transerve

#endif  // TRANSERVE_MODEL_TOKENIZER_NORMALIZER_H_
