// The step's candidates straight from the output projection (ops::LinearTopKCandidates): with a
// packed weight on the CPU the logits are ranked chunk by chunk and never stored, and the
// candidates must be the very bits TopKCandidates gives over the stored logits, in every weight
// format, at every instruction-set level, whatever batch a row is in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "model/ops/ops.h"
#include "tests/testing/random.h"

namespace transerve {
namespace {

using ops::CandidateRule;
using ops::WeightFormat;
using testing::RandomTensor;

constexpr int32_t kEos = 0;
constexpr WeightFormat kFormats[] = {WeightFormat::kFloat32, WeightFormat::kBFloat16,
                                     WeightFormat::kInt8};

class LinearTopKTest : public ::testing::TestWithParam<WeightFormat> {
 protected:
  void TearDown() override { ASSERT_TRUE(ops::SetCpuIsa(ops::SupportedCpuIsas().back()).ok()); }
};

std::vector<CandidateRule> RandomRules(int rows, std::mt19937& rng) {
  std::uniform_int_distribution<int> k(1, 12);
  std::bernoulli_distribution often(0.3), rarely(0.1);
  std::vector<CandidateRule> rules;
  for (int r = 0; r < rows; ++r) rules.push_back({k(rng), often(rng), rarely(rng)});
  return rules;
}

void ExpectSameBits(const std::vector<std::vector<TokenScore>>& got,
                    const std::vector<std::vector<TokenScore>>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size()) << what << ", row " << r;
    for (size_t i = 0; i < want[r].size(); ++i) {
      EXPECT_EQ(got[r][i].token, want[r][i].token) << what << ", row " << r << " rank " << i;
      EXPECT_EQ(got[r][i].log_prob, want[r][i].log_prob) << what << ", row " << r << " rank " << i;
    }
  }
}

TEST_P(LinearTopKTest, RankedAsComputedGivesTheStoredLogitsCandidatesBitForBit) {
  std::mt19937 rng(70 + static_cast<int>(GetParam()));
  // Not a whole number of chunks (256) nor of panels (32); pad in the middle of a chunk.
  const int rows = 29, depth = 96, vocab = 1000 + 7;
  const int32_t pad = 613;
  Tensor w = RandomTensor({vocab, depth}, rng, 0.5f);
  // Identical weight rows make exact ties, within a chunk and across chunks and threads' ranges:
  // the lower id must come first.
  for (int32_t copy : {9, 300, 901}) {
    std::copy(w.f32() + 7 * depth, w.f32() + 8 * depth, w.f32() + copy * depth);
  }
  Tensor bias = RandomTensor({vocab}, rng, 0.2f);
  for (int32_t copy : {9, 300, 901}) bias.f32()[copy] = bias.f32()[7];
  bias.f32()[7] = bias.f32()[9] = bias.f32()[300] = bias.f32()[901] = 3.0f;  // near the top
  const ops::PackedMatrix packed = ops::PackMatrix(w, GetParam());
  const Tensor x = RandomTensor({rows, depth}, rng);
  const std::vector<CandidateRule> rules = RandomRules(rows, rng);

  for (const std::string& isa : ops::SupportedCpuIsas()) {
    ASSERT_TRUE(ops::SetCpuIsa(isa).ok());
    Tensor stored;
    ops::Linear(x, w, bias, Activation::kIdentity, &stored, &packed);
    std::vector<std::vector<TokenScore>> want, got;
    ops::TopKCandidates(stored, rules, pad, kEos, &want);
    Tensor untouched;
    ops::LinearTopKCandidates(x, w, bias, &packed, rules, pad, kEos, &untouched, &got);
    EXPECT_TRUE(untouched.empty()) << "the logits were stored";
    ExpectSameBits(got, want, isa.c_str());
    // Against the definition: best first, lower id on ties, log-softmax over the allowed tokens.
    for (int r = 0; r < rows; ++r) {
      if (rules[r].force_eos) {
        ASSERT_EQ(got[r].size(), 1u);
        EXPECT_EQ(got[r][0].token, kEos);
        continue;
      }
      const float* row = stored.f32() + r * vocab;
      std::vector<int32_t> order;
      double max_logit = -INFINITY;
      for (int32_t t = 0; t < vocab; ++t) {
        if (t == pad || (rules[r].ban_eos && t == kEos)) continue;
        order.push_back(t);
        max_logit = std::max(max_logit, double(row[t]));
      }
      double sum = 0;
      for (int32_t t : order) sum += std::exp(row[t] - max_logit);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return row[a] > row[b]; });
      ASSERT_EQ(static_cast<int>(got[r].size()), rules[r].k);
      for (int i = 0; i < rules[r].k; ++i) {
        EXPECT_EQ(got[r][i].token, order[i]) << isa << ", row " << r << " rank " << i;
        EXPECT_NEAR(got[r][i].log_prob, row[order[i]] - max_logit - std::log(sum), 1e-5);
      }
    }
  }
}

