// Attention primitives against a naive padded implementation with additive finfo.min masks
// (the reference's formulation), plus the seed checks on attention weights.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "model/ops/ops.h"
#include "tests/testing/random.h"

namespace transerve {
namespace {

using testing::RandomFloats;
using testing::RandomTensor;

constexpr float kMaskValue = std::numeric_limits<float>::lowest();

// softmax(q kᵀ / sqrt(hd) + mask) v for one head; mask(i) says whether key i is visible.
template <typename Visible>
std::vector<float> NaiveAttend(const float* q, const float* keys, const float* values, int n,
                               int64_t stride, int hd, Visible visible) {
  std::vector<double> s(n);
  double mx = -INFINITY;
  for (int i = 0; i < n; ++i) {
    double dot = 0;
    for (int j = 0; j < hd; ++j) dot += double(q[j]) * keys[i * stride + j];
    s[i] = dot / std::sqrt(double(hd)) + (visible(i) ? 0.0 : double(kMaskValue));
    mx = std::max(mx, s[i]);
  }
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - mx));
  std::vector<float> out(hd, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < hd; ++j) out[j] += static_cast<float>(s[i] / sum * values[i * stride + j]);
  return out;
}

TEST(PackedSelfAttention, EqualsPaddedAttentionWithKeyPaddingMask) {
  std::mt19937 rng(10);
  const int heads = 4, hd = 8, d = heads * hd;
  const std::vector<int32_t> lengths{5, 1, 9, 3};
  const int padded = 9;
  // Padded [B, S, 3D] input with random values in the padding too: they must not leak in.
  const Tensor padded_qkv = RandomTensor({4 * padded, 3 * d}, rng);
  std::vector<int32_t> offsets{0};
  std::vector<float> packed;
  for (size_t b = 0; b < lengths.size(); ++b) {
    const float* src = padded_qkv.f32() + b * padded * 3 * d;
    packed.insert(packed.end(), src, src + lengths[b] * 3 * d);
    offsets.push_back(offsets.back() + lengths[b]);
  }
  const Tensor qkv = Tensor::FromFloats({offsets.back(), 3 * d}, packed);
  Tensor out;
  ops::PackedSelfAttention(qkv, offsets, heads, &out);
  for (size_t b = 0; b < lengths.size(); ++b) {
    const float* base = padded_qkv.f32() + b * padded * 3 * d;
    for (int t = 0; t < lengths[b]; ++t) {
      for (int h = 0; h < heads; ++h) {
        const auto want =
            NaiveAttend(base + t * 3 * d + h * hd, base + d + h * hd, base + 2 * d + h * hd, padded,
                        3 * d, hd, [&](int i) { return i < lengths[b]; });
        const float* got = out.f32() + (offsets[b] + t) * d + h * hd;
        for (int j = 0; j < hd; ++j) ASSERT_NEAR(got[j], want[j], 1e-5f) << b << " " << t;
      }
    }
  }
}

TEST(CachedSelfAttention, StepByStepEqualsCausalAttentionOverTheWholeSequence) {
  std::mt19937 rng(11);
  const int heads = 2, hd = 16, d = heads * hd, steps = 37;  // crosses two block boundaries
  const Tensor all = RandomTensor({steps, 3 * d}, rng);
  KvBlockPool pool(d, Device::kCpu);
  SequenceKvCache cache(&pool, /*num_layers=*/1);
  SequenceKvCache* caches[] = {&cache};
  Tensor out;
  for (int t = 0; t < steps; ++t) {
    ASSERT_TRUE(ops::CachedSelfAttention(all.Rows(t, t + 1), 0, caches, heads, &out));
    cache.CommitAppend();
    for (int h = 0; h < heads; ++h) {
      const float* base = all.f32();
      const auto want =
          NaiveAttend(base + t * 3 * d + h * hd, base + d + h * hd, base + 2 * d + h * hd, steps,
                      3 * d, hd, [&](int i) { return i <= t; });  // causal mask
      for (int j = 0; j < hd; ++j) ASSERT_NEAR(out.f32()[h * hd + j], want[j], 1e-5f) << t;
    }
  }
  EXPECT_EQ(cache.length(), steps);
  EXPECT_EQ(pool.blocks_in_use(), (steps + kKvBlockPositions - 1) / kKvBlockPositions);
}

TEST(CrossAttention, EachRowAttendsItsOwnSource) {
  std::mt19937 rng(12);
  const int heads = 2, hd = 8, d = heads * hd, layers = 3, layer = 1;
  const CrossKv a{RandomTensor({4, layers * 2 * d}, rng)};
  const CrossKv b{RandomTensor({11, layers * 2 * d}, rng)};
  const Tensor q = RandomTensor({3, d}, rng);
  const CrossKv* sources[] = {&a, &b, &a};
  Tensor out;
  ops::CrossAttention(q, layer, sources, heads, &out);
  for (int r = 0; r < 3; ++r) {
    const CrossKv& s = *sources[r];
    for (int h = 0; h < heads; ++h) {
      const float* keys = s.kv.f32() + layer * 2 * d + h * hd;
      const auto want = NaiveAttend(q.f32() + r * d + h * hd, keys, keys + d, s.length(),
                                    s.kv.dim(1), hd, [](int) { return true; });
      for (int j = 0; j < hd; ++j) ASSERT_NEAR(out.f32()[r * d + h * hd + j], want[j], 1e-5f);
    }
  }
}

