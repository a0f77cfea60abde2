// A lost device (a CUDA "sticky" error, after which every call fails the same way until the
// process restarts) is told apart from an ordinary failure: the primitives throw
// DeviceLostError, the translator answers UNAVAILABLE for good without touching the device
// again, and the scheduler answers every sentence UNAVAILABLE and refuses new ones. Runs on
// the CUDA emulator, which can break its device (transerve_emulator_break_device); skips
// elsewhere.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "model/ops/cuda_plugin.h"
#include "model/ops/ops.h"
#include "model/translator/translator.h"
#include "server/scheduler.h"
#include "tests/model/cuda/emulator_hooks.h"
#include "tests/model/translator/fixtures.h"
#include "tests/model/translator/started_searches.h"
#include "tests/testing/random.h"

namespace transerve {
namespace {

using BreakDeviceFn = void (*)(int);

constexpr int kIllegalAddress = 700;  // cudaErrorIllegalAddress

class CudaDeviceLost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaApi() == nullptr) GTEST_SKIP() << ProbeCuda().detail;
    break_device_ = testing::EmulatorHook<BreakDeviceFn>("transerve_emulator_break_device");
    if (break_device_ == nullptr || !device_.available()) {
      GTEST_SKIP() << "breaking the device needs the CUDA emulator (tests/model/cuda/emulator)";
    }
    const std::string fixture = testing::kFixtureNames[0];
    const nlohmann::json expected = testing::LoadExpected(fixture);
    for (int i = 0; i < 3; ++i) {
      sources_.push_back(expected["cases"][i]["source_ids"].get<std::vector<int32_t>>());
    }
    options_.max_length = expected["max_length"].get<int>();
    auto t = Translator::Create(
        {.model_dir = testing::FixtureModelDir(fixture), .device = "cuda", .dtype = "float32"});
    ASSERT_TRUE(t.ok()) << t.status();
    translator_ = *std::move(t);
  }
  // No GPU mends itself; the emulator's does, so that the next tests in the process can run.
  void TearDown() override {
    if (break_device_ != nullptr) break_device_(0);
  }

  // Everything the device has been asked to do so far: waits and queued operations.
  uint64_t DeviceCalls() const { return device_.host_waits() + device_.operations(); }

  BreakDeviceFn break_device_ = nullptr;
  const testing::DeviceCounters device_;
  std::vector<std::vector<int32_t>> sources_;
  DecodingOptions options_;
  std::unique_ptr<Translator> translator_;
};

TEST_F(CudaDeviceLost, EveryKindOfPrimitiveThrowsDeviceLostError) {
  std::mt19937 rng(41);
  const Tensor x = ops::CopyTo(testing::RandomTensor({4, 32}, rng), Device::kCuda);
  const Tensor w = ops::CopyTo(testing::RandomTensor({16, 32}, rng), Device::kCuda);
  const Tensor b = ops::CopyTo(testing::RandomTensor({16}, rng), Device::kCuda);
  const Tensor gamma = ops::CopyTo(testing::RandomTensor({32}, rng), Device::kCuda);
  Tensor y, norm;
  break_device_(kIllegalAddress);
  // cuBLAS first (its status names no CUDA error), an allocation (not out of memory: no smaller
  // one would succeed; a size no test caches), a kernel, and a copy.
  EXPECT_THROW(ops::Linear(x, w, b, Activation::kIdentity, &y), DeviceLostError);
  EXPECT_THROW(Tensor({(int64_t{1} << 20) + 41}, DType::kFloat32, Device::kCuda), DeviceLostError);
  EXPECT_THROW(ops::AddLayerNorm(x, x, gamma, gamma, 1e-5f, &norm), DeviceLostError);
  try {
    ops::CopyTo(x, Device::kCpu);
    ADD_FAILURE() << "a copy from a broken device succeeded";
  } catch (const DeviceLostError& e) {
    EXPECT_NE(std::string(e.what()).find("illegal memory access"), std::string::npos) << e.what();
  }
}

TEST_F(CudaDeviceLost, TheTranslatorAnswersUnavailableForGoodWithoutTouchingTheDeviceAgain) {
  auto started = testing::StartSearches(*translator_, sources_, options_);
  ASSERT_TRUE(started.ok()) << started.status();
  const std::vector<SentenceSearch*>& active = started->active;
  ASSERT_TRUE(translator_->Step(active).ok());
  EXPECT_TRUE(translator_->device_status().ok());

  break_device_(kIllegalAddress);
  const absl::Status failed = translator_->Step(active);
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable) << failed;
  EXPECT_NE(failed.message().find("illegal memory access"), std::string::npos) << failed;
  EXPECT_EQ(translator_->device_status(), failed);

  // Even once the emulator's device works again, the translator keeps its answer (a real one
  // never does) and leaves the device alone.
  break_device_(0);
  const uint64_t calls = DeviceCalls();
  EXPECT_EQ(translator_->Step(active), failed);
  const auto again = translator_->Encode(sources_);
  EXPECT_EQ(again.status(), failed);
  EXPECT_EQ(DeviceCalls(), calls) << "a lost device was used again";
}

TEST_F(CudaDeviceLost, TheSchedulerAnswersEverySentenceUnavailableAndRefusesNewOnes) {
  Scheduler scheduler(translator_.get(), {});
  absl::Mutex mu;
  std::vector<absl::Status> answers;
  bool broken = false;
  std::vector<SentenceJob> jobs;
  for (const auto& source : sources_) {
    SentenceJob job;
    job.source_ids = source;
    job.options = options_;
    // The device breaks after the first step, with every sentence live.
    job.on_progress = [&](const std::vector<int32_t>&) {
      absl::MutexLock lock(&mu);
      if (!broken) break_device_(kIllegalAddress);
      broken = true;
    };
    job.on_done = [&](absl::StatusOr<SearchResult> result) {
      absl::MutexLock lock(&mu);
      answers.push_back(result.status());
    };
    jobs.push_back(std::move(job));
  }
  ASSERT_TRUE(scheduler.Submit(std::move(jobs)).ok());
  {
    absl::MutexLock lock(&mu);
    auto all_answered = [&] { return answers.size() == sources_.size(); };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_answered), absl::Seconds(60)))
        << answers.size() << " of " << sources_.size() << " answered";
    ASSERT_TRUE(broken) << "every sentence ended before a step reported progress";
    for (const absl::Status& answer : answers) {
      EXPECT_EQ(answer.code(), absl::StatusCode::kUnavailable) << answer;
    }
  }
  const absl::Status failure = scheduler.failure();
  EXPECT_EQ(failure.code(), absl::StatusCode::kUnavailable) << failure;
  SentenceJob late;
  late.source_ids = sources_[0];
  late.options = options_;
  late.on_done = [](absl::StatusOr<SearchResult>) { ADD_FAILURE() << "a refused job answered"; };
  std::vector<SentenceJob> more;
  more.push_back(std::move(late));
  EXPECT_EQ(scheduler.Submit(std::move(more)), failure);
  EXPECT_TRUE(scheduler.Shutdown(absl::ZeroDuration()).ok());
}

}  // namespace
}  // namespace transerve
