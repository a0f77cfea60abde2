// CUDA primitives against the CPU backend on random data (never zeros). They run where a
// usable GPU is present and skip with the probe's reason elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/ops/cuda_plugin.h"
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
