// The golden parity of tests/model/translator on the GPU, float32: the same ids as the PyTorch
// reference for greedy and beam search, scores within 1e-4. Skips with the probe's reason
// where there is no usable GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "model/ops/cuda_plugin.h"
#include "model/translator/translator.h"
#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

class CudaParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (CudaApi() == nullptr) GTEST_SKIP() << ProbeCuda().detail;
    expected_ = testing::LoadExpected(GetParam());
    auto t = Translator::Create(
        {.model_dir = testing::FixtureModelDir(GetParam()), .device = "cuda", .dtype = "float32"});
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_EQ((*t)->device(), Device::kCuda);
    translator_ = *std::move(t);
  }
  nlohmann::json expected_;
  std::unique_ptr<Translator> translator_;
};

TEST_P(CudaParityTest, GreedyAndBeamIdsMatchTheReferenceInOneBatch) {
  std::vector<std::vector<int32_t>> sources;
  for (const auto& c : expected_["cases"]) {
    sources.push_back(c["source_ids"].get<std::vector<int32_t>>());
  }
  for (const char* search : {"greedy", "beam"}) {
    DecodingOptions o;
    o.beam_size = std::string(search) == "greedy" ? 1 : expected_.value("beam_size", 4);
    o.max_length = expected_["max_length"].get<int>();
    o.length_penalty = expected_.value("length_penalty", 1.0f);
    auto results = translator_->TranslateIds(sources, o);
    ASSERT_TRUE(results.ok()) << results.status();
    int same = 0;
    for (size_t i = 0; i < sources.size(); ++i) {
      const auto& want = expected_["cases"][i][search];
      const Hypothesis& got = (*results)[i].hypotheses.at(0);
      same += got.ids == want["ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(got.ids, want["ids"].get<std::vector<int32_t>>()) << search << " case " << i;
      EXPECT_NEAR(got.score, want["score"].get<float>(),
                  1e-4f + 1e-4f * std::fabs(want["score"].get<float>()))
          << search << " case " << i;
    }
    std::cout << GetParam() << " " << search << ": " << same << " of " << sources.size()
              << " sentences with the reference's ids (float32 on the GPU)\n";
  }
}

// float16 weights: the bar is the reference's ids on at least 95% of sentences.
TEST_P(CudaParityTest, Float16WeightsKeepTheReferenceIdsOnAtLeast95Percent) {
  auto t = Translator::Create(
      {.model_dir = testing::FixtureModelDir(GetParam()), .device = "cuda", .dtype = "float16"});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->dtype(), "float16");
  std::vector<std::vector<int32_t>> sources;
  for (const auto& c : expected_["cases"]) {
    sources.push_back(c["source_ids"].get<std::vector<int32_t>>());
  }
  DecodingOptions o;
  o.beam_size = 1;
  o.max_length = expected_["max_length"].get<int>();
  auto results = (*t)->TranslateIds(sources, o);
  ASSERT_TRUE(results.ok()) << results.status();
  size_t same = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    same += (*results)[i].hypotheses.at(0).ids ==
            expected_["cases"][i]["greedy"]["ids"].get<std::vector<int32_t>>();
  }
  std::cout << GetParam() << " float16 greedy: " << same << " of " << sources.size()
            << " sentences with the reference's ids\n";
  EXPECT_GE(static_cast<double>(same), 0.95 * static_cast<double>(sources.size()));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaParityTest,
                         ::testing::Values(std::string(testing::kFixtureNames[0]),
                                           std::string(testing::kFixtureNames[1])),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace transerve
