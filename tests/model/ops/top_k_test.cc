// A step's candidates (ops::TopKCandidates) on the CPU against a naive log-softmax over the
// allowed tokens: pad excluded, EOS banned or forced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "model/ops/ops.h"
#include "tests/testing/random.h"

namespace transerve {
namespace {

constexpr int32_t kPad = 99;
constexpr int32_t kEos = 0;

bool Allowed(int32_t token, const ops::CandidateRule& rule) {
  return token != kPad && !(rule.ban_eos && token == kEos);
}

// log Σ exp over the allowed tokens of `row`, in double.
double NaiveNormaliser(std::span<const float> row, const ops::CandidateRule& rule) {
  double m = -INFINITY;
  for (size_t t = 0; t < row.size(); ++t) {
    if (Allowed(static_cast<int32_t>(t), rule)) m = std::max(m, double(row[t]));
  }
  double s = 0;
  for (size_t t = 0; t < row.size(); ++t) {
    if (Allowed(static_cast<int32_t>(t), rule)) s += std::exp(row[t] - m);
  }
  return m + std::log(s);
}

// The allowed tokens of `row`, best first, ties to the lower id.
std::vector<int32_t> NaiveRanking(std::span<const float> row, const ops::CandidateRule& rule) {
  std::vector<int32_t> order;
  for (int32_t t = 0; t < static_cast<int32_t>(row.size()); ++t) {
    if (Allowed(t, rule)) order.push_back(t);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  return order;
}

std::span<const float> Row(const Tensor& logits, int64_t r) {
  return {logits.f32() + r * logits.dim(1), static_cast<size_t>(logits.dim(1))};
}

void ExpectNaive(const Tensor& logits, const std::vector<ops::CandidateRule>& rules,
                 const std::vector<std::vector<TokenScore>>& got) {
  ASSERT_EQ(got.size(), rules.size());
  for (size_t r = 0; r < rules.size(); ++r) {
    const std::vector<int32_t> order = NaiveRanking(Row(logits, r), rules[r]);
    const double lse = NaiveNormaliser(Row(logits, r), rules[r]);
    ASSERT_EQ(static_cast<int32_t>(got[r].size()), rules[r].k) << "row " << r;
    for (int32_t i = 0; i < rules[r].k; ++i) {
      EXPECT_EQ(got[r][i].token, order[i]) << "row " << r << " rank " << i;
      EXPECT_NEAR(got[r][i].log_prob, Row(logits, r)[order[i]] - lse, 1e-5) << "row " << r;
    }
  }
}

TEST(TopKCandidates, ExcludesPadEvenWhenPadDominates) {
  std::mt19937 rng(30);
  Tensor logits = testing::RandomTensor({2, 100}, rng, 8.0f);
  // Pad far above everything: subtracting its term afterwards would cancel.
  logits.f32()[kPad] = logits.f32()[100 + kPad] = 60.0f;
  const std::vector<ops::CandidateRule> rules{{3, false, false}, {3, /*ban_eos=*/true, false}};
  std::vector<std::vector<TokenScore>> got;
  ops::TopKCandidates(logits, rules, kPad, kEos, &got);
  ExpectNaive(logits, rules, got);
}

TEST(TopKCandidates, BestAllowedTokensWithRenormalisedLogProbs) {
  std::mt19937 rng(31);
  // Wider than the CPU's blocks of 256 tokens, with a partial block at the end.
  Tensor logits = testing::RandomTensor({5, 1000}, rng, 5.0f);
  float* x = logits.f32();
  x[0 * 1000 + kPad] = 50.0f;  // pad: never chosen
  x[1 * 1000 + kEos] = 40.0f;  // EOS: chosen, unless banned (row 2)
  x[2 * 1000 + kEos] = 40.0f;
  x[3 * 1000 + 7] = x[3 * 1000 + 9] = x[3 * 1000 + 700] = 30.0f;  // ties: lower id first
  x[4 * 1000 + 999] = 30.0f;                                      // the best in the tail
  const std::vector<ops::CandidateRule> rules{{5, false, false},
                                              {1, false, false},
                                              {3, true, false},
                                              {4, false, false},
                                              {24, false, false}};
  std::vector<std::vector<TokenScore>> got;
  ops::TopKCandidates(logits, rules, kPad, kEos, &got);
  ExpectNaive(logits, rules, got);
  EXPECT_EQ(got[1][0].token, kEos);
  EXPECT_EQ(got[3][0].token, 7);
  EXPECT_EQ(got[3][1].token, 9);
  EXPECT_EQ(got[4][0].token, 999);
}

TEST(TopKCandidates, ForcedEosIsTheOnlyCandidateWithLogProbZero) {
  std::mt19937 rng(32);
  const Tensor logits = testing::RandomTensor({3, 100}, rng);
  const std::vector<ops::CandidateRule> rules{
      {8, false, /*force_eos=*/true}, {2, false, false}, {8, /*ban_eos=*/true, true}};
  std::vector<std::vector<TokenScore>> got;
  ops::TopKCandidates(logits, rules, kPad, kEos, &got);
  ASSERT_EQ(got.size(), 3u);
  for (size_t r : {0u, 2u}) {
    ASSERT_EQ(got[r].size(), 1u);
    EXPECT_EQ(got[r][0].token, kEos);
    EXPECT_EQ(got[r][0].log_prob, 0.0f);
  }
  EXPECT_EQ(got[1].size(), 2u);
}

TEST(TopKCandidates, AForcedTokenIsTheOnlyCandidateWithLogProbZero) {
  std::mt19937 rng(34);
  const Tensor logits = testing::RandomTensor({2, 100}, rng);
  std::uniform_int_distribution<int32_t> token(1, 98);  // not EOS (0) nor pad (99)
  const int32_t forced = token(rng);
  std::vector<ops::CandidateRule> rules{{4, false, false}, {4, false, false}};
  rules[0].forced_token = forced;
  std::vector<std::vector<TokenScore>> got;
  ops::TopKCandidates(logits, rules, kPad, kEos, &got);
  ASSERT_EQ(got[0].size(), 1u);
  EXPECT_EQ(got[0][0].token, forced);
  EXPECT_EQ(got[0][0].log_prob, 0.0f);
  EXPECT_EQ(got[1].size(), 4u);
  rules[0].forced_token = 100;  // outside the vocabulary
  EXPECT_THROW(ops::TopKCandidates(logits, rules, kPad, kEos, &got), std::invalid_argument);
  rules[0].forced_token = kPad;
  EXPECT_THROW(ops::TopKCandidates(logits, rules, kPad, kEos, &got), std::invalid_argument);
}

TEST(TopKCandidates, EachRowIsTheSameAloneAsInABatch) {
  std::mt19937 rng(33);
  const int rows = 37, vocab = 3001;
  const Tensor logits = testing::RandomTensor({rows, vocab}, rng, 6.0f);
  std::vector<ops::CandidateRule> rules;
  for (int r = 0; r < rows; ++r) rules.push_back({1 + r % 9, r % 4 == 1, r % 11 == 3});
  std::vector<std::vector<TokenScore>> batch;
  ops::TopKCandidates(logits, rules, kPad, kEos, &batch);
  for (int r = 0; r < rows; ++r) {
    const Tensor one = Tensor::FromFloats({1, vocab}, Row(logits, r));
    std::vector<std::vector<TokenScore>> alone;
    ops::TopKCandidates(one, std::span(&rules[r], 1), kPad, kEos, &alone);
    ASSERT_EQ(alone[0].size(), batch[r].size()) << "row " << r;
    for (size_t i = 0; i < alone[0].size(); ++i) {
      EXPECT_EQ(alone[0][i].token, batch[r][i].token) << "row " << r;
      EXPECT_EQ(alone[0][i].log_prob, batch[r][i].log_prob) << "row " << r;
    }
  }
}

TEST(TopKCandidates, RulesThatCannotBeMetAreAClearError) {
  std::mt19937 rng(34);
  const Tensor logits = testing::RandomTensor({2, 100}, rng);
  std::vector<std::vector<TokenScore>> got;
  auto expect_invalid = [&](std::vector<ops::CandidateRule> rules) {
    EXPECT_THROW(ops::TopKCandidates(logits, rules, kPad, kEos, &got), std::invalid_argument);
  };
  expect_invalid({{1, false, false}});                       // one rule for two rows
  expect_invalid({{1, false, false}, {0, false, false}});    // no candidate asked for
  expect_invalid({{1, false, false}, {99, true, false}});    // 98 tokens allowed
  expect_invalid({{1, false, false}, {100, false, false}});  // 99 tokens allowed
  // Forced rows need no k; 99 is every token but pad.
  ops::TopKCandidates(logits, std::vector<ops::CandidateRule>{{0, false, true}, {99, false, false}},
                      kPad, kEos, &got);
  EXPECT_EQ(got[1].size(), 99u);
}

}  // namespace
}  // namespace transerve
