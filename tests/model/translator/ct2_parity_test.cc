// Parity of CTranslate2 model directories with the independent reference
// (tools/reference/ct2_reference.py, fixtures in tests/fixtures/ct2/): each spec variant and
// stored dtype, loaded directly (no conversion step), gives the reference's greedy and beam-4 ids
// and scores, alone and in one batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "model/translator/translator.h"
#include "nlohmann/json.hpp"
#include "tests/testing/paths.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(testing::SourceDir()) / "tests" / "fixtures" / "ct2";

std::vector<std::string> Variants() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(kFixtures, error)) {
    if (fs::exists(entry.path() / "expected.json")) names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class Ct2ParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::ifstream in(kFixtures / GetParam() / "expected.json");
    expected_ = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(expected_.is_discarded()) << GetParam();
    auto t = Translator::Create({.model_dir = (kFixtures / GetParam() / "model").string(),
                                 .device = "cpu",
                                 .dtype = "float32",
                                 .with_tokenizer = false});
    ASSERT_TRUE(t.ok()) << t.status();
    translator_ = *std::move(t);
  }

  DecodingOptions Options(int beam, SearchRules stopping) const {
    DecodingOptions o;
    o.beam_size = beam;
    o.max_length = expected_["max_length"].get<int>();
    o.length_penalty = 1.0f;
    o.num_hypotheses = beam;
    o.rules = stopping;
    return o;
  }
  std::vector<std::vector<int32_t>> Sources() const {
    std::vector<std::vector<int32_t>> sources;
    for (const auto& c : expected_["cases"]) {
      sources.push_back(c["source"].get<std::vector<int32_t>>());
    }
    return sources;
  }
  // Each case alone, then all of them in one batch: the reference's ids and scores both times,
  // of the best hypothesis and, where the fixture has them, of the n-best.
  void ExpectReference(int beam, SearchRules stopping, const std::string& key) {
    const auto sources = Sources();
    ASSERT_GE(sources.size(), 4u);
    auto batch = translator_->TranslateIds(sources, Options(beam, stopping));
    ASSERT_TRUE(batch.ok()) << batch.status();
    for (size_t i = 0; i < sources.size(); ++i) {
      const auto& want = expected_["cases"][i][key];
      const std::vector<std::vector<int32_t>> one{sources[i]};
      auto alone = translator_->TranslateIds(one, Options(beam, stopping));
      ASSERT_TRUE(alone.ok()) << alone.status();
      for (const SearchResult* got : {&(*alone)[0], &(*batch)[i]}) {
        ExpectHypothesis(got->hypotheses.at(0), want, key + " case " + std::to_string(i));
        if (!want.contains("nbest")) continue;
        ASSERT_EQ(got->hypotheses.size(), want["nbest"].size()) << key << " case " << i;
        for (size_t n = 0; n < got->hypotheses.size(); ++n) {
          ExpectHypothesis(got->hypotheses[n], want["nbest"][n],
                           key + " case " + std::to_string(i) + " n-best " + std::to_string(n));
        }
      }
    }
  }
  static void ExpectHypothesis(const Hypothesis& h, const nlohmann::json& want,
                               const std::string& what) {
    EXPECT_EQ(h.ids, want["ids"].get<std::vector<int32_t>>()) << what;
    const float score = want["score"].get<float>();
    EXPECT_NEAR(h.score, score, 1e-4f + 1e-4f * std::fabs(score)) << what;
  }

  nlohmann::json expected_;
  std::unique_ptr<Translator> translator_;
};

TEST_P(Ct2ParityTest, GreedyIdsAndScoresMatchTheReference) {
  ExpectReference(1, SearchRules::kHuggingFace, "greedy");
}

TEST_P(Ct2ParityTest, BeamSearchIdsAndScoresMatchTheReference) {
  ExpectReference(4, SearchRules::kHuggingFace, "beam4");
}

TEST_P(Ct2ParityTest, CTranslate2sBeamRulesGiveTheReferencesCTranslate2Search) {
  // The rules a CTranslate2 directory is served with (its defaults below); the fixtures hold
  // cases where they and Hugging Face's pick different hypotheses.
  ExpectReference(4, SearchRules::kCTranslate2, "beam4_ct2");
}

TEST_P(Ct2ParityTest, TheDirectorysDefaultsAreCTranslate2s) {
  // translate_batch's: beam 2, 256 tokens, length penalty 1, min_decoding_length 1 (EOS banned
  // at the first step: 2 in our count), its beam rules.
  const DecodingOptions o = translator_->DefaultOptions();
  EXPECT_EQ(o.beam_size, 2);
  EXPECT_EQ(o.min_length, 2);
  EXPECT_EQ(o.length_penalty, 1.0f);
  EXPECT_EQ(o.rules, SearchRules::kCTranslate2);
}

TEST_P(Ct2ParityTest, TheOutputsAreNotDegenerate) {
  // A fixture whose every output is the same would pass the tests above with a broken engine.
  std::set<std::vector<int32_t>> distinct;
  for (const auto& c : expected_["cases"]) {
    distinct.insert(c["greedy"]["ids"].get<std::vector<int32_t>>());
  }
  EXPECT_GE(distinct.size(), expected_["cases"].size() / 2);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Ct2ParityTest, ::testing::ValuesIn(Variants()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(Ct2Fixtures, EveryVariantIsThere) {
  // The parity suite above is built from the directory: an empty one must fail, not pass.
  const std::vector<std::string> variants = Variants();
  EXPECT_GE(variants.size(), 5u);
}

TEST(Ct2Fixtures, TheTwoBeamRulesDisagreeOnSomeCases) {
  // Else the CTranslate2 rules' test could not tell them from Hugging Face's.
  int differ = 0;
  for (const std::string& variant : Variants()) {
    std::ifstream in(kFixtures / variant / "expected.json");
    const auto expected = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(expected.is_discarded()) << variant;
    for (const auto& c : expected["cases"]) differ += c["beam4"]["ids"] != c["beam4_ct2"]["ids"];
  }
  EXPECT_GE(differ, 5);
}

}  // namespace
}  // namespace transerve
