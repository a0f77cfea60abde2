// The golden parity of tests/model/translator on the GPU, float32: the same ids as the PyTorch
// reference for greedy and beam search, scores within 1e-4; float16 weights: logits within 2e-2
// and the float32 ids on at least 95% of sentences. Skips with the probe's reason where there is
// no usable GPU (and runs on the host emulator in CI: emulator/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <span>
#include <thread>

#include "model/ops/cuda_plugin.h"
#include "model/translator/translator.h"
#include "tests/model/translator/fixtures.h"
#include "tests/testing/paths.h"

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
  // The source ids of every case.
  std::vector<std::vector<int32_t>> Sources() const {
    std::vector<std::vector<int32_t>> sources;
    for (const auto& c : expected_["cases"]) {
      sources.push_back(c["source_ids"].get<std::vector<int32_t>>());
    }
    return sources;
  }
  nlohmann::json expected_;
  std::unique_ptr<Translator> translator_;
};

// The largest |got - want| over a logits row, relative to the row's largest |want|: logits near
// zero carry the rounding of the whole row, not a relative one of their own.
float RelativeDeviation(std::span<const float> got, std::span<const float> want) {
  float max_abs = 0.0f, deviation = 0.0f;
  for (size_t v = 0; v < want.size(); ++v) {
    max_abs = std::max(max_abs, std::fabs(want[v]));
    deviation = std::max(deviation, std::fabs(got[v] - want[v]));
  }
  return deviation / max_abs;
}

// A float32 tensor's values (here: the one logits row of a single sentence's step).
std::span<const float> Floats(const Tensor& t) { return {t.f32(), static_cast<size_t>(t.numel())}; }

TEST_P(CudaParityTest, GreedyAndBeamIdsMatchTheReferenceInOneBatch) {
  const std::vector<std::vector<int32_t>> sources = Sources();
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

// Two models served side by side each have a scheduler thread calling the backend: its calls
// take turns (one stream, shared scratch), so both keep the reference's ids.
TEST_P(CudaParityTest, TwoTranslatorsOnTwoThreadsKeepTheReferenceIds) {
  const std::vector<std::vector<int32_t>> sources = Sources();
  DecodingOptions o;
  o.max_length = expected_["max_length"].get<int>();
  auto other = Translator::Create(
      {.model_dir = testing::FixtureModelDir(GetParam()), .device = "cuda", .dtype = "float32"});
  ASSERT_TRUE(other.ok()) << other.status();
  std::vector<absl::StatusOr<std::vector<SearchResult>>> results(2);
  std::thread second([&] { results[1] = (*other)->TranslateIds(sources, o); });
  results[0] = translator_->TranslateIds(sources, o);
  second.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t i = 0; i < sources.size(); ++i) {
      EXPECT_EQ((*r)[i].hypotheses.at(0).ids,
                expected_["cases"][i]["greedy"]["ids"].get<std::vector<int32_t>>())
          << "case " << i;
    }
  }
}

// float16 weights on the fixtures, whose random weights and cases (chosen robust to 1e-5 of
// noise, not to half precision's 5e-4) make them a bug detector here, not the precision bar: the
// reference's logits, along the greedy path until half precision picks another token, within
// 1e-1 of the row's scale (a wrong layout or a stale buffer is off by far more; losing the
// biases puts them 1.2 to 1.4 away); the figures are reported. Where the paths part is
// borderline, the worst figure jumps with the last bit of a sum (4.9e-2 on tiny-marian since
// the bias went into the GEMM, 3.9e-2 before): the bound leaves room for a GPU's order. The
// issue's bars (2e-2, 95% of ids) are held on the trained model below, whose decisions have real
// margins.
TEST_P(CudaParityTest, Float16WeightsKeepTheFirstStepsLogitsClose) {
  auto t = Translator::Create(
      {.model_dir = testing::FixtureModelDir(GetParam()), .device = "cuda", .dtype = "float16"});
  ASSERT_TRUE(t.ok()) << t.status();
  Translator& f16 = **t;
  EXPECT_EQ(f16.dtype(), "float16");
  ASSERT_TRUE(expected_.contains("logits"));
  float worst = 0.0f;
  for (const auto& entry : expected_["logits"]) {
    const std::vector<std::vector<int32_t>> sources{
        expected_["cases"][entry["case"].get<size_t>()]["source_ids"].get<std::vector<int32_t>>()};
    auto encoded = f16.Encode(sources);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    DecodingOptions o;
    o.max_length = expected_["max_length"].get<int>();
    auto search = f16.StartSearch((*encoded)[0], o);
    SentenceSearch* active[] = {search.get()};
    const int32_t pad = f16.special_tokens().pad;
    // The greedy choice: the best token but pad (the reference's choice of each step is its own
    // logits' best).
    auto best = [pad](std::span<const float> row) {
      size_t b = pad == 0 ? 1 : 0;
      for (size_t v = 0; v < row.size(); ++v) {
        if (static_cast<int32_t>(v) != pad && row[v] > row[b]) b = v;
      }
      return b;
    };
    for (const auto& step : entry["steps"]) {
      ASSERT_TRUE(f16.Step(active).ok());
      const Tensor logits = f16.CopyLastLogits();
      const auto want = step.get<std::vector<float>>();
      ASSERT_EQ(logits.dim(1), static_cast<int64_t>(want.size()));
      const float deviation = RelativeDeviation(Floats(logits), want);
      worst = std::max(worst, deviation);
      ASSERT_LE(deviation, 1e-1f);
      // Once half precision picks another token, later steps see another prefix.
      if (best(Floats(logits)) != best(want) || search->done()) break;
    }
  }
  const std::vector<std::vector<int32_t>> sources = Sources();
  DecodingOptions o;
  o.max_length = expected_["max_length"].get<int>();
  auto results = f16.TranslateIds(sources, o);
  ASSERT_TRUE(results.ok()) << results.status();
  size_t same = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    same += (*results)[i].hypotheses.at(0).ids ==
            expected_["cases"][i]["greedy"]["ids"].get<std::vector<int32_t>>();
  }
  std::cout << GetParam() << " float16: first-step logits within " << worst
            << " of the row's scale; greedy ids as the reference's on " << same << " of "
            << sources.size() << " sentences\n";
}

