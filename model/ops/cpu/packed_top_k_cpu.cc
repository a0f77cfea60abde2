// The candidates of each row straight from the output projection with a packed weight: the
// vocabulary is multiplied a chunk of kRankingChunk tokens at a time into a small buffer, and
// each chunk is ranked (candidate_ranking.h) while it is in cache. The [rows, vocab] logits
// (30 MB at 128 rows of 58,101) are never written out and read back.
#include <algorithm>
#include <vector>

#include "model/core/thread_pool.h"
#include "model/ops/cpu/candidate_ranking.h"
#include "model/ops/cpu/cpu_ops.h"
#include "model/ops/cpu/packed_panels.h"

namespace transerve::ops::cpu {
namespace {

constexpr int64_t kWidth = PackedMatrix::kPanelWidth;
static_assert(kRankingChunk % kWidth == 0, "a chunk is whole panels");

// What the threads leave for the merge, kept by the calling thread between steps: each chunk's
// share of every row's normaliser, and each thread's range of chunks' best tokens, filed under
// the range's first chunk.
struct RankingScratch {
  std::vector<ChunkSoftmax> softmax;       // [rows][chunks]
  std::vector<BestTokens::Entry> entries;  // [rows][chunks][k_max]
  std::vector<int32_t> counts;             // [rows][chunks]; 0 where no range starts
};
RankingScratch& CallerScratch() {
  thread_local RankingScratch scratch;
  return scratch;
}

}  // namespace

void PackedProductTopK(const Tensor& x, const PackedMatrix& weight, const Tensor& bias,
                       std::span<const int32_t> k, std::span<const uint8_t> ban_eos, int32_t pad,
                       int32_t eos, std::vector<std::vector<TokenScore>>* candidates) {
  const int64_t m = x.dim(0);
  const int32_t vocab = static_cast<int32_t>(weight.rows);
  const int64_t chunks = (vocab + kRankingChunk - 1) / kRankingChunk;
  const int32_t k_max = m == 0 ? 0 : *std::max_element(k.begin(), k.end());
  const float* b = bias.empty() ? nullptr : bias.f32();
  // A reference, so the threads reach the caller's scratch and not their own.
  RankingScratch& s = CallerScratch();
  s.softmax.assign(static_cast<size_t>(m * chunks), ChunkSoftmax{});
  s.entries.resize(static_cast<size_t>(m * chunks * k_max));
  s.counts.assign(static_cast<size_t>(m * chunks), 0);
  if (m == 0) return;
  const PanelOperands operands = ConvertOperands(x, weight);

  ThreadPool::Engine().ParallelFor(chunks, [&](int64_t first, int64_t last) {
    thread_local std::vector<float> logits;  // [m][kRankingChunk]
    thread_local std::vector<BestTokens> best;
    logits.resize(static_cast<size_t>(m * kRankingChunk));
    best.resize(static_cast<size_t>(m));
    for (int64_t r = 0; r < m; ++r) best[r].Reset(k[r]);
    const int64_t end_panel =
        (std::min(last * kRankingChunk, int64_t{vocab}) + kWidth - 1) / kWidth;
    for (int64_t c = first; c < last; ++c) {
      const int32_t begin = static_cast<int32_t>(c * kRankingChunk);
      const int32_t count = std::min(kRankingChunk, vocab - begin);
      for (int64_t p = begin / kWidth; p * kWidth < begin + count; ++p) {
        MultiplyPanel(operands, weight, b, p, p + 1 < end_panel,
                      logits.data() + (p * kWidth - begin), kRankingChunk);
      }
      for (int64_t r = 0; r < m; ++r) {
        if (k[r] == 0) continue;
        const float* row = logits.data() + r * kRankingChunk;
        const int32_t banned = ban_eos[r] != 0 ? eos : pad;
        s.softmax[r * chunks + c] = RankChunk(row, begin, count, pad, banned, &best[r]);
      }
    }
    for (int64_t r = 0; r < m; ++r) {
      const std::span<const BestTokens::Entry> found = best[r].entries();
      std::copy(found.begin(), found.end(), s.entries.begin() + (r * chunks + first) * k_max);
      s.counts[r * chunks + first] = static_cast<int32_t>(found.size());
    }
  });

  ThreadPool::Engine().ParallelFor(m, [&](int64_t begin, int64_t end) {
    BestTokens merged;
    for (int64_t r = begin; r < end; ++r) {
      std::vector<TokenScore>& out = (*candidates)[r];
      out.clear();
      if (k[r] == 0) continue;
      merged.Reset(k[r]);
      for (int64_t c = 0; c < chunks; ++c) {
        const BestTokens::Entry* e = s.entries.data() + (r * chunks + c) * k_max;
        for (int32_t i = 0; i < s.counts[r * chunks + c]; ++i)
          merged.Offer(e[i].first, e[i].second);
      }
      const float normaliser = LogNormaliser(std::span(s.softmax.data() + r * chunks, chunks));
      for (const auto& [value, token] : merged.entries())
        out.push_back({token, value - normaliser});
    }
  });
}

}  // namespace transerve::ops::cpu
