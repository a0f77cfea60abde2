// CUDA primitives against the CPU backend on random data (never zeros). They run where a
// usable GPU is present and skip with the probe's reason elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/ops/cuda_plugin.h"
#include "model/ops/kv_cache.h"
#include "model/ops/ops.h"
#include "tests/testing/random.h"

namespace transerve {
namespace {

using testing::RandomTensor;

class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaApi() == nullptr) GTEST_SKIP() << ProbeCuda().detail;
  }
};

void ExpectClose(const Tensor& gpu, const Tensor& cpu, float tolerance) {
  const Tensor back = ops::CopyTo(gpu, Device::kCpu);
  ASSERT_EQ(back.shape(), cpu.shape());
  const std::vector<float> g = back.ToFloatVector(), c = cpu.ToFloatVector();
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_NEAR(g[i], c[i], tolerance * (1.0f + std::fabs(c[i]))) << "element " << i;
  }
}

TEST_F(CudaOpsTest, CopiesRoundTrip) {
  std::mt19937 rng(31);
  const Tensor t = RandomTensor({37, 129}, rng);
  const Tensor on_gpu = ops::CopyTo(t, Device::kCuda);
  EXPECT_EQ(on_gpu.device(), Device::kCuda);
  EXPECT_EQ(ops::CopyTo(on_gpu, Device::kCpu).ToFloatVector(), t.ToFloatVector());
}

TEST_F(CudaOpsTest, LinearMatchesTheCpuForEveryActivation) {
  std::mt19937 rng(32);
  for (Activation a : {Activation::kIdentity, Activation::kSwish, Activation::kRelu,
                       Activation::kGelu, Activation::kGeluTanh}) {
    for (int64_t m : {1, 7, 64}) {
      const Tensor x = RandomTensor({m, 96}, rng), w = RandomTensor({80, 96}, rng, 0.2f),
                   b = RandomTensor({80}, rng);
      Tensor cpu, gpu;
      ops::Linear(x, w, b, a, &cpu);
      ops::Linear(ops::CopyTo(x, Device::kCuda), ops::CopyTo(w, Device::kCuda),
                  ops::CopyTo(b, Device::kCuda), a, &gpu);
      ExpectClose(gpu, cpu, 1e-4f);
    }
  }
}

TEST_F(CudaOpsTest, LinearWithFloat16WeightsIsCloseToTheCpu) {
  std::mt19937 rng(39);
  const Tensor x = RandomTensor({33, 256}, rng), w = RandomTensor({96, 256}, rng, 0.1f),
               b = RandomTensor({96}, rng), none;
  for (Activation a : {Activation::kIdentity, Activation::kSwish}) {
    for (const Tensor* bias : {&b, &none}) {
      SCOPED_TRACE(::testing::Message() << "activation " << static_cast<int>(a)
                                        << (bias->empty() ? ", no bias" : ", bias"));
      Tensor cpu, gpu;
      ops::Linear(x, w, *bias, a, &cpu);
      const Tensor w16 = ops::ToFloat16Linear(w, *bias);
      EXPECT_EQ(w16.dtype(), DType::kFloat16);
      EXPECT_EQ(w16.dim(1), 256 + TRANSERVE_CUDA_HALF_BIAS_COLUMNS);
      ops::Linear(ops::CopyTo(x, Device::kCuda), w16, none, a, &gpu);
      ExpectClose(gpu, cpu, 2e-2f);  // half-precision inputs, float32 accumulation
    }
  }
}

TEST_F(CudaOpsTest, AFloat16WeightKeepsItsBiasCloseToFloat32) {
  // Small products beside large biases: a bias rounded to half once would be off by up to 2^-12
  // of itself (0.03 here); as two halves it keeps about 22 bits.
  std::mt19937 rng(40);
  const Tensor x = RandomTensor({8, 64}, rng), w = RandomTensor({40, 64}, rng, 1e-3f),
               b = RandomTensor({40}, rng, 100.0f), none;
  Tensor cpu, gpu;
  ops::Linear(x, w, b, Activation::kIdentity, &cpu);
  ops::Linear(ops::CopyTo(x, Device::kCuda), ops::ToFloat16Linear(w, b), none,
              Activation::kIdentity, &gpu);
  ExpectClose(gpu, cpu, 2e-5f);
}

