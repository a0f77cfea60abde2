#include "server/auth.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace transerve {
namespace {

std::string RandomToken(std::mt19937& rng, size_t length) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string t;
  for (size_t i = 0; i < length; ++i) t += kAlphabet[pick(rng)];
  return t;
}

TEST(BearerTokenTest, AcceptsExactlyTheConfiguredTokens) {
  std::mt19937 rng(20261130);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::string> tokens;
    for (int i = 0; i < 3; ++i) tokens.push_back(RandomToken(rng, 8 + rng() % 40));
    for (const auto& t : tokens) EXPECT_TRUE(BearerTokenAccepted("Bearer " + t, tokens)) << t;
    const std::string& t = tokens[rng() % tokens.size()];
    EXPECT_FALSE(BearerTokenAccepted("Bearer " + t.substr(0, t.size() - 1), tokens));  // prefix
    EXPECT_FALSE(BearerTokenAccepted("Bearer " + t + "x", tokens));                    // longer
    std::string flipped = t;
    flipped[rng() % flipped.size()] ^= 0x20;  // one character changed (case or symbol)
    EXPECT_FALSE(BearerTokenAccepted("Bearer " + flipped, tokens));
    EXPECT_FALSE(BearerTokenAccepted(t, tokens));              // no scheme
    EXPECT_FALSE(BearerTokenAccepted("bearer " + t, tokens));  // the scheme is case-sensitive
    EXPECT_FALSE(BearerTokenAccepted("Bearer " + RandomToken(rng, t.size()), tokens));
  }
}

TEST(BearerTokenTest, EmptyInputsNeverMatch) {
  EXPECT_FALSE(BearerTokenAccepted("", {"abc"}));
  EXPECT_FALSE(BearerTokenAccepted("Bearer ", {"abc"}));
  EXPECT_FALSE(BearerTokenAccepted("Bearer abc", {}));
  // An embedded NUL does not end the comparison.
  EXPECT_FALSE(BearerTokenAccepted(std::string("Bearer abc\0def", 14), {"abc"}));
}

class TokensFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = ::testing::TempDir() + "/tokens_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(TokensFileTest, ReadsTokensSkippingCommentsAndBlankLines) {
  auto tokens = ReadTokensFile(Write("# clients\n  alpha-1  \n\nbeta_2\n# old: gamma\n"));
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(*tokens, (std::vector<std::string>{"alpha-1", "beta_2"}));
}

TEST_F(TokensFileTest, RejectsEmptyFilesInnerSpacesAndMissingFiles) {
  EXPECT_EQ(ReadTokensFile(Write("# nothing\n\n")).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto spaced = ReadTokensFile(Write("ok\nbad token\n"));
  EXPECT_EQ(spaced.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(spaced.status().message().find(":2:"), std::string::npos) << spaced.status();
  EXPECT_EQ(ReadTokensFile(::testing::TempDir() + "/no/such/file").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace transerve
