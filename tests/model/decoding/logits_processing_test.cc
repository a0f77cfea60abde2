// Processed log-probabilities (pad excluded, EOS banned or forced) against a naive log-softmax.
#include "model/decoding/logits_processing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "tests/testing/random.h"

namespace transerve {
namespace {

constexpr SpecialTokens kSpecial{/*pad=*/99, /*eos=*/0, /*decoder_start=*/99};

// log Σ exp over allowed tokens, in double.
double NaiveNormalizer(const std::vector<float>& logits, StepRule rule) {
  double m = -INFINITY;
  for (size_t t = 0; t < logits.size(); ++t) {
    if (t == 99u || (rule.ban_eos && t == 0u)) continue;
    m = std::max(m, double(logits[t]));
  }
  double s = 0;
  for (size_t t = 0; t < logits.size(); ++t) {
    if (t == 99u || (rule.ban_eos && t == 0u)) continue;
    s += std::exp(logits[t] - m);
  }
  return m + std::log(s);
}

TEST(LogNormalizer, ExcludesPadEvenWhenPadDominates) {
  std::mt19937 rng(30);
  for (bool ban_eos : {false, true}) {
    auto logits = testing::RandomFloats(100, rng, 8.0f);
    logits[99] = 60.0f;  // pad far above everything: subtracting it afterwards would cancel
    const StepRule rule{ban_eos, false};
    EXPECT_NEAR(LogNormalizer(logits, kSpecial, rule), NaiveNormalizer(logits, rule), 1e-5);
  }
}

TEST(TopTokens, BestAllowedTokensWithRenormalisedLogProbs) {
  std::mt19937 rng(31);
  auto logits = testing::RandomFloats(100, rng, 5.0f);
  logits[99] = 50.0f;  // pad: never chosen
  logits[0] = 40.0f;   // eos: chosen unless banned
  std::vector<TokenScore> top;
  TopTokens(logits, kSpecial, StepRule{}, 5, &top);
  ASSERT_EQ(top.size(), 5u);
  EXPECT_EQ(top[0].token, 0);
  std::vector<int32_t> order(100);
  std::iota(order.begin(), order.end(), 0);
  order.erase(order.begin() + 99);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const double lse = NaiveNormalizer(logits, StepRule{});
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(top[i].token, order[i]);
    EXPECT_NEAR(top[i].log_prob, logits[order[i]] - lse, 1e-5);
  }
  TopTokens(logits, kSpecial, StepRule{/*ban_eos=*/true, false}, 3, &top);
  for (const auto& t : top) EXPECT_NE(t.token, 0);
}

TEST(TopTokens, ForcedEosIsTheOnlyCandidateWithLogProbZero) {
  std::mt19937 rng(32);
  const auto logits = testing::RandomFloats(100, rng);
  std::vector<TokenScore> top;
  TopTokens(logits, kSpecial, StepRule{false, /*force_eos=*/true}, 8, &top);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].token, 0);
  EXPECT_EQ(top[0].log_prob, 0.0f);
}

TEST(RuleForStep, LengthsCountGeneratedTokensIncludingEos) {
  DecodingOptions o;
  o.max_length = 5;
  o.min_length = 3;
  EXPECT_TRUE(RuleForStep(o, 0).ban_eos);   // token 1 of at least 3
  EXPECT_TRUE(RuleForStep(o, 1).ban_eos);   // token 2
  EXPECT_FALSE(RuleForStep(o, 2).ban_eos);  // token 3 may be EOS
  EXPECT_FALSE(RuleForStep(o, 3).force_eos);
  EXPECT_TRUE(RuleForStep(o, 4).force_eos);  // token 5 is the last
}

}  // namespace
}  // namespace transerve
