// bfloat16 and int8 models on the fixtures: the first steps' logits within stated bounds of the
// PyTorch reference's float32 logits, the chosen tokens where the reference's margin is larger
// than the bound, every instruction-set level giving the same ids and scores, the dtype as the
// translator reports it, and the memory the weights take.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "model/ops/ops.h"
#include "model/translator/translator.h"
#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

using testing::FixtureModelDir;
using testing::LoadExpected;

// The largest RMS error of a step's logits against the reference, as a fraction of the
// logits' RMS. bfloat16 rounds each weight and activation by up to 2^-9 of itself, int8 by up to
// 1/254 of its row's largest value (several times more for a typical value). The fixtures are
// random models, far more sensitive than trained ones: their attention is nearly one-hot, so a
// small change can move it to another source position. Measured here (the test prints it):
// bfloat16 0.27 and int8 0.63 at worst, on the 199-token and hostile-text cases; the bounds
// leave a margin above that. Trained models are judged on real text instead: BENCHMARKS.md,
// "Low precision on the CPU", has the shipped model's test-split BLEU and equal-id shares.
double LogitBound(const std::string& dtype) { return dtype == "int8" ? 0.9 : 0.4; }

class LowPrecisionTranslatorTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  const std::string& fixture() const { return std::get<0>(GetParam()); }
  const std::string& dtype() const { return std::get<1>(GetParam()); }
  void TearDown() override { ASSERT_TRUE(ops::SetCpuIsa(ops::SupportedCpuIsas().back()).ok()); }
};

TEST_P(LowPrecisionTranslatorTest, FirstStepsLogitsWithinTheBoundOfTheReference) {
  const nlohmann::json expected = LoadExpected(fixture());
  auto t = Translator::Create(
      {.model_dir = FixtureModelDir(fixture()), .device = "cpu", .dtype = dtype()});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->dtype(), dtype());
  double worst = 0;
  for (const auto& entry : expected["logits"]) {
    const auto& c = expected["cases"][entry["case"].get<size_t>()];
    const std::vector<std::vector<int32_t>> sources{c["source_ids"].get<std::vector<int32_t>>()};
    auto encoded = (*t)->Encode(sources);
    ASSERT_TRUE(encoded.ok());
    DecodingOptions o;
    o.max_length = expected["max_length"].get<int>();
    auto search = (*t)->StartSearch((*encoded)[0], o);
    SentenceSearch* active[] = {search.get()};
    for (const auto& step : entry["steps"]) {
      ASSERT_FALSE(search->done());
      ASSERT_TRUE((*t)->Step(active).ok());
      const Tensor logits = (*t)->CopyLastLogits();
      const auto want = step.get<std::vector<float>>();
      ASSERT_EQ(logits.dim(1), static_cast<int64_t>(want.size()));
      double max_abs = 0, error_squares = 0, want_squares = 0;
      for (size_t v = 0; v < want.size(); ++v) {
        max_abs = std::max(max_abs, double(std::fabs(want[v])));
        error_squares += std::pow(logits.f32()[v] - want[v], 2);
        want_squares += std::pow(want[v], 2);
      }
      worst = std::max(worst, std::sqrt(error_squares / want_squares));
      // The reference's best token stays best wherever it leads by a third of the bound.
      std::vector<float> sorted(want);
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
      const auto best = std::max_element(want.begin(), want.end()) - want.begin();
      const float* got = logits.f32();
      const auto chosen = std::max_element(got, got + want.size()) - got;
      if (sorted[0] - sorted[1] > LogitBound(dtype()) / 3 * max_abs) {
        EXPECT_EQ(chosen, best);
      }
      // The next step's reference logits follow the reference's token: stop where ours differs.
      if (chosen != best) break;
    }
  }
  std::printf("%s %s: largest RMS logit error %.4f of the row's RMS (bound %.2f)\n",
              fixture().c_str(), dtype().c_str(), worst, LogitBound(dtype()));
  EXPECT_LE(worst, LogitBound(dtype()));
}

TEST_P(LowPrecisionTranslatorTest, EveryInstructionSetLevelGivesTheSameTranslations) {
  const nlohmann::json expected = LoadExpected(fixture());
  auto t = Translator::Create(
      {.model_dir = FixtureModelDir(fixture()), .device = "cpu", .dtype = dtype()});
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<std::vector<int32_t>> sources;
  for (const auto& c : expected["cases"])
    sources.push_back(c["source_ids"].get<std::vector<int32_t>>());
  DecodingOptions o;
  o.beam_size = 4;
  o.max_length = expected["max_length"].get<int>();
  std::vector<std::vector<Hypothesis>> first;
  for (const std::string& level : ops::SupportedCpuIsas()) {
    ASSERT_TRUE(ops::SetCpuIsa(level).ok());
    auto r = (*t)->TranslateIds(sources, o);
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t i = 0; i < r->size(); ++i) {
      const Hypothesis& h = (*r)[i].hypotheses[0];
      if (first.size() <= i) {
        first.push_back({h});
        continue;
      }
      EXPECT_EQ(h.ids, first[i][0].ids) << level << " sentence " << i;
      EXPECT_EQ(h.score, first[i][0].score) << level << " sentence " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    FixturesAndDtypes, LowPrecisionTranslatorTest,
    ::testing::Combine(::testing::Values(std::string(testing::kFixtureNames[0]),
                                         std::string(testing::kFixtureNames[1])),
                       ::testing::Values(std::string("bfloat16"), std::string("int8"))),
    [](const auto& info) {
      std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param);
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(LowPrecisionTranslator, WeightsTakeAQuarterToHalfOfFloat32sMemory) {
  const std::string dir = FixtureModelDir(testing::kFixtureNames[0]);
  int64_t bytes[3];
  const char* dtypes[] = {"float32", "bfloat16", "int8"};
  for (int i = 0; i < 3; ++i) {
    auto t = Translator::Create({.model_dir = dir, .device = "cpu", .dtype = dtypes[i]});
    ASSERT_TRUE(t.ok()) << t.status();
    bytes[i] = (*t)->WeightBytes();
  }
  std::printf("weights: float32 %lld, bfloat16 %lld, int8 %lld bytes\n",
              static_cast<long long>(bytes[0]), static_cast<long long>(bytes[1]),
              static_cast<long long>(bytes[2]));
  // float32 keeps the shared table and a packed copy of it; the others keep only the packed
  // one, in 2 bytes or 1 byte (+ a scale per row) a weight.
  EXPECT_LE(bytes[1], bytes[0] * 0.5);
  EXPECT_LE(bytes[2], bytes[0] * 0.3);
}

TEST(LowPrecisionTranslator, RefusesDtypesOutsideTheirDevice) {
  const std::string dir = FixtureModelDir(testing::kFixtureNames[0]);
  for (const char* bad : {"float16", "int4", "fp8", ""}) {
    auto t = Translator::Create({.model_dir = dir, .device = "cpu", .dtype = bad});
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace transerve
