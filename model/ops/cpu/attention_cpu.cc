// Scaled dot-product attention on the CPU. Every variant (packed encoder self-attention, cached
// decoder self-attention, cross-attention) reduces to one kernel: a single query attending a
// list of key/value segments. Keys outside the segments are never visited, which is exactly the
// additive finfo.min mask of the reference (their softmax weight is 0 there too).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "model/core/thread_pool.h"
#include "model/ops/cpu/cpu_ops.h"
#include "model/ops/cpu/vector_math.h"

namespace transerve::ops::cpu {
namespace {

struct KvSegment {
  const float* keys;    // first key row of this head
  const float* values;  // first value row of this head
  int32_t count;        // positions in the segment
  int64_t stride;       // floats between consecutive positions
};

// out = Σ w[i]·v_i over the positions of the segments, for heads of kChunks·16 floats: the sums
// stay in registers, in two sets (even and odd positions of a segment) so that consecutive
// positions do not wait on each other's additions.
template <int kChunks>
void WeightedValues(const KvSegment* segments, int num_segments, const float* weights, float* out) {
  Floats16 even[kChunks], odd[kChunks];
  for (int c = 0; c < kChunks; ++c) even[c] = odd[c] = Splat(0.0f);
  for (int s = 0; s < num_segments; ++s) {
    const KvSegment& seg = segments[s];
    int32_t p = 0;
    for (; p + 2 <= seg.count; p += 2) {
      const float* v0 = seg.values + p * seg.stride;
      const float* v1 = v0 + seg.stride;
      const Floats16 w0 = Splat(weights[p]), w1 = Splat(weights[p + 1]);
      for (int c = 0; c < kChunks; ++c) {
        even[c] += w0 * LoadFloats16(v0 + c * kLanes);
        odd[c] += w1 * LoadFloats16(v1 + c * kLanes);
      }
    }
    if (p < seg.count) {
      const float* v = seg.values + p * seg.stride;
      const Floats16 w = Splat(weights[p]);
      for (int c = 0; c < kChunks; ++c) even[c] += w * LoadFloats16(v + c * kLanes);
    }
    weights += seg.count;
  }
  for (int c = 0; c < kChunks; ++c) StoreFloats16(out + c * kLanes, even[c] + odd[c]);
}

// The same for any head size.
void WeightedValuesAnySize(const KvSegment* segments, int num_segments, const float* weights,
                           int head_dim, float* __restrict__ out) {
  std::fill(out, out + head_dim, 0.0f);
  for (int s = 0; s < num_segments; ++s) {
    const KvSegment& seg = segments[s];
    for (int32_t p = 0; p < seg.count; ++p) {
      const float w = weights[p];
      const float* __restrict__ v = seg.values + p * seg.stride;
      for (int i = 0; i < head_dim; ++i) out[i] += w * v[i];
    }
    weights += seg.count;
  }
}

// out[0..head_dim) = softmax(q·kᵀ · scale) · v over all positions of the segments.
// `scores` must hold the total number of positions; it is left holding the softmax weights.
void AttendOne(const float* q, const KvSegment* segments, int num_segments, int head_dim,
               float scale, float* out, float* scores) {
  int n = 0;
  float max_score = -std::numeric_limits<float>::infinity();
  for (int s = 0; s < num_segments; ++s) {
    const KvSegment& seg = segments[s];
    for (int32_t p = 0; p < seg.count; ++p) {
      const float score = Dot(q, seg.keys + p * seg.stride, head_dim) * scale;
      scores[n++] = score;
      max_score = std::max(max_score, score);
    }
  }
  // The softmax in 16 lanes (a scalar running sum would be one dependent chain).
  Floats16 lanes = Splat(0.0f);
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Floats16 e = FastExp16(LoadFloats16(scores + i) - max_score);
    StoreFloats16(scores + i, e);
    lanes += e;
  }
  float sum = HorizontalSum(lanes);
  for (; i < n; ++i) {
    scores[i] = FastExp(scores[i] - max_score);
    sum += scores[i];
  }
  const float inv_sum = 1.0f / sum;
  for (i = 0; i < n; ++i) scores[i] *= inv_sum;
  switch (head_dim) {
    case 32:
      return WeightedValues<2>(segments, num_segments, scores, out);
    case 64:
      return WeightedValues<4>(segments, num_segments, scores, out);
    case 128:
      return WeightedValues<8>(segments, num_segments, scores, out);
    default:
      return WeightedValuesAnySize(segments, num_segments, scores, head_dim, out);
  }
}

int HeadDim(int64_t d_model, int heads) {
  if (heads <= 0 || d_model % heads != 0) {
    throw std::invalid_argument("attention: d_model not divisible by the number of heads");
  }
  return static_cast<int>(d_model / heads);
}

}  // namespace

