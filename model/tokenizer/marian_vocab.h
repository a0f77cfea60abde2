// A Hugging Face Marian vocabulary file (vocab.json / target_vocab.json): a JSON object mapping
// piece strings to model ids, read the way Python's json.load + dict inversion sees it.
#ifndef TRANSERVE_MODEL_TOKENIZER_MARIAN_VOCAB_H_
#define TRANSERVE_MODEL_TOKENIZER_MARIAN_VOCAB_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/absl_string_view.h"

namespace transerve {

class MarianVocab {
 public:
  // Ids must be integers in [0, kMaxId]. A key given twice keeps its last id (as a Python dict);
  // an id given to several keys maps back to the last of them in file order (as HF's
  // `{v: k for k, v in encoder.items()}`). Errors name `path`.
  static absl::StatusOr<MarianVocab> LoadFile(const std::string& path);
  static absl::StatusOr<MarianVocab> Parse(std::string_view json, std::string_view name);
  // Pieces by id, as a CTranslate2 vocabulary lists them: id i is tokens[i]; a piece listed
  // twice keeps both ids and is found at the first, as CTranslate2 looks it up.
  static MarianVocab FromTokens(const std::vector<std::string>& tokens);

  static constexpr int32_t kMaxId = (1 << 24) - 1;

  // The id of `piece`, or -1.
  int32_t Find(std::string_view piece) const {
    const auto it = ids_.find(AbslView(piece));
    return it == ids_.end() ? -1 : it->second;
  }
  // The piece for `id`, or nullptr when no key has that id.
  const std::string* IdToPiece(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size() || !has_piece_[id]) return nullptr;
    return &pieces_[id];
  }
  // Number of distinct keys (HF's len(encoder)).
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }

 private:
  absl::flat_hash_map<std::string, int32_t> ids_;
  std::vector<std::string> pieces_;  // by id
  std::vector<bool> has_piece_;
};

}  // namespace transerve

#endif  // TRANSERVE_MODEL_TOKENIZER_MARIAN_VOCAB_H_
