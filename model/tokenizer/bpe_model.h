// SentencePiece's BPE segmentation (model_type=bpe, what M2M-100 and NLLB ship): the normalized
// text split into characters (a user-defined symbol stays whole), then adjacent symbols merged,
// best-scoring merge first (ties: the leftmost), while their concatenation is a piece of the
// model; a merge that produced an UNUSED piece is undone at the end into the two symbols it
// joined (sentencepiece::bpe::Model::Encode without sampling, 0.1.97).
#ifndef TRANSERVE_MODEL_TOKENIZER_BPE_MODEL_H_
#define TRANSERVE_MODEL_TOKENIZER_BPE_MODEL_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "model/tokenizer/piece_trie.h"
#include "model/tokenizer/unigram_model.h"

namespace transerve {

class BpeModel {
 public:
  using Span = UnigramModel::Span;

  BpeModel() = default;
  // `scores` and `types` are indexed by piece id; `trie` holds the NORMAL, USER_DEFINED and
  // UNUSED pieces (the ones a merge may produce); `user_defined` the USER_DEFINED ones.
  BpeModel(std::vector<float> scores, std::vector<PieceType> types, int32_t unk_id, PieceTrie trie,
           PieceTrie user_defined);

  // Replaces *spans with the segmentation of `normalized` (valid UTF-8, as the normalizer leaves
  // it). A symbol that is not a piece gets the unk id (the caller merges runs of them).
  void Encode(std::string_view normalized, std::vector<Span>* spans) const;

  const PieceTrie& trie() const { return trie_; }

 private:
  // Where a merge that made an UNUSED piece split it: text[begin, end) = [begin, left_end) +
  // [left_end, end).
  struct UnusedSplit {
    uint32_t begin;
    uint32_t left_end;
    uint32_t end;
  };
  // Appends `normalized[begin, end)` as spans, undoing merges into UNUSED pieces.
  void Resegment(std::string_view normalized, uint32_t begin, uint32_t end,
                 const std::vector<UnusedSplit>& unused_splits, std::vector<Span>* spans) const;

  std::vector<float> scores_;
  std::vector<PieceType> types_;
  int32_t unk_id_ = 0;
  PieceTrie trie_;
  PieceTrie user_defined_;
};

}  // namespace transerve

#endif  // TRANSERVE_MODEL_TOKENIZER_BPE_MODEL_H_
