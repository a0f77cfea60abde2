// The rules a step's logits are read under: when EOS is banned and when it is forced.
#include "model/decoding/logits_processing.h"

#include <gtest/gtest.h>

namespace transerve {
namespace {

TEST(RuleForStep, LengthsCountGeneratedTokensIncludingEos) {
  DecodingOptions o;
  o.max_length = 5;
  o.min_length = 3;
  EXPECT_TRUE(RuleForStep(o, 0, 1).ban_eos);   // token 1 of at least 3
  EXPECT_TRUE(RuleForStep(o, 1, 1).ban_eos);   // token 2
  EXPECT_FALSE(RuleForStep(o, 2, 1).ban_eos);  // token 3 may be EOS
  EXPECT_FALSE(RuleForStep(o, 3, 1).force_eos);
  EXPECT_TRUE(RuleForStep(o, 4, 1).force_eos);  // token 5 is the last
  EXPECT_FALSE(RuleForStep(o, 4, 1).ban_eos);   // forcing wins over banning
}

TEST(RuleForStep, AsksForTheCandidatesTheSearchNeeds) {
  DecodingOptions o;
  EXPECT_EQ(RuleForStep(o, 0, 1).k, 1);
  EXPECT_EQ(RuleForStep(o, 7, 8).k, 8);
}

TEST(RuleForStep, AMinLengthAboveMaxLengthStillEndsAtMaxLength) {
  DecodingOptions o;
  o.max_length = 2;
  o.min_length = 4;
  EXPECT_TRUE(RuleForStep(o, 0, 1).ban_eos);
  EXPECT_TRUE(RuleForStep(o, 1, 1).force_eos);
  EXPECT_FALSE(RuleForStep(o, 1, 1).ban_eos);
}

}  // namespace
}  // namespace transerve