TEST_F(CudaOpsTest, AddLayerNormMatchesTheCpuAndMayWriteInPlace) {
  std::mt19937 rng(33);
  const Tensor x = RandomTensor({19, 512}, rng, 3.0f), r = RandomTensor({19, 512}, rng),
               gamma = RandomTensor({512}, rng), beta = RandomTensor({512}, rng);
  Tensor cpu;
  ops::AddLayerNorm(x, r, gamma, beta, 1e-5f, &cpu);
  Tensor gx = ops::CopyTo(x, Device::kCuda);
  ops::AddLayerNorm(gx, ops::CopyTo(r, Device::kCuda), ops::CopyTo(gamma, Device::kCuda),
                    ops::CopyTo(beta, Device::kCuda), 1e-5f, &gx);
  ExpectClose(gx, cpu, 1e-4f);
}

TEST_F(CudaOpsTest, PreNormLayerNormsMatchTheCpuAndKeepTheSum) {
  std::mt19937 rng(34);
  const Tensor x = RandomTensor({13, 384}, rng, 3.0f), r = RandomTensor({13, 384}, rng),
               gamma = RandomTensor({384}, rng), beta = RandomTensor({384}, rng);
  const Tensor g = ops::CopyTo(gamma, Device::kCuda), b = ops::CopyTo(beta, Device::kCuda);
  Tensor cpu_normed, gpu_normed;
  ops::LayerNorm(x, gamma, beta, 1e-6f, &cpu_normed);
  ops::LayerNorm(ops::CopyTo(x, Device::kCuda), g, b, 1e-6f, &gpu_normed);
  ExpectClose(gpu_normed, cpu_normed, 1e-4f);

  Tensor cpu_stream = Tensor::FromFloats(x.shape(), x.ToFloatVector());
  ops::AddToLayerNorm(&cpu_stream, r, gamma, beta, 1e-5f, &cpu_normed);
  Tensor gpu_stream = ops::CopyTo(x, Device::kCuda);
  ops::AddToLayerNorm(&gpu_stream, ops::CopyTo(r, Device::kCuda), g, b, 1e-5f, &gpu_normed);
  ExpectClose(gpu_normed, cpu_normed, 1e-4f);
  ExpectClose(gpu_stream, cpu_stream, 1e-6f);
  // The stack's last norm writes its output over the stream.
  ops::AddToLayerNorm(&gpu_stream, ops::CopyTo(r, Device::kCuda), g, b, 1e-5f, &gpu_stream);
  ops::AddToLayerNorm(&cpu_stream, r, gamma, beta, 1e-5f, &cpu_stream);
  ExpectClose(gpu_stream, cpu_stream, 1e-4f);
}

TEST_F(CudaOpsTest, PackedSelfAttentionMatchesTheCpuForEveryHeadSize) {
  std::mt19937 rng(35);
  const std::vector<int32_t> offsets{0, 5, 6, 23, 40};
  // Head sizes below a warp, of whole warps (the kernel splits positions over thread groups),
  // between, and above the block's threads.
  for (const auto& [heads, d] :
       std::vector<std::pair<int, int>>{{4, 64}, {2, 128}, {2, 192}, {1, 160}, {1, 320}}) {
    const Tensor qkv = RandomTensor({40, 3 * d}, rng, 2.0f);
    Tensor cpu, gpu;
    ops::PackedSelfAttention(qkv, offsets, heads, &cpu);
    ops::PackedSelfAttention(ops::CopyTo(qkv, Device::kCuda), offsets, heads, &gpu);
    SCOPED_TRACE(::testing::Message() << heads << " heads of " << d / heads);
    ExpectClose(gpu, cpu, 1e-4f);
  }
}