TEST_P(LinearTopKTest, EachRowIsTheSameAloneAsInABatch) {
  std::mt19937 rng(80 + static_cast<int>(GetParam()));
  const int rows = 40, depth = 64, vocab = 2 * 256 + 33;
  const Tensor w = RandomTensor({vocab, depth}, rng, 0.5f);
  const Tensor bias = RandomTensor({vocab}, rng, 0.2f);
  const ops::PackedMatrix packed = ops::PackMatrix(w, GetParam());
  const Tensor x = RandomTensor({rows, depth}, rng);
  const std::vector<CandidateRule> rules = RandomRules(rows, rng);
  Tensor unused;
  std::vector<std::vector<TokenScore>> batch;
  ops::LinearTopKCandidates(x, w, bias, &packed, rules, /*pad=*/5, kEos, &unused, &batch);
  for (int r = 0; r < rows; ++r) {
    const Tensor one =
        Tensor::FromFloats({1, depth}, std::span(x.f32() + r * depth, static_cast<size_t>(depth)));
    std::vector<std::vector<TokenScore>> alone;
    ops::LinearTopKCandidates(one, w, bias, &packed, std::span(&rules[r], 1), 5, kEos, &unused,
                              &alone);
    ExpectSameBits(alone, {batch[r]}, "alone");
  }
}

TEST_P(LinearTopKTest, ManyCandidatesGoThroughStoredLogits) {
  std::mt19937 rng(90 + static_cast<int>(GetParam()));
  const int depth = 32, vocab = 300;
  const Tensor w = RandomTensor({vocab, depth}, rng);
  const ops::PackedMatrix packed = ops::PackMatrix(w, GetParam());
  const Tensor x = RandomTensor({2, depth}, rng);
  const std::vector<CandidateRule> rules{{100, false, false}, {3, true, false}};
  Tensor logits;
  std::vector<std::vector<TokenScore>> got, want;
  ops::LinearTopKCandidates(x, w, Tensor(), &packed, rules, 1, kEos, &logits, &got);
  ASSERT_EQ(logits.dim(0), 2);
  ops::TopKCandidates(logits, rules, 1, kEos, &want);
  ExpectSameBits(got, want, "k = 100");
  EXPECT_EQ(got[0].size(), 100u);
}

TEST_P(LinearTopKTest, RulesThatCannotBeMetAreAClearError) {
  std::mt19937 rng(95);
  const Tensor w = RandomTensor({50, 16}, rng);
  const ops::PackedMatrix packed = ops::PackMatrix(w, GetParam());
  const Tensor x = RandomTensor({2, 16}, rng);
  Tensor logits;
  std::vector<std::vector<TokenScore>> got;
  auto expect_invalid = [&](std::vector<CandidateRule> rules) {
    EXPECT_THROW(ops::LinearTopKCandidates(x, w, Tensor(), &packed, rules, 1, kEos, &logits, &got),
                 std::invalid_argument);
  };
  expect_invalid({{1, false, false}});                     // one rule for two rows
  expect_invalid({{1, false, false}, {0, false, false}});  // no candidate asked for
  expect_invalid({{1, false, false}, {49, true, false}});  // 48 tokens allowed
}

INSTANTIATE_TEST_SUITE_P(Formats, LinearTopKTest, ::testing::ValuesIn(kFormats),
                         [](const auto& info) {
                           switch (info.param) {
                             case WeightFormat::kFloat32:
                               return std::string("float32");
                             case WeightFormat::kBFloat16:
                               return std::string("bfloat16");
                             case WeightFormat::kInt8:
                               return std::string("int8");
                           }
                           return std::string("unknown");
                         });

}  // namespace
}  // namespace transerve
