// A vocabulary shortlist: the target tokens a source can lead to, from a model directory's
// `vmap.txt` in CTranslate2's format, so that a decoder step computes the output projection
// over those rows only (docs/engine.md, "Vocabulary shortlist").
//
// Each line is `SOURCE<TAB>TARGETS`: SOURCE an n-gram of source pieces separated by spaces,
// TARGETS the target pieces it may produce, separated by spaces. A line whose SOURCE is empty
// lists tokens every sentence may produce. A sentence's candidates are those, the special
// tokens (pad, EOS, unknown), the tokens the caller adds (a forced language code), and the
// TARGETS of every n-gram of its source pieces that has a line (n up to the longest SOURCE).
// A target piece the vocabulary lacks stands for the unknown token, as in CTranslate2.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/marian_tokenizer.h"

namespace transerve {

class VocabularyMap {
 public:
  // INVALID_ARGUMENT (naming the file and line) for a line without a tab.
  static absl::StatusOr<VocabularyMap> Parse(std::string_view text, std::string_view name,
                                             const MarianTokenizer& tokenizer);
  // The directory's vmap.txt; NOT_FOUND when it has none.
  static absl::StatusOr<VocabularyMap> Load(const std::string& model_dir,
                                            const MarianTokenizer& tokenizer);

  // The sorted, distinct target ids sentence `source_ids` may produce, `extra` included.
  std::vector<int32_t> Candidates(std::span<const int32_t> source_ids,
                                  std::span<const int32_t> extra) const;

  size_t rules() const;

 private:
  const MarianTokenizer* tokenizer_ = nullptr;
  std::vector<int32_t> always_;
  // rules_[n - 1]: n-grams of source pieces joined by single spaces -> target ids.
  std::vector<absl::flat_hash_map<std::string, std::vector<int32_t>>> rules_;
};

}  // namespace transerve
