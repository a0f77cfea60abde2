// The candidates of each logits row on the CPU: one pass for the k best, one for the
// normaliser, neither materialising the log-softmax row; rows spread over the engine's threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "model/core/thread_pool.h"
#include "model/ops/cpu/cpu_ops.h"
#include "model/ops/cpu/vector_math.h"

namespace transerve::ops::cpu {
namespace {

// log Σ exp(logit) over the allowed tokens (all but pad and, when `banned` is not pad, it):
// an allowed token's log-probability is its logit minus this.
float LogNormaliser(const float* x, int32_t n, int32_t pad, int32_t banned) {
  // Excluded tokens are skipped by running the (vectorised) loops over the ranges between them;
  // subtracting their terms afterwards would cancel catastrophically when pad dominates.
  int32_t excluded[3] = {pad, banned, n};
  std::sort(excluded, excluded + 2);
  float max_value = -std::numeric_limits<float>::infinity();
  for (int32_t begin = 0, e = 0; e < 3; begin = excluded[e] + 1, ++e) {
    if (excluded[e] > begin) max_value = std::max(max_value, MaxOf(x + begin, excluded[e] - begin));
  }
  float sum = 0.0f;
  for (int32_t begin = 0, e = 0; e < 3; begin = excluded[e] + 1, ++e) {
    if (excluded[e] > begin) sum += SumExp(x + begin, excluded[e] - begin, max_value);
  }
  return max_value + std::log(sum);
}

// The k best allowed tokens of one row, best first (ties: lower id); none for k = 0.
void RowTopK(const float* x, int32_t n, int32_t pad, int32_t banned, int32_t k,
             std::vector<TokenScore>* out) {
  out->clear();
  if (k == 0) return;
  // Keep the k best raw logits in a small array sorted best first. Blocks whose maximum does not
  // beat the k-th best so far are skipped with one vectorised max; the rest go token by token.
  std::vector<std::pair<float, int32_t>> best;
  best.reserve(static_cast<size_t>(k) + 1);
  float threshold = -std::numeric_limits<float>::infinity();
  auto consider = [&](int32_t t, float v) {
    if (static_cast<int32_t>(best.size()) == k && !(v > threshold)) return;
    if (t == pad || t == banned) return;
    auto pos = std::find_if(best.begin(), best.end(), [v](const auto& e) { return v > e.first; });
    best.insert(pos, {v, t});
    if (static_cast<int32_t>(best.size()) > k) best.pop_back();
    if (static_cast<int32_t>(best.size()) == k) threshold = best.back().first;
  };
  constexpr int32_t kBlock = 256;
  int32_t t = 0;
  for (; t + kBlock <= n; t += kBlock) {
    if (static_cast<int32_t>(best.size()) == k && !(MaxOf(x + t, kBlock) > threshold)) continue;
    for (int32_t i = t; i < t + kBlock; ++i) consider(i, x[i]);
  }
  for (; t < n; ++t) consider(t, x[t]);
  const float normaliser = LogNormaliser(x, n, pad, banned);
  for (const auto& [value, token] : best) out->push_back({token, value - normaliser});
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
