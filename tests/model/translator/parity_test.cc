// Golden parity with the PyTorch reference (tools/reference): source ids, greedy and beam-4
// ids exactly, scores, raw logits of the first steps within 1e-4 relative, encoder output,
// alignments.
#include <gtest/gtest.h>

#include <cmath>

#include "model/layers/encoder.h"
#include "model/translator/translator.h"
#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

using testing::FixtureModelDir;
using testing::LoadExpected;

class ParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    expected_ = LoadExpected(GetParam());
    ASSERT_FALSE(expected_.is_discarded());
    // float32: parity with the PyTorch reference's float32 (auto may pick int8).
    auto t = Translator::Create(
        {.model_dir = FixtureModelDir(GetParam()), .device = "cpu", .dtype = "float32"});
    ASSERT_TRUE(t.ok()) << t.status();
    translator_ = *std::move(t);
  }

  DecodingOptions Options(int beam) const {
    DecodingOptions o;
    o.beam_size = beam;
    o.max_length = expected_["max_length"].get<int>();
    o.length_penalty = expected_.value("length_penalty", 1.0f);
    o.num_hypotheses = beam;
    return o;
  }

  std::vector<int32_t> SourceIds(const nlohmann::json& c) const {
    return c["source_ids"].get<std::vector<int32_t>>();
  }

  nlohmann::json expected_;
  std::unique_ptr<Translator> translator_;
};

void ExpectScoreNear(float got, float want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-4f + 1e-4f * std::fabs(want)) << what;
}

