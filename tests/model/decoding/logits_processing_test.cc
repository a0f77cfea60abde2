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

// M2M-100's and NLLB's target language: the first token only, forced over a min_length ban, and
// EOS forced at max_length still wins (Hugging Face applies its forced-EOS rule last).
TEST(RuleForStep, AForcedFirstTokenIsTheFirstTokensOnlyCandidate) {
  DecodingOptions o;
  o.forced_first_token = 17;
  o.min_length = 3;
  EXPECT_EQ(RuleForStep(o, 0, 4).forced_token, 17);
  EXPECT_TRUE(RuleForStep(o, 0, 4).forced());
  EXPECT_FALSE(RuleForStep(o, 0, 4).ban_eos);
  EXPECT_EQ(RuleForStep(o, 1, 4).forced_token, -1);
  EXPECT_TRUE(RuleForStep(o, 1, 4).ban_eos);
  o.max_length = 1;
  EXPECT_TRUE(RuleForStep(o, 0, 4).force_eos);
  EXPECT_EQ(RuleForStep(o, 0, 4).forced_token, -1);
  EXPECT_FALSE(RuleForStep(DecodingOptions{}, 0, 1).forced());
}

}  // namespace
}  // namespace transerve
