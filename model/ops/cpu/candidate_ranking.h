// How a step's candidates are ranked on the CPU, shared by the two ways there to get them
// (top_k_cpu.cc from stored logits, packed_top_k_cpu.cc straight from the output projection),
// so that both give the same bits: the k best tokens kept in a small sorted list, and the
// softmax normaliser gathered over fixed chunks of the vocabulary, then combined in order. Both
// files are compiled with transerve_ops' one set of flags (model/ops/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "model/ops/cpu/vector_math.h"

namespace transerve::ops::cpu {

// The vocabulary is read in chunks of this many tokens (a multiple of the packed panels' 32):
// the normaliser's sums are made per chunk, so a row's result depends on nothing but the row.
inline constexpr int32_t kRankingChunk = 256;

// The k best tokens offered so far, best first, for tokens offered in increasing id order (or
// lists of such, in the order of their ids): one enters only by beating the k-th best, so ties
// keep the lower id.
class BestTokens {
 public:
  using Entry = std::pair<float, int32_t>;  // (logit, token)

  void Reset(int32_t k) {
    k_ = k;
    best_.clear();
    best_.reserve(static_cast<size_t>(k) + 1);
    threshold_ = -std::numeric_limits<float>::infinity();
  }
  bool full() const { return static_cast<int32_t>(best_.size()) == k_; }
  // What a logit must exceed to enter once the list is full.
  float threshold() const { return threshold_; }
  std::span<const Entry> entries() const { return best_; }

  void Offer(float value, int32_t token) {
    if (k_ == 0 || (full() && !(value > threshold_))) return;
    auto pos = std::find_if(best_.begin(), best_.end(),
                            [value](const Entry& e) { return value > e.first; });
    best_.insert(pos, {value, token});
    if (static_cast<int32_t>(best_.size()) > k_) best_.pop_back();
    if (full()) threshold_ = best_.back().first;
  }

  // Offers x[0..n) as tokens first, first + 1, ..., all but `pad` and `banned`. Blocks that
  // cannot enter are skipped with one vectorised max.
  void OfferRange(const float* x, int32_t first, int32_t n, int32_t pad, int32_t banned) {
    constexpr int32_t kBlock = 32;
    int32_t i = 0;
    for (; i < n; i += kBlock) {
      const int32_t end = std::min(n, i + kBlock);
      if (full() && !(MaxOf(x + i, end - i) > threshold_)) continue;
      for (int32_t j = i; j < end; ++j) {
        const int32_t token = first + j;
        if (token != pad && token != banned) Offer(x[j], token);
      }
    }
  }

 private:
  int32_t k_ = 0;
  std::vector<Entry> best_;
  float threshold_ = -std::numeric_limits<float>::infinity();
};

// One chunk's share of the normaliser: its largest allowed logit and Σ exp(logit - max) over
// its allowed tokens (max = -inf and sum 0 when it has none).
struct ChunkSoftmax {
  float max = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
};

// Over x[0..n), tokens first.., leaving out `pad` and `banned`. The excluded tokens are skipped
// by running the (vectorised) loops over the ranges between them; subtracting their terms
// afterwards would cancel catastrophically when pad dominates.
inline ChunkSoftmax SoftmaxOfChunk(const float* x, int32_t first, int32_t n, int32_t pad,
                                   int32_t banned) {
  int32_t excluded[3] = {pad - first, banned - first, n};
  for (int e = 0; e < 2; ++e) {
    if (excluded[e] < 0 || excluded[e] >= n) excluded[e] = n;
  }
  std::sort(excluded, excluded + 3);
  ChunkSoftmax c;
  for (int32_t begin = 0, e = 0; e < 3; begin = std::max(begin, excluded[e] + 1), ++e) {
    if (excluded[e] > begin) c.max = std::max(c.max, MaxOf(x + begin, excluded[e] - begin));
  }
  if (c.max == -std::numeric_limits<float>::infinity()) return c;
  for (int32_t begin = 0, e = 0; e < 3; begin = std::max(begin, excluded[e] + 1), ++e) {
    if (excluded[e] > begin) c.sum += SumExp(x + begin, excluded[e] - begin, c.max);
  }
  return c;
}

// One chunk of a row ranked: its share of the normaliser, and its tokens offered to `best`
// unless its largest allowed logit cannot enter.
inline ChunkSoftmax RankChunk(const float* x, int32_t first, int32_t n, int32_t pad, int32_t banned,
                              BestTokens* best) {
  const ChunkSoftmax c = SoftmaxOfChunk(x, first, n, pad, banned);
  if (!best->full() || c.max > best->threshold()) best->OfferRange(x, first, n, pad, banned);
  return c;
}

// log Σ exp over a row's allowed tokens from its chunks' shares, in chunk order: an allowed
// token's log-probability is its logit minus this.
inline float LogNormaliser(std::span<const ChunkSoftmax> chunks) {
  float max_value = -std::numeric_limits<float>::infinity();
  for (const ChunkSoftmax& c : chunks) max_value = std::max(max_value, c.max);
  float sum = 0.0f;
  for (const ChunkSoftmax& c : chunks) {
    if (c.sum > 0.0f) sum += c.sum * std::exp(c.max - max_value);
  }
  return max_value + std::log(sum);
}

}  // namespace transerve::ops::cpu