void PackedSelfAttention(const Tensor& qkv, std::span<const int32_t> offsets, int heads,
                         Tensor* out) {
  const int64_t d = qkv.dim(1) / 3;
  const int64_t total = qkv.dim(0);
  const int hd = HeadDim(d, heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  out->Resize({total, d});
  int32_t longest = 0;
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    longest = std::max(longest, offsets[b + 1] - offsets[b]);
  }
  const float* base = qkv.f32();
  const int64_t row = 3 * d;
  float* dst = out->f32();
  ThreadPool::Engine().ParallelFor(
      static_cast<int64_t>(offsets.size()) - 1, [&](int64_t first, int64_t last) {
        std::vector<float> scores(static_cast<size_t>(longest));
        for (int64_t b = first; b < last; ++b) {
          const int32_t begin = offsets[b];
          const int32_t length = offsets[b + 1] - begin;
          for (int h = 0; h < heads; ++h) {
            const KvSegment seg{base + begin * row + d + h * hd,
                                base + begin * row + 2 * d + h * hd, length, row};
            for (int32_t t = 0; t < length; ++t) {
              AttendOne(base + (begin + t) * row + h * hd, &seg, 1, hd, scale,
                        dst + (begin + t) * d + h * hd, scores.data());
            }
          }
        }
      });
}

bool CachedSelfAttention(const Tensor& qkv, int layer, std::span<SequenceKvCache* const> caches,
                         int heads, Tensor* out) {
  const int64_t d = qkv.dim(1) / 3;
  const int64_t rows = qkv.dim(0);
  const int hd = HeadDim(d, heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  out->Resize({rows, d});
  // Appending touches the shared block pool: done in order here, then rows attend in parallel.
  std::vector<float*> key_rows(caches.size()), value_rows(caches.size());
  if (!PrepareAppends(caches, layer, key_rows.data(), value_rows.data())) return false;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = qkv.f32() + r * 3 * d;
    std::memcpy(key_rows[r], row + d, d * sizeof(float));
    std::memcpy(value_rows[r], row + 2 * d, d * sizeof(float));
  }
  ThreadPool::Engine().ParallelFor(rows, [&](int64_t first, int64_t last) {
    std::vector<KvSegment> segments;
    std::vector<float> scores;
    for (int64_t r = first; r < last; ++r) {
      const SequenceKvCache& cache = *caches[r];
      const int32_t positions = cache.length() + 1;  // the step is committed after all layers
      const std::vector<int32_t>& blocks = cache.blocks(layer);
      const KvBlockPool& pool = cache.pool();
      scores.resize(static_cast<size_t>(positions));
      for (int h = 0; h < heads; ++h) {
        segments.clear();
        int32_t remaining = positions;
        for (int32_t block : blocks) {
          const int32_t count = std::min(remaining, kKvBlockPositions);
          segments.push_back({pool.keys(block) + h * hd, pool.values(block) + h * hd, count, d});
          remaining -= count;
          if (remaining == 0) break;
        }
        AttendOne(qkv.f32() + r * 3 * d + h * hd, segments.data(),
                  static_cast<int>(segments.size()), hd, scale, out->f32() + r * d + h * hd,
                  scores.data());
      }
    }
  });
  return true;
}

void CrossAttention(const Tensor& q, int layer, std::span<const CrossKv* const> sources, int heads,
                    Tensor* out, Tensor* head_mean_weights, int mean_heads) {
  const int64_t d = q.dim(1);
  const int64_t rows = q.dim(0);
  const int hd = HeadDim(d, heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  out->Resize({rows, d});
  int64_t longest = 0;
  if (head_mean_weights != nullptr) {
    for (int64_t r = 0; r < rows; ++r) longest = std::max<int64_t>(longest, sources[r]->length());
    head_mean_weights->Resize({rows, longest});
    std::fill(head_mean_weights->f32(), head_mean_weights->f32() + rows * longest, 0.0f);
  }
  const float head_share = 1.0f / static_cast<float>(mean_heads);
  ThreadPool::Engine().ParallelFor(rows, [&](int64_t first, int64_t last) {
    std::vector<float> scores;
    for (int64_t r = first; r < last; ++r) {
      const CrossKv& source = *sources[r];
      const int64_t stride = source.kv.dim(1);
      const float* keys = source.kv.f32() + layer * 2 * d;
      scores.resize(static_cast<size_t>(source.length()));
      for (int h = 0; h < heads; ++h) {
        const KvSegment seg{keys + h * hd, keys + d + h * hd, source.length(), stride};
        AttendOne(q.f32() + r * d + h * hd, &seg, 1, hd, scale, out->f32() + r * d + h * hd,
                  scores.data());
        if (head_mean_weights != nullptr && h < mean_heads) {
          float* mean = head_mean_weights->f32() + r * longest;
          for (int32_t p = 0; p < source.length(); ++p) mean[p] += scores[p] * head_share;
        }
      }
    }
  });
}

void CopyKvBlockPrefixes(KvBlockPool& pool, std::span<const KvBlockCopy> copies) {
  for (const KvBlockCopy& copy : copies) {
    const size_t bytes = static_cast<size_t>(copy.positions) * pool.d_model() * sizeof(float);
    std::memcpy(pool.keys(copy.to), pool.keys(copy.from), bytes);
    std::memcpy(pool.values(copy.to), pool.values(copy.from), bytes);
  }
}

}  // namespace transerve::ops::cpu
