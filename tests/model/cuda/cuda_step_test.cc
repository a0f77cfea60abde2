// A decoder step's budget on the device, as the issue sets it: once the caches are warm, a step
// makes no device allocation and waits for the host exactly once, to read the chosen tokens; and
// the number of operations it queues does not grow with its rows (at GPU speeds a step is bound
// by launches). Counted by the CUDA emulator (emulator/runtime.cc); skips elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <vector>

#include "model/ops/cuda_plugin.h"
#include "model/translator/translator.h"
#include "tests/model/cuda/emulator_hooks.h"
#include "tests/model/translator/fixtures.h"
#include "tests/model/translator/started_searches.h"

namespace transerve {
namespace {

// What the device has been asked to do so far.
struct DeviceCounts {
  uint64_t host_waits = 0;
  uint64_t allocations = 0;
  uint64_t operations = 0;  // kernels, copies, memsets and GEMMs, on every stream
};

class CudaStepBudget : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (CudaApi() == nullptr) GTEST_SKIP() << ProbeCuda().detail;
    if (!device_.available()) {
      GTEST_SKIP() << "counting device calls needs the CUDA emulator (tests/model/cuda/emulator)";
    }
    const std::string fixture = testing::kFixtureNames[0];
    const nlohmann::json expected = testing::LoadExpected(fixture);
    // Sentences of different lengths, so rows leave the batch at different steps.
    for (int i = 0; i < 6; ++i) {
      sources_.push_back(expected["cases"][i]["source_ids"].get<std::vector<int32_t>>());
    }
    options_.max_length = expected["max_length"].get<int>();
    options_.beam_size = GetParam();
    auto t = Translator::Create({.model_dir = testing::FixtureModelDir(fixture), .device = "cuda"});
    ASSERT_TRUE(t.ok()) << t.status();
    translator_ = *std::move(t);
  }

  DeviceCounts Counts() const {
    return {device_.host_waits(), device_.allocations(), device_.operations()};
  }

  // Encodes the sources and steps every search to its end, recording each step's counts.
  void Translate(std::vector<DeviceCounts>* steps) {
    auto started = testing::StartSearches(*translator_, sources_, options_);
    ASSERT_TRUE(started.ok()) << started.status();
    while (!started->active.empty()) {
      const DeviceCounts before = Counts();
      const absl::Status step = translator_->Step(started->active);
      const DeviceCounts after = Counts();
      ASSERT_TRUE(step.ok()) << step;
      steps->push_back({after.host_waits - before.host_waits,
                        after.allocations - before.allocations,
                        after.operations - before.operations});
      started->DropFinished();
    }
  }

  const testing::DeviceCounters device_;
  std::vector<std::vector<int32_t>> sources_;
  DecodingOptions options_;
  std::unique_ptr<Translator> translator_;
};

TEST_P(CudaStepBudget, AWarmStepAllocatesNothingAndWaitsOnlyForTheChosenTokens) {
  std::vector<DeviceCounts> cold, warm;
  ASSERT_NO_FATAL_FAILURE(Translate(&cold));  // fills the allocator's cache and the KV pool
  const DeviceCounts before = Counts();
  ASSERT_NO_FATAL_FAILURE(Translate(&warm));
  const DeviceCounts after = Counts();
  ASSERT_GT(warm.size(), 1u);

  EXPECT_EQ(after.allocations - before.allocations, 0u)
      << "the second pass over the same sentences allocated device memory";
  uint64_t fewest = UINT64_MAX, most = 0;
  for (size_t i = 0; i < warm.size(); ++i) {
    EXPECT_EQ(warm[i].allocations, 0u) << "step " << i;
    EXPECT_EQ(warm[i].host_waits, 1u) << "step " << i;
    fewest = std::min(fewest, warm[i].operations);
    most = std::max(most, warm[i].operations);
  }
  // A step's work does not grow with its rows: beams un-sharing their blocks add one kernel per
  // layer, not copies per row.
  const int64_t layers = translator_->model().config.decoder_layers;
  EXPECT_LE(most, fewest + layers) << "operations per step vary with the rows";
  // For the design notes (docs/cuda.md): how much work a step queues on this model.
  std::cout << "beam " << GetParam() << ", " << layers << " decoder layers: " << warm.size()
            << " steps, " << fewest << " to " << most << " device operations per step\n";
}

INSTANTIATE_TEST_SUITE_P(Searches, CudaStepBudget, ::testing::Values(1, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 1 ? std::string("Greedy")
                                                  : "Beam" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace transerve
