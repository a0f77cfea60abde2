// Viterbi over the implicit lattice of pieces. Scores are combined with exactly the float/double
// mix of the reference implementation, because ties and near-ties decide between segmentations
// and the output must match spm_encode piece for piece.
#include "model/tokenizer/unigram_model.h"

#include <algorithm>
#include <cfloat>

#include "model/tokenizer/utf8.h"

namespace transerve {
namespace {

constexpr float kUnkPenalty = 10.0f;

}  // namespace

UnigramModel::UnigramModel(std::vector<float> scores, std::vector<PieceType> types, int32_t unk_id,
                           PieceTrie trie)
    : scores_(std::move(scores)),
      types_(std::move(types)),
      unk_id_(unk_id),
      trie_(std::move(trie)) {
  // Upstream starts from FLT_MAX / FLT_MIN (the smallest positive float, not the lowest), so a
  // model whose scores are all negative has max_score = FLT_MIN; user-defined pieces then score
  // about -0.1. Reproduced deliberately.
  min_score_ = FLT_MAX;
  max_score_ = FLT_MIN;
  for (size_t i = 0; i < scores_.size(); ++i) {
    if (types_[i] != PieceType::kNormal) continue;
    min_score_ = std::min(min_score_, scores_[i]);
    max_score_ = std::max(max_score_, scores_[i]);
  }
}

void UnigramModel::Encode(std::string_view normalized, std::vector<Span>* spans) const {
  spans->clear();
  if (normalized.empty()) return;

  struct BestPath {
    int32_t id = -1;
    float score = 0;         // best total score of a path ending here
    int32_t starts_at = -1;  // start of the last piece on that path; -1 = not reached yet
  };
  const size_t size = normalized.size();
  const float unk_score = min_score_ - kUnkPenalty;
  std::vector<BestPath> best(size + 1);

  size_t starts_at = 0;
  while (starts_at < size) {
    const float score_so_far = best[starts_at].score;
    const size_t char_len =
        std::min<size_t>(utf8::OneCharLen(normalized[starts_at]), size - starts_at);
    bool has_single_char_piece = false;
    trie_.ForEachPrefix(normalized, starts_at, [&](size_t end, int32_t id) {
      const PieceType type = types_[id];
      if (type == PieceType::kUnused) return;
      const size_t length = end - starts_at;
      // Upstream computes `length * max_score - 0.1` (float times, then a double subtraction)
      // for user-defined pieces and sums in double, then stores the sum as float.
      const double score = type == PieceType::kUserDefined
                               ? static_cast<double>(static_cast<float>(length) * max_score_) - 0.1
                               : static_cast<double>(scores_[id]);
      const double candidate = score + static_cast<double>(score_so_far);
      BestPath& target = best[end];
      if (target.starts_at == -1 || candidate > static_cast<double>(target.score)) {
        target.score = static_cast<float>(candidate);
        target.starts_at = static_cast<int32_t>(starts_at);
        target.id = id;
      }
      if (length == char_len) has_single_char_piece = true;
    });
    if (!has_single_char_piece) {
      // No piece covers this character alone: an unknown-character edge (float arithmetic here).
      BestPath& target = best[starts_at + char_len];
      const float candidate = unk_score + score_so_far;
      if (target.starts_at == -1 || candidate > target.score) {
        target.score = candidate;
        target.starts_at = static_cast<int32_t>(starts_at);
        target.id = unk_id_;
      }
    }
    starts_at += char_len;
  }

  for (size_t end = size; end > 0;) {
    const BestPath& node = best[end];
    spans->push_back(
        Span{static_cast<uint32_t>(node.starts_at), static_cast<uint32_t>(end), node.id});
    end = static_cast<size_t>(node.starts_at);
  }
  std::reverse(spans->begin(), spans->end());
}

}  // namespace transerve