// Every head (mean_heads 0), the first head alone (CTranslate2's default alignment head), and the
// first three.
class CrossAttentionHeadMean : public ::testing::TestWithParam<int> {};

TEST_P(CrossAttentionHeadMean, WeightsAreTheFirstHeadsSoftmaxAveraged) {
  std::mt19937 rng(15 + GetParam());
  const int heads = 4, hd = 8, d = heads * hd, layers = 2, layer = 1;
  const int averaged = GetParam() == 0 ? heads : GetParam();
  const CrossKv a{RandomTensor({7, layers * 2 * d}, rng, 2.0f)};
  const CrossKv b{RandomTensor({13, layers * 2 * d}, rng, 2.0f)};
  const Tensor q = RandomTensor({3, d}, rng, 2.0f);
  const CrossKv* sources[] = {&b, &a, &b};
  Tensor out, plain_out, mean;
  ops::CrossAttention(q, layer, sources, heads, &out, &mean, GetParam());
  ops::CrossAttention(q, layer, sources, heads, &plain_out);
  EXPECT_EQ(out.ToFloatVector(), plain_out.ToFloatVector());  // asking changes nothing else
  ASSERT_EQ(mean.dim(0), 3);
  ASSERT_EQ(mean.dim(1), 13);  // the longest source
  for (int r = 0; r < 3; ++r) {
    const CrossKv& s = *sources[r];
    std::vector<double> want(s.length(), 0.0);
    for (int h = 0; h < averaged; ++h) {
      const float* keys = s.kv.f32() + layer * 2 * d + h * hd;
      std::vector<double> e(s.length());
      double mx = -INFINITY, sum = 0;
      for (int i = 0; i < s.length(); ++i) {
        double dot = 0;
        for (int j = 0; j < hd; ++j)
          dot += double(q.f32()[r * d + h * hd + j]) * keys[i * s.kv.dim(1) + j];
        e[i] = dot / std::sqrt(double(hd));
        mx = std::max(mx, e[i]);
      }
      for (double& x : e) sum += (x = std::exp(x - mx));
      for (int i = 0; i < s.length(); ++i) want[i] += e[i] / sum / averaged;
    }
    double row_sum = 0;
    for (int i = 0; i < s.length(); ++i) {
      ASSERT_NEAR(mean.f32()[r * 13 + i], want[i], 1e-6) << r << " " << i;
      row_sum += mean.f32()[r * 13 + i];
    }
    EXPECT_NEAR(row_sum, 1.0, 1e-5);
    for (int i = s.length(); i < 13; ++i) EXPECT_EQ(mean.f32()[r * 13 + i], 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(MeanHeads, CrossAttentionHeadMean, ::testing::Values(0, 1, 3));

// With one-hot value vectors the attention output *is* the weight row, so the seed checks run
// on the real kernel.
TEST(AttentionWeights, RowsSumToOneAndNothingAboveTheCausalDiagonal) {
  std::mt19937 rng(13);
  const int hd = 16, d = hd, steps = 12;
  Tensor qkv = RandomTensor({steps, 3 * d}, rng, 2.0f);
  for (int t = 0; t < steps; ++t) {
    float* v = qkv.f32() + t * 3 * d + 2 * d;
    for (int j = 0; j < hd; ++j) v[j] = j == t ? 1.0f : 0.0f;
  }
  KvBlockPool pool(d, Device::kCpu);
  SequenceKvCache cache(&pool, 1);
  SequenceKvCache* caches[] = {&cache};
  Tensor weights;
  for (int t = 0; t < steps; ++t) {
    ASSERT_TRUE(ops::CachedSelfAttention(qkv.Rows(t, t + 1), 0, caches, 1, &weights));
    cache.CommitAppend();
    float sum = 0;
    for (int j = 0; j < hd; ++j) {
      if (j > t) {
        EXPECT_EQ(weights.f32()[j], 0.0f) << "future position " << j << " at " << t;
      }
      EXPECT_GE(weights.f32()[j], 0.0f);
      sum += weights.f32()[j];
    }
    EXPECT_NEAR(sum, 1.0f, 1e-6f);
  }
}

TEST(PackedSelfAttention, WithoutPositionsIsPermutationEquivariant) {
  std::mt19937 rng(14);
  const int heads = 2, hd = 8, d = heads * hd, n = 7;
  const Tensor qkv = RandomTensor({n, 3 * d}, rng);
  const std::vector<int> perm{3, 0, 6, 1, 5, 2, 4};
  Tensor permuted({n, 3 * d});
  for (int i = 0; i < n; ++i)
    std::copy_n(qkv.f32() + perm[i] * 3 * d, 3 * d, permuted.f32() + i * 3 * d);
  const std::vector<int32_t> offsets{0, n};
  Tensor out, out_permuted;
  ops::PackedSelfAttention(qkv, offsets, heads, &out);
  ops::PackedSelfAttention(permuted, offsets, heads, &out_permuted);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j)
      ASSERT_NEAR(out_permuted.f32()[i * d + j], out.f32()[perm[i] * d + j], 1e-5f);
}

}  // namespace
}  // namespace transerve
