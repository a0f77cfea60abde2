// The candidates of each logits row on the CPU, from stored logits: one pass for the k best,
// one for the normaliser (candidate_ranking.h), neither materialising the log-softmax row;
// rows spread over the engine's threads.
#include <vector>

#include "model/core/thread_pool.h"
#include "model/ops/cpu/candidate_ranking.h"
#include "model/ops/cpu/cpu_ops.h"

namespace transerve::ops::cpu {
namespace {

// The k best allowed tokens of one row, best first (ties: lower id); none for k = 0.
void RowTopK(const float* x, int32_t n, int32_t pad, int32_t banned, int32_t k,
             std::vector<TokenScore>* out) {
  out->clear();
  if (k == 0) return;
  thread_local BestTokens best;
  thread_local std::vector<ChunkSoftmax> chunks;
  best.Reset(k);
  chunks.clear();
  for (int32_t first = 0; first < n; first += kRankingChunk) {
    const int32_t count = std::min(kRankingChunk, n - first);
    chunks.push_back(RankChunk(x + first, first, count, pad, banned, &best));
  }
  const float normaliser = LogNormaliser(chunks);
  for (const auto& [value, token] : best.entries()) out->push_back({token, value - normaliser});
}

}  // namespace

void TopK(const Tensor& logits, std::span<const int32_t> k, std::span<const uint8_t> ban_eos,
          int32_t pad, int32_t eos, std::vector<std::vector<TokenScore>>* candidates) {
  const int32_t vocab = static_cast<int32_t>(logits.dim(1));
  const float* x = logits.f32();
  ThreadPool::Engine().ParallelFor(static_cast<int64_t>(k.size()), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      // A banned EOS is excluded like a second pad; pad itself stands for "nothing more".
      RowTopK(x + r * vocab, vocab, pad, ban_eos[r] != 0 ? eos : pad, k[r], &(*candidates)[r]);
    }
  });
}

}  // namespace transerve::ops::cpu
