// The CUDA backend plugin: found in the build tree whenever CUDA was built, a device probe that
// explains itself, --device=auto taking the GPU only when one is usable (else the CPU, and
// --device=cuda refused with the reason), and on a GPU machine the plugin's self-test kernel.
// GPU-only checks skip with the reason.
#include "model/ops/cuda_plugin.h"

#include <gtest/gtest.h>

#include "model/ops/ops.h"
#include "model/translator/translator.h"
#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

TEST(CudaPlugin, FoundWhenBuiltAndExplainsItself) {
  const CudaProbe& probe = ProbeCuda();
#ifdef TRANSERVE_HAVE_CUDA
  EXPECT_TRUE(probe.plugin_loaded) << probe.detail;
#else
  EXPECT_FALSE(probe.plugin_loaded);
  EXPECT_NE(probe.detail.find("not found"), std::string::npos) << probe.detail;
#endif
  EXPECT_FALSE(probe.detail.empty());
}

TEST(CudaPlugin, AutoTakesTheGpuWhenUsableElseCudaIsRefusedWithTheReason) {
  const CudaProbe& probe = ProbeCuda();
  const std::string dir = testing::FixtureModelDir(testing::kFixtureNames[0]);
  auto automatic = Translator::Create({.model_dir = dir, .device = "auto"});
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  auto cuda = Translator::Create({.model_dir = dir, .device = "cuda"});
  if (CudaApi() != nullptr) {
    EXPECT_EQ((*automatic)->device(), Device::kCuda);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    EXPECT_EQ((*cuda)->device(), Device::kCuda);
    return;
  }
  EXPECT_EQ((*automatic)->device(), Device::kCpu);
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cuda.status().message().find(probe.detail), std::string::npos) << cuda.status();
}

TEST(CudaPlugin, AutoResolvesToTheGpuOnlyWhenItPassesTheSelfTest) {
  auto automatic = ops::ResolveDevice("auto");
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  std::string message;
  const bool usable = CudaApi() != nullptr && CudaSelfTest(&message);
  EXPECT_EQ(*automatic, usable ? Device::kCuda : Device::kCpu) << message;
  auto cpu = ops::ResolveDevice("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(*cpu, Device::kCpu);
}

TEST(CudaPlugin, AnUnknownDeviceNameIsInvalidArgument) {
  auto device = ops::ResolveDevice("tpu");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(device.status().message().find("'tpu'"), std::string::npos) << device.status();
}

TEST(CudaPlugin, DeviceDescriptionsNameTheBackend) {
  EXPECT_EQ(ops::DeviceDescription(Device::kCpu), ops::BlasDescription());
  EXPECT_EQ(ops::DeviceDescription(Device::kCuda), ProbeCuda().detail);
}

TEST(CudaPlugin, Float16OnTheCpuIsAClearError) {
  const std::string dir = testing::FixtureModelDir(testing::kFixtureNames[0]);
  auto t = Translator::Create({.model_dir = dir, .device = "cpu", .dtype = "float16"});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("GPU"), std::string::npos) << t.status();
  auto bad = Translator::Create({.model_dir = dir, .device = "cpu", .dtype = "int3"});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto f32 = Translator::Create({.model_dir = dir, .device = "cpu", .dtype = "float32"});
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ((*f32)->dtype(), "float32");
}

TEST(CudaPlugin, SelfTestKernelOnTheGpu) {
  const CudaProbe& probe = ProbeCuda();
  if (probe.devices == 0) GTEST_SKIP() << probe.detail;
  std::string message;
  EXPECT_TRUE(CudaSelfTest(&message)) << message;
}

}  // namespace
}  // namespace transerve
