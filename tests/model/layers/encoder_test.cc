// Seed checks on the encoder stack: residual shapes, and permutation equivariance when the
// positions carry no information.
#include "model/layers/encoder.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/testing/random.h"

namespace transerve {
namespace {

using testing::RandomTensor;

LinearWeights RandomLinear(int64_t out, int64_t in, std::mt19937& rng) {
  LinearWeights w;
  w.weight = RandomTensor({out, in}, rng, 0.3f);
  w.bias = RandomTensor({out}, rng, 0.1f);
  return w;
}

LayerNormWeights RandomNorm(int64_t d, std::mt19937& rng) {
  Tensor gamma = RandomTensor({d}, rng, 0.2f);
  for (int64_t i = 0; i < d; ++i) gamma.f32()[i] += 1.0f;
  return {gamma, RandomTensor({d}, rng, 0.1f)};
}

struct RandomEncoder {
  TransformerConfig config;
  TransformerWeights weights;
};

RandomEncoder MakeEncoder(std::mt19937& rng, bool informative_positions) {
  RandomEncoder e;
  TransformerConfig& c = e.config;
  c.d_model = 32;
  c.source_vocab_size = 50;
  c.encoder_layers = 2;
  c.encoder_heads = 4;
  c.encoder_ffn_dim = 64;
  c.max_positions = 16;
  c.embedding_scale = std::sqrt(32.0f);
  e.weights.encoder_embedding = RandomTensor({50, 32}, rng);
  if (informative_positions) {
    e.weights.encoder_positions = SinusoidalPositions(16, 32);
  } else {
    // Every position the same random row: attention sees a set, not a sequence.
    const Tensor row = RandomTensor({1, 32}, rng);
    e.weights.encoder_positions = Tensor({16, 32});
    for (int p = 0; p < 16; ++p)
      std::copy_n(row.f32(), 32, e.weights.encoder_positions.f32() + p * 32);
  }
  for (int l = 0; l < 2; ++l) {
    e.weights.encoder.push_back({RandomLinear(96, 32, rng), RandomLinear(32, 32, rng),
                                 RandomNorm(32, rng), RandomLinear(64, 32, rng),
                                 RandomLinear(32, 64, rng), RandomNorm(32, rng)});
  }
  return e;
}

TEST(Encoder, OutputHasTheInputsShapeThroughEveryResidual) {
  std::mt19937 rng(40);
  const RandomEncoder e = MakeEncoder(rng, true);
  const std::vector<int32_t> ids{3, 14, 15, 9, 26, 5, 35};
  const std::vector<int32_t> offsets{0, 4, 7};
  Workspace ws;
  Tensor out;
  EncodePacked(e.config, e.weights, ids, offsets, &ws, &out);
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{7, 32}));
  for (int64_t i = 0; i < out.numel(); ++i) ASSERT_TRUE(std::isfinite(out.f32()[i]));
}

TEST(Encoder, WithoutPositionsIsPermutationEquivariant) {
  std::mt19937 rng(41);
  const RandomEncoder e = MakeEncoder(rng, false);
  const std::vector<int32_t> ids{3, 14, 15, 9, 26, 5, 35, 8};
  const std::vector<int> perm{5, 2, 7, 0, 3, 1, 6, 4};
  std::vector<int32_t> permuted(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) permuted[i] = ids[perm[i]];
  const std::vector<int32_t> offsets{0, 8};
  Workspace ws;
  Tensor out, out_permuted;
  EncodePacked(e.config, e.weights, ids, offsets, &ws, &out);
  EncodePacked(e.config, e.weights, permuted, offsets, &ws, &out_permuted);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int j = 0; j < 32; ++j)
      ASSERT_NEAR(out_permuted.f32()[i * 32 + j], out.f32()[perm[i] * 32 + j], 1e-4f);
}

TEST(Encoder, SinusoidalPositionsBreakTheSymmetry) {
  std::mt19937 rng(42);
  const RandomEncoder e = MakeEncoder(rng, true);
  const std::vector<int32_t> ids{7, 7, 7};  // same token: only positions tell them apart
  const std::vector<int32_t> offsets{0, 3};
  Workspace ws;
  Tensor out;
  EncodePacked(e.config, e.weights, ids, offsets, &ws, &out);
  float diff = 0;
  for (int j = 0; j < 32; ++j) diff += std::fabs(out.f32()[j] - out.f32()[32 + j]);
  EXPECT_GT(diff, 1e-3f);
}

}  // namespace
}  // namespace transerve
