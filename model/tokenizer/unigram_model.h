// Unigram language-model segmentation: the best-scoring split of normalized text into pieces,
// with SentencePiece's scoring, tie-breaking and unknown-character rules
// (sentencepiece::unigram::Model::EncodeOptimized, the default encoder since 0.1.93).
#ifndef TRANSERVE_MODEL_TOKENIZER_UNIGRAM_MODEL_H_
#define TRANSERVE_MODEL_TOKENIZER_UNIGRAM_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/tokenizer/piece_trie.h"

namespace transerve {

// ModelProto.SentencePiece.Type values.
enum class PieceType : uint8_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

class UnigramModel {
 public:
  // One piece of the segmentation: normalized[begin, end) with its id. Unknown characters get
  // the unk id, one span per character (the caller merges runs).
  struct Span {
    uint32_t begin;
    uint32_t end;
    int32_t id;
  };

  UnigramModel() = default;
  // `scores` and `types` are indexed by piece id; `trie` holds the NORMAL, USER_DEFINED and
  // UNUSED pieces (the ones SentencePiece matches in text).
  UnigramModel(std::vector<float> scores, std::vector<PieceType> types, int32_t unk_id,
               PieceTrie trie);

  // Replaces *spans with the Viterbi segmentation of `normalized`.
  void Encode(std::string_view normalized, std::vector<Span>* spans) const;

  const PieceTrie& trie() const { return trie_; }

 private:
  std::vector<float> scores_;
  std::vector<PieceType> types_;
  int32_t unk_id_ = 0;
  PieceTrie trie_;
  float min_score_ = 0;  // over NORMAL pieces; unknown characters score min - 10
  float max_score_ = 0;  // over NORMAL pieces, floored at FLT_MIN as upstream
};

}  // namespace transerve

#endif  // TRANSERVE_MODEL_TOKENIZER_UNIGRAM_MODEL_H_
