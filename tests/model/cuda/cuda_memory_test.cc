// The device running out of memory is an answer, not a crash: the translator returns
// RESOURCE_EXHAUSTED (the scheduler then retries with fewer sentences) and carries on with the
// reference's ids once memory is back. Runs on the CUDA emulator, whose memory a test can
// limit; skips elsewhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "model/ops/cuda_plugin.h"
#include "model/translator/translator.h"
#include "tests/model/cuda/emulator_hooks.h"
#include "tests/model/translator/fixtures.h"
#include "tests/model/translator/started_searches.h"

namespace transerve {
namespace {

using LimitMemoryFn = void (*)(size_t);

class CudaMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaApi() == nullptr) GTEST_SKIP() << ProbeCuda().detail;
    limit_memory_ = testing::EmulatorHook<LimitMemoryFn>("transerve_emulator_limit_memory");
    if (limit_memory_ == nullptr) {
      GTEST_SKIP() << "limiting device memory needs the CUDA emulator (tests/model/cuda/emulator)";
    }
    const std::string fixture = testing::kFixtureNames[0];
    expected_ = testing::LoadExpected(fixture);
    for (const auto& c : expected_["cases"]) {
      sources_.push_back(c["source_ids"].get<std::vector<int32_t>>());
    }
    options_.max_length = expected_["max_length"].get<int>();
    auto t = Translator::Create(
        {.model_dir = testing::FixtureModelDir(fixture), .device = "cuda", .dtype = "float32"});
    ASSERT_TRUE(t.ok()) << t.status();
    translator_ = *std::move(t);
    // Warm up on one sentence, so only the full batch needs more memory than that.
    ASSERT_TRUE(translator_->TranslateIds(std::span(sources_.data(), 1), options_).ok());
  }
  void TearDown() override {
    if (limit_memory_ != nullptr) limit_memory_(SIZE_MAX);
  }
  void ExpectReferenceIds(const std::vector<SearchResult>& results) {
    ASSERT_EQ(results.size(), sources_.size());
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_EQ(results[i].hypotheses.at(0).ids,
                expected_["cases"][i]["greedy"]["ids"].get<std::vector<int32_t>>())
          << "case " << i;
    }
  }

  LimitMemoryFn limit_memory_ = nullptr;
  nlohmann::json expected_;
  std::vector<std::vector<int32_t>> sources_;
  DecodingOptions options_;
  std::unique_ptr<Translator> translator_;
};

TEST_F(CudaMemoryTest, AnEncoderOutOfMemoryIsResourceExhausted) {
  limit_memory_(0);
  auto failed = translator_->Encode(sources_);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted) << failed.status();
  EXPECT_NE(failed.status().message().find("out of memory"), std::string::npos) << failed.status();
  limit_memory_(SIZE_MAX);
  auto results = translator_->TranslateIds(sources_, options_);
  ASSERT_TRUE(results.ok()) << results.status();
  ExpectReferenceIds(*results);
}

TEST_F(CudaMemoryTest, ADecoderStepOutOfMemoryAdvancesNothingAndItsRetryKeepsTheIds) {
  auto started = testing::StartSearches(*translator_, sources_, options_);
  ASSERT_TRUE(started.ok()) << started.status();
  limit_memory_(0);
  const absl::Status failed = translator_->Step(started->active);
  EXPECT_EQ(failed.code(), absl::StatusCode::kResourceExhausted) << failed;
  limit_memory_(SIZE_MAX);
  while (!started->active.empty()) {
    const absl::Status step = translator_->Step(started->active);
    ASSERT_TRUE(step.ok()) << step;
    started->DropFinished();
  }
  std::vector<SearchResult> results;
  for (auto& search : started->searches) results.push_back(search->TakeResult());
  ExpectReferenceIds(results);
}

}  // namespace
}  // namespace transerve