TEST_P(ParityTest, TokenizerGivesTheReferenceSourceIds) {
  ASSERT_GE(expected_["cases"].size(), 50u);
  for (const auto& c : expected_["cases"]) {
    auto ids = translator_->Tokenize(c["text"].get<std::string>(), /*truncate=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, SourceIds(c)) << "text: " << c["text"];
  }
}

TEST_P(ParityTest, GreedyIdsAndScoresMatchTheReference) {
  for (size_t i = 0; i < expected_["cases"].size(); ++i) {
    const auto& c = expected_["cases"][i];
    const std::vector<std::vector<int32_t>> sources{SourceIds(c)};
    auto results = translator_->TranslateIds(sources, Options(1));
    ASSERT_TRUE(results.ok()) << results.status();
    const Hypothesis& h = (*results)[0].hypotheses.at(0);
    EXPECT_EQ(h.ids, c["greedy"]["ids"].get<std::vector<int32_t>>()) << "case " << i;
    ExpectScoreNear(h.score, c["greedy"]["score"].get<float>(),
                    "greedy score, case " + std::to_string(i));
  }
}

TEST_P(ParityTest, BeamSearchIdsScoresAndNBestMatchTheReference) {
  const int beam = expected_.value("beam_size", 4);
  for (size_t i = 0; i < expected_["cases"].size(); ++i) {
    const auto& c = expected_["cases"][i];
    const std::vector<std::vector<int32_t>> sources{SourceIds(c)};
    auto results = translator_->TranslateIds(sources, Options(beam));
    ASSERT_TRUE(results.ok()) << results.status();
    const auto& hyps = (*results)[0].hypotheses;
    ASSERT_FALSE(hyps.empty());
    EXPECT_EQ(hyps[0].ids, c["beam"]["ids"].get<std::vector<int32_t>>()) << "case " << i;
    ExpectScoreNear(hyps[0].score, c["beam"]["score"].get<float>(),
                    "beam score, case " + std::to_string(i));
    const auto& nbest = c["beam"]["nbest"];
    ASSERT_EQ(hyps.size(), nbest.size()) << "case " << i;
    for (size_t k = 0; k < nbest.size(); ++k) {
      EXPECT_EQ(hyps[k].ids, nbest[k]["ids"].get<std::vector<int32_t>>())
          << "case " << i << " hypothesis " << k;
      ExpectScoreNear(hyps[k].score, nbest[k]["score"].get<float>(),
                      "n-best score, case " + std::to_string(i));
    }
  }
}

// The reference computes alignments by teacher-forcing the generated ids through its full
// (non-incremental) decoder; ours come from the incremental steps that generated them, in a
// batch with every other alignment case, so this also checks rows stay with their sentence.
TEST_P(ParityTest, AlignmentsMatchTheReference) {
  ASSERT_TRUE(expected_.contains("alignments"));
  const auto& records = expected_["alignments"];
  ASSERT_GE(records.size(), 10u);
  std::vector<std::vector<int32_t>> sources;
  for (const auto& a : records)
    sources.push_back(SourceIds(expected_["cases"][a["case"].get<int>()]));
  for (const char* search : {"greedy", "beam"}) {
    DecodingOptions options =
        Options(std::string(search) == "greedy" ? 1 : expected_.value("beam_size", 4));
    options.num_hypotheses = 1;
    options.return_alignment = true;
    auto results = translator_->TranslateIds(sources, options);
    ASSERT_TRUE(results.ok()) << results.status();
    for (size_t k = 0; k < records.size(); ++k) {
      const int c = records[k]["case"].get<int>();
      const Hypothesis& h = (*results)[k].hypotheses.at(0);
      ASSERT_EQ(h.ids, expected_["cases"][c][search]["ids"].get<std::vector<int32_t>>())
          << search << " case " << c;
      const auto want = records[k][search].get<std::vector<std::vector<float>>>();
      ASSERT_EQ(want.size(), h.ids.size());
      ASSERT_EQ(h.alignment.size(), h.ids.size() * sources[k].size()) << search << " case " << c;
      for (size_t t = 0; t < want.size(); ++t) {
        ASSERT_EQ(want[t].size(), sources[k].size());
        for (size_t j = 0; j < want[t].size(); ++j) {
          EXPECT_NEAR(h.alignment[t * sources[k].size() + j], want[t][j], 1e-4f)
              << search << " case " << c << " target " << t << " source " << j;
        }
      }
    }
  }
}

TEST_P(ParityTest, MinAndMaxLengthConstraintsMatchTheReference) {
  ASSERT_TRUE(expected_.contains("length_constraint_cases"));
  for (const auto& lc : expected_["length_constraint_cases"]) {
    const auto& c = expected_["cases"][lc["case"].get<size_t>()];
    const std::vector<std::vector<int32_t>> sources{SourceIds(c)};
    for (int beam : {1, expected_.value("beam_size", 4)}) {
      DecodingOptions o = Options(beam);
      o.min_length = lc["min_length"].get<int>();
      o.max_length = lc["max_length"].get<int>();
      auto results = translator_->TranslateIds(sources, o);
      ASSERT_TRUE(results.ok()) << results.status();
      const auto& want = lc[beam == 1 ? "greedy" : "beam"];
      const Hypothesis& h = (*results)[0].hypotheses.at(0);
      EXPECT_EQ(h.ids, want["ids"].get<std::vector<int32_t>>())
          << "case " << lc["case"] << " min " << o.min_length << " max " << o.max_length << " beam "
          << beam;
      ExpectScoreNear(h.score, want["score"].get<float>(), "length-constrained score");
    }
  }
}

TEST_P(ParityTest, RawLogitsOfTheFirstStepsMatchWithinRelativeTolerance) {
  ASSERT_TRUE(expected_.contains("logits"));
  for (const auto& entry : expected_["logits"]) {
    const auto& c = expected_["cases"][entry["case"].get<size_t>()];
    const std::vector<std::vector<int32_t>> sources{SourceIds(c)};
    auto encoded = translator_->Encode(sources);
    ASSERT_TRUE(encoded.ok());
    DecodingOptions o = Options(1);
    auto search = translator_->StartSearch((*encoded)[0], o);
    SentenceSearch* active[] = {search.get()};
    for (const auto& step : entry["steps"]) {
      ASSERT_FALSE(search->done());
      ASSERT_TRUE(translator_->Step(active).ok());
      const Tensor logits = translator_->CopyLastLogits();
      const auto want = step.get<std::vector<float>>();
      ASSERT_EQ(logits.dim(1), static_cast<int64_t>(want.size()));
      float max_abs = 0;
      for (float w : want) max_abs = std::max(max_abs, std::fabs(w));
      for (size_t v = 0; v < want.size(); ++v) {
        // Relative to the row's scale (its largest |logit|): logits near zero carry the
        // absolute rounding of the whole row, not a relative one of their own.
        ASSERT_NEAR(logits.f32()[v], want[v], 1e-4f * max_abs) << "token " << v;
      }
    }
  }
}

TEST_P(ParityTest, EncoderOutputMatchesTheReference) {
  ASSERT_TRUE(expected_.contains("encoder_output"));
  const MarianModel& model = translator_->model();
  for (const auto& entry : expected_["encoder_output"]) {
    const auto ids = SourceIds(expected_["cases"][entry["case"].get<size_t>()]);
    const std::vector<int32_t> offsets{0, static_cast<int32_t>(ids.size())};
    Workspace ws;
    Tensor out;
    EncodePacked(model.transformer, model.weights, ids, offsets, &ws, &out);
    const auto rows = entry["values"].get<std::vector<std::vector<float>>>();
    ASSERT_EQ(out.dim(0), static_cast<int64_t>(rows.size()));
    for (size_t t = 0; t < rows.size(); ++t)
      for (size_t j = 0; j < rows[t].size(); ++j)
        ASSERT_NEAR(out.f32()[t * out.dim(1) + j], rows[t][j], 1e-4f * (1 + std::fabs(rows[t][j])));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ParityTest,
                         ::testing::Values(std::string(testing::kFixtureNames[0]),
                                           std::string(testing::kFixtureNames[1])),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace transerve