// The bars for float16 (logits within 2e-2, the reference's ids on at least 95% of
// sentences), on the shipped trained model and real sentences: float16 weights on the device
// against float32 on the CPU, whose ids equal the PyTorch reference's on the whole test split
// (models/en-de-small/README.md).
TEST(CudaFloat16, TheShippedModelKeepsTheFloat32LogitsAndIdsOnAtLeast95PercentOfSentences) {
  if (CudaApi() == nullptr) GTEST_SKIP() << ProbeCuda().detail;
  const std::string model = testing::SourceDir() + "/models/en-de-small";
  std::ifstream in(testing::SourceDir() + "/tests/model/cuda/float16_sentences.en");
  std::vector<std::string> sentences;
  for (std::string line; std::getline(in, line);) sentences.push_back(line);
  ASSERT_GE(sentences.size(), 40u);
  auto cpu = Translator::Create({.model_dir = model, .device = "cpu", .dtype = "float32"});
  auto gpu = Translator::Create({.model_dir = model, .device = "cuda", .dtype = "float16"});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  DecodingOptions o = (*cpu)->DefaultOptions();
  o.beam_size = 1;  // greedy: every decision is a margin of its own (and the emulator is slow)
  o.num_hypotheses = 1;

  // Logits of the first steps of a few sentences, both following the float32 choices.
  float worst = 0.0f;
  for (size_t i = 0; i < 5; ++i) {
    auto ids = (*cpu)->Tokenize(sentences[i], /*truncate=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status();
    const std::vector<std::vector<int32_t>> sources{*ids};
    auto cpu_kv = (*cpu)->Encode(sources);
    auto gpu_kv = (*gpu)->Encode(sources);
    ASSERT_TRUE(cpu_kv.ok() && gpu_kv.ok());
    auto cpu_search = (*cpu)->StartSearch((*cpu_kv)[0], o);
    auto gpu_search = (*gpu)->StartSearch((*gpu_kv)[0], o);
    SentenceSearch* cpu_active[] = {cpu_search.get()};
    SentenceSearch* gpu_active[] = {gpu_search.get()};
    for (int step = 0; step < 3 && !cpu_search->done() && !gpu_search->done(); ++step) {
      ASSERT_TRUE((*cpu)->Step(cpu_active).ok());
      ASSERT_TRUE((*gpu)->Step(gpu_active).ok());
      const float deviation =
          RelativeDeviation(Floats((*gpu)->CopyLastLogits()), Floats((*cpu)->CopyLastLogits()));
      worst = std::max(worst, deviation);
      EXPECT_LE(deviation, 2e-2f) << sentences[i] << ", step " << step;
    }
  }

  auto want = (*cpu)->Translate(sentences, o);
  auto got = (*gpu)->Translate(sentences, o);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  size_t same = 0;
  for (size_t i = 0; i < sentences.size(); ++i) {
    same += (*got)[i].best.ids == (*want)[i].best.ids;
    EXPECT_FALSE((*got)[i].best.text.empty()) << sentences[i];
  }
  std::cout << "en-de-small float16 on the device: first-step logits within " << worst
            << " of the row's scale; " << same << " of " << sentences.size()
            << " sentences with the float32 greedy ids\n";
  EXPECT_GE(static_cast<double>(same), 0.95 * static_cast<double>(sentences.size()));
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
