// The two search rules (DecodingOptions::rules), driven step by step with scripted
// candidates: a search where Hugging Face's rule goes on because a running beam could still win,
// and CTranslate2's stops as soon as `beams` hypotheses have finished.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "model/decoding/sentence_search.h"
#include "model/ops/kv_cache.h"

namespace transerve {
namespace {

constexpr int32_t kPad = 0, kEos = 1, kA = 5, kB = 6, kC = 7, kA2 = 8, kB2 = 9, kX = 10, kY = 11;

// Each live hypothesis's next candidates (best first), keyed by its last token (the decoder
// start token for the first step): every token below appears at one place in the tree only.
using Script = std::map<int32_t, std::vector<TokenScore>>;

// Beam 2: [EOS] finishes first (score -1.0). At step 2 [A EOS] finishes (-1.25 / 2 = -0.625)
// while [A A2] runs at -1.3 (-0.65 normalised, better than the worst finished -1.0). At step 3
// [A A2 EOS] finishes at -1.31 / 3 = -0.437 and [B B2 EOS] at -1.37 / 3 = -0.457.
Script TheScript() {
  return {
      {kPad, {{kEos, -1.0f}, {kA, -1.1f}, {kB, -1.2f}, {kC, -5.0f}}},
      {kA, {{kEos, -0.15f}, {kA2, -0.2f}, {kX, -6.0f}, {kY, -7.0f}}},
      {kB, {{kB2, -0.15f}, {kEos, -3.0f}, {kX, -6.0f}, {kY, -7.0f}}},
      {kA2, {{kEos, -0.01f}, {kX, -5.0f}, {kY, -7.0f}, {kC, -8.0f}}},
      {kB2, {{kEos, -0.02f}, {kY, -6.0f}, {kX, -7.0f}, {kC, -8.0f}}},
  };
}

struct SearchRun {
  SearchResult result;
  int steps = 0;
};

// Drives one search over the script until it is done (the caches are only moved and forked:
// no decoder runs). A step whose rule forces EOS gets EOS alone, as ops::TopKCandidates gives it.
SearchRun Drive(const DecodingOptions& options, const Script& script = TheScript()) {
  KvBlockPool pool(/*d_model=*/8, Device::kCpu);
  const SpecialTokens special{.pad = kPad, .eos = kEos, .decoder_start = kPad};
  auto search = MakeSentenceSearch(options, special, /*source=*/nullptr, &pool,
                                   /*decoder_layers=*/1);
  SearchRun run;
  while (!search->done() && run.steps < 10) {
    std::vector<DecoderRow> rows;
    search->CollectRows(&rows);
    std::vector<std::vector<TokenScore>> top;
    const ops::CandidateRule rule = search->NextCandidates();
    for (const DecoderRow& row : rows) {
      if (rule.forced()) {
        top.push_back({{rule.force_eos ? kEos : rule.forced_token, 0.0f}});
        continue;
      }
      const auto it = script.find(row.token);
      EXPECT_NE(it, script.end()) << "no candidates scripted after token " << row.token;
      top.push_back(it == script.end() ? std::vector<TokenScore>{} : it->second);
    }
    search->Advance(top, /*alignment=*/nullptr, /*first_row=*/0);
    ++run.steps;
  }
  run.result = search->TakeResult();
  return run;
}

DecodingOptions BeamTwo(SearchRules rules, float length_penalty, int num_hypotheses) {
  DecodingOptions o;
  o.beam_size = 2;
  o.max_length = 10;
  o.length_penalty = length_penalty;
  o.num_hypotheses = num_hypotheses;
  o.rules = rules;
  return o;
}

TEST(SearchRulesTest, HuggingFaceGoesOnWhileARunningBeamCouldStillWin) {
  const SearchRun run = Drive(BeamTwo(SearchRules::kHuggingFace, 1.0f, 2));
  EXPECT_EQ(run.steps, 3);
  ASSERT_EQ(run.result.hypotheses.size(), 2u);
  EXPECT_EQ(run.result.hypotheses[0].ids, (std::vector<int32_t>{kA, kA2, kEos}));
  EXPECT_NEAR(run.result.hypotheses[0].score, (-1.1f - 0.2f - 0.01f) / 3, 1e-5f);
  EXPECT_EQ(run.result.hypotheses[1].ids, (std::vector<int32_t>{kB, kB2, kEos}));
}

TEST(SearchRulesTest, CTranslate2StopsOnceBeamsHypothesesHaveFinished) {
  const SearchRun run = Drive(BeamTwo(SearchRules::kCTranslate2, 1.0f, 2));
  EXPECT_EQ(run.steps, 2);
  ASSERT_EQ(run.result.hypotheses.size(), 2u);
  EXPECT_EQ(run.result.hypotheses[0].ids, (std::vector<int32_t>{kA, kEos}));
  EXPECT_NEAR(run.result.hypotheses[0].score, (-1.1f - 0.15f) / 2, 1e-5f);
  EXPECT_EQ(run.result.hypotheses[1].ids, (std::vector<int32_t>{kEos}));
  EXPECT_NEAR(run.result.hypotheses[1].score, -1.0f, 1e-5f);
}

TEST(SearchRulesTest, CTranslate2WithoutLengthPenaltyStopsWhenTheBestCandidateFinishes) {
  // Length penalty 0: the first step's best candidate is EOS, and one hypothesis is asked for.
  const SearchRun one = Drive(BeamTwo(SearchRules::kCTranslate2, 0.0f, 1));
  EXPECT_EQ(one.steps, 1);
  ASSERT_EQ(one.result.hypotheses.size(), 1u);
  EXPECT_EQ(one.result.hypotheses[0].ids, (std::vector<int32_t>{kEos}));
  // Two asked for: it waits for the second, then stops at once (the best candidate of step 2,
  // [A EOS], finished too).
  const SearchRun two = Drive(BeamTwo(SearchRules::kCTranslate2, 0.0f, 2));
  EXPECT_EQ(two.steps, 2);
  ASSERT_EQ(two.result.hypotheses.size(), 2u);
  EXPECT_EQ(two.result.hypotheses[0].ids, (std::vector<int32_t>{kEos}));
  EXPECT_EQ(two.result.hypotheses[1].ids, (std::vector<int32_t>{kA, kEos}));
  // Hugging Face's rule with the same penalty does not stop at the first step.
  EXPECT_GT(Drive(BeamTwo(SearchRules::kHuggingFace, 0.0f, 1)).steps, 1);
}

TEST(SearchRulesTest, AtTheLengthLimitCTranslate2KeepsTheLastTokenAndHuggingFaceEndsWithEos) {
  const Script script = {
      {kPad, {{kA, -0.1f}, {kEos, -2.0f}}},
      {kA, {{kA2, -0.2f}, {kEos, -1.0f}}},
  };
  for (int beam : {1, 2}) {
    DecodingOptions o = BeamTwo(SearchRules::kCTranslate2, 1.0f, 1);
    o.beam_size = beam;
    o.max_length = 2;
    const SearchRun ct2 = Drive(o, script);
    EXPECT_EQ(ct2.steps, 2) << "beam " << beam;
    ASSERT_FALSE(ct2.result.hypotheses.empty());
    EXPECT_EQ(ct2.result.hypotheses[0].ids, (std::vector<int32_t>{kA, kA2})) << "beam " << beam;
    EXPECT_NEAR(ct2.result.hypotheses[0].log_prob, -0.3f, 1e-6f);
    o.rules = SearchRules::kHuggingFace;
    const SearchRun hf = Drive(o, script);
    EXPECT_EQ(hf.steps, 2) << "beam " << beam;
    ASSERT_FALSE(hf.result.hypotheses.empty());
    EXPECT_EQ(hf.result.hypotheses[0].ids, (std::vector<int32_t>{kA, kEos})) << "beam " << beam;
    EXPECT_NEAR(hf.result.hypotheses[0].log_prob, -0.1f, 1e-6f);
  }
}

// A forced first token (M2M-100's target language): CTranslate2 takes it as a target prefix, and
// at the next step an EOS ranked below the best candidate holds a beam's place without
// finishing (nor does another candidate take its place); Hugging Face's rules finish it as any
// other.
TEST(SearchRulesTest, AfterAForcedFirstTokenCTranslate2EndsOnlyTheBestCandidateWithEos) {
  constexpr int32_t kCode = 12;
  Script script = {
      {kCode, {{kA, -1.0f}, {kEos, -1.1f}, {kB, -1.2f}, {kC, -5.0f}}},
      {kA, {{kA2, -0.2f}, {kEos, -3.0f}, {kX, -6.0f}, {kY, -7.0f}}},
      {kB, {{kB2, -0.15f}, {kEos, -3.0f}, {kX, -6.0f}, {kY, -7.0f}}},
      {kA2, {{kEos, -0.01f}, {kX, -5.0f}, {kY, -7.0f}, {kC, -8.0f}}},
      {kB2, {{kEos, -0.02f}, {kY, -6.0f}, {kX, -7.0f}, {kC, -8.0f}}},
      {kX, {{kEos, -0.5f}, {kY, -6.0f}, {kA, -7.0f}, {kC, -8.0f}}},
      {kY, {{kEos, -0.5f}, {kX, -6.0f}, {kA, -7.0f}, {kC, -8.0f}}},
  };
  auto has_short = [](const SearchResult& r) {
    for (const Hypothesis& h : r.hypotheses) {
      if (h.ids == std::vector<int32_t>{kCode, kEos}) return true;
    }
    return false;
  };
  DecodingOptions o = BeamTwo(SearchRules::kCTranslate2, 1.0f, 2);
  o.forced_first_token = kCode;
  const SearchRun ct2 = Drive(o, script);
  ASSERT_EQ(ct2.result.hypotheses.size(), 2u);
  EXPECT_FALSE(has_short(ct2.result));
  // Only [code A] ran on from the first free step: [code B] never did.
  for (const Hypothesis& h : ct2.result.hypotheses) {
    EXPECT_EQ(h.ids.at(0), kCode);
    EXPECT_EQ(h.ids.at(1), kA);
  }
  // Hugging Face's rules finish [code EOS] and run [code B] on, which ends among the best.
  o.rules = SearchRules::kHuggingFace;
  const SearchRun hf = Drive(o, script);
  ASSERT_EQ(hf.result.hypotheses.size(), 2u);
  EXPECT_EQ(hf.result.hypotheses[1].ids, (std::vector<int32_t>{kCode, kB, kB2, kEos}));
}

}  // namespace
}  // namespace transerve