TEST_F(CudaOpsTest, CrossAttentionAndItsHeadMeansMatchTheCpu) {
  std::mt19937 rng(36);
  const int heads = 8, d = 64, layers = 2, layer = 1;
  const CrossKv a{RandomTensor({9, layers * 2 * d}, rng, 2.0f)};
  const CrossKv b{RandomTensor({30, layers * 2 * d}, rng, 2.0f)};
  const CrossKv ga{ops::CopyTo(a.kv, Device::kCuda)}, gb{ops::CopyTo(b.kv, Device::kCuda)};
  const Tensor q = RandomTensor({3, d}, rng, 2.0f);
  const CrossKv* cpu_sources[] = {&a, &b, &a};
  const CrossKv* gpu_sources[] = {&ga, &gb, &ga};
  for (const int mean_heads : {0, 1, 3}) {  // every head, CTranslate2's default, a prefix
    SCOPED_TRACE(::testing::Message() << "mean_heads " << mean_heads);
    Tensor cpu, gpu, cpu_mean, gpu_mean;
    ops::CrossAttention(q, layer, cpu_sources, heads, &cpu, &cpu_mean, mean_heads);
    ops::CrossAttention(ops::CopyTo(q, Device::kCuda), layer, gpu_sources, heads, &gpu, &gpu_mean,
                        mean_heads);
    ExpectClose(gpu, cpu, 1e-4f);
    ExpectClose(gpu_mean, cpu_mean, 1e-5f);
  }
}

TEST_F(CudaOpsTest, CachedSelfAttentionOverDeviceBlocksMatchesTheCpu) {
  std::mt19937 rng(37);
  const int steps = 2 * kKvBlockPositions + 5;  // three blocks
  // Heads of 16 and of 40 dimensions: 40 leaves some of the kernel's threads without a group.
  for (const auto& [heads, d] : std::vector<std::pair<int, int>>{{4, 64}, {2, 80}}) {
    SCOPED_TRACE(::testing::Message() << heads << " heads of " << d / heads);
    KvBlockPool cpu_pool(d, Device::kCpu), gpu_pool(d, Device::kCuda);
    SequenceKvCache cpu_cache(&cpu_pool, 1), gpu_cache(&gpu_pool, 1);
    SequenceKvCache* cpu_caches[] = {&cpu_cache};
    SequenceKvCache* gpu_caches[] = {&gpu_cache};
    for (int t = 0; t < steps; ++t) {
      const Tensor qkv = RandomTensor({1, 3 * d}, rng, 2.0f);
      Tensor cpu, gpu;
      ASSERT_TRUE(ops::CachedSelfAttention(qkv, 0, cpu_caches, heads, &cpu));
      ASSERT_TRUE(
          ops::CachedSelfAttention(ops::CopyTo(qkv, Device::kCuda), 0, gpu_caches, heads, &gpu));
      cpu_cache.CommitAppend();
      gpu_cache.CommitAppend();
      ExpectClose(gpu, cpu, 1e-4f);
    }
    EXPECT_EQ(gpu_pool.blocks_in_use(), 3);
  }
}

TEST_F(CudaOpsTest, ForksUnsharingTheirBlocksInOneStepMatchTheCpu) {
  std::mt19937 rng(38);
  const int heads = 4, d = 32, layers = 2;
  const int forks = 100;  // more copies than one launch carries
  KvBlockPool cpu_pool(d, Device::kCpu), gpu_pool(d, Device::kCuda);
  std::vector<std::unique_ptr<SequenceKvCache>> cpu_caches, gpu_caches;
  cpu_caches.push_back(std::make_unique<SequenceKvCache>(&cpu_pool, layers));
  gpu_caches.push_back(std::make_unique<SequenceKvCache>(&gpu_pool, layers));
  // Steps of the rows in `caches` (all of them once the forks exist), compared after each.
  auto step = [&](size_t rows) {
    std::vector<SequenceKvCache*> cpu_rows, gpu_rows;
    for (size_t r = 0; r < rows; ++r) {
      cpu_rows.push_back(cpu_caches[r].get());
      gpu_rows.push_back(gpu_caches[r].get());
    }
    for (int layer = 0; layer < layers; ++layer) {
      const Tensor qkv = RandomTensor({static_cast<int64_t>(rows), 3 * d}, rng, 2.0f);
      Tensor cpu, gpu;
      ASSERT_TRUE(ops::CachedSelfAttention(qkv, layer, cpu_rows, heads, &cpu));
      ASSERT_TRUE(
          ops::CachedSelfAttention(ops::CopyTo(qkv, Device::kCuda), layer, gpu_rows, heads, &gpu));
      ExpectClose(gpu, cpu, 1e-4f);
    }
    for (size_t r = 0; r < rows; ++r) {
      cpu_rows[r]->CommitAppend();
      gpu_rows[r]->CommitAppend();
    }
  };
  for (int t = 0; t < kKvBlockPositions + 5; ++t) ASSERT_NO_FATAL_FAILURE(step(1));
  for (int f = 0; f < forks; ++f) {
    cpu_caches.push_back(cpu_caches[0]->Fork());
    gpu_caches.push_back(gpu_caches[0]->Fork());
  }
  // The first step after the forks un-shares the partial block of every fork and layer; the
  // second finds the copies in place.
  for (int t = 0; t < 2; ++t) ASSERT_NO_FATAL_FAILURE(step(cpu_caches.size()));
  EXPECT_EQ(gpu_pool.blocks_in_use(), layers * (1 + forks + 1));
  EXPECT_EQ(gpu_pool.blocks_in_use(), cpu_pool.blocks_in_use());
}

