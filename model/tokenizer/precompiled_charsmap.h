// Read-only view of SentencePiece's precompiled normalization rules (NormalizerSpec
// .precompiled_charsmap): a Darts-clone double-array trie over source byte strings whose values
// point into a blob of NUL-terminated replacement strings.
#ifndef TRANSERVE_MODEL_TOKENIZER_PRECOMPILED_CHARSMAP_H_
#define TRANSERVE_MODEL_TOKENIZER_PRECOMPILED_CHARSMAP_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace transerve {

class PrecompiledCharsMap {
 public:
  PrecompiledCharsMap() = default;  // No rules: everything is copied as is.

  // Parses `blob` (copied). An empty blob gives the empty map; a malformed one is an error.
  static absl::StatusOr<PrecompiledCharsMap> Parse(std::string_view blob);

  bool empty() const { return units_.empty(); }

  // Finds the longest rule whose source is a prefix of `input`. On a match sets *length to the
  // number of input bytes it covers and *replacement to its output (possibly empty: a deletion).
  bool LongestMatch(std::string_view input, size_t* length, std::string_view* replacement) const;

 private:
  std::vector<uint32_t> units_;  // Darts-clone units, host byte order.
  std::string replacements_;     // NUL-terminated strings addressed by leaf values.
};

}  // namespace transerve

#endif  // TRANSERVE_MODEL_TOKENIZER_PRECOMPILED_CHARSMAP_H_