TEST_F(CudaOpsTest, EmbedTokensMatchesTheCpu) {
  std::mt19937 rng(38);
  const Tensor table = RandomTensor({300, 64}, rng), positions = RandomTensor({50, 64}, rng);
  std::uniform_int_distribution<int32_t> id(0, 299), pos(0, 49);
  std::vector<int32_t> ids(23), at(23);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = id(rng);
    at[i] = pos(rng);
  }
  Tensor cpu, gpu;
  ops::EmbedTokens(table, ids, at, 8.0f, positions, &cpu);
  ops::EmbedTokens(ops::CopyTo(table, Device::kCuda), ids, at, 8.0f,
                   ops::CopyTo(positions, Device::kCuda), &gpu);
  ExpectClose(gpu, cpu, 1e-6f);
}

TEST_F(CudaOpsTest, TopKCandidatesOnTheDeviceMatchTheCpu) {
  std::mt19937 rng(40);
  const int rows = 8, vocab = 5003;
  Tensor logits = RandomTensor({rows, vocab}, rng, 4.0f);
  // Ties go to the lower id: across the kernel's threads (7, 9) and within one (7 + 256).
  logits.f32()[1 * vocab + 7] = logits.f32()[1 * vocab + 9] = 50.0f;
  logits.f32()[1 * vocab + 7 + 256] = 50.0f;
  const int32_t pad = vocab - 1, eos = 0;
  logits.f32()[2 * vocab + pad] = 99.0f;  // pad is never a candidate
  logits.f32()[3 * vocab + eos] = 99.0f;  // banned below
  // k up to 16 is found in one pass over the row, larger k in k passes; the last row is forced.
  const std::vector<ops::CandidateRule> rules{
      {1, false, false}, {3, false, false},  {8, false, false},  {8, true, false},
      {3, true, false},  {16, false, false}, {24, false, false}, {5, false, true}};
  std::vector<std::vector<TokenScore>> gpu, cpu;
  ops::TopKCandidates(ops::CopyTo(logits, Device::kCuda), rules, pad, eos, &gpu);
  ops::TopKCandidates(logits, rules, pad, eos, &cpu);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (int r = 0; r < rows; ++r) {
    ASSERT_EQ(gpu[r].size(), cpu[r].size()) << "row " << r;
    for (size_t i = 0; i < cpu[r].size(); ++i) {
      EXPECT_EQ(gpu[r][i].token, cpu[r][i].token) << "row " << r << " rank " << i;
      EXPECT_NEAR(gpu[r][i].log_prob, cpu[r][i].log_prob, 1e-4f) << "row " << r;
    }
  }
  ASSERT_EQ(gpu[7].size(), 1u);
  EXPECT_EQ(gpu[7][0].token, eos);
  EXPECT_EQ(gpu[7][0].log_prob, 0.0f);
}

TEST(CudaOps, WithoutABackendADeviceTensorIsAClearError) {
  if (CudaApi() != nullptr) GTEST_SKIP() << "a GPU is present: the error path is not reachable";
  std::mt19937 rng(34);
  try {
    ops::CopyTo(RandomTensor({2, 2}, rng), Device::kCuda);
    FAIL() << "copying to a missing GPU should throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("no usable CUDA backend"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace transerve
