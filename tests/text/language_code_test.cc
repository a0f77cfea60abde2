#include "text/language_code.h"

#include <gtest/gtest.h>

namespace transerve::text {
namespace {

TEST(CanonicalLanguage, OneFormForEveryWayOfWritingALanguage) {
  EXPECT_EQ(CanonicalLanguage("de"), "de");
  EXPECT_EQ(CanonicalLanguage("DE"), "de");
  EXPECT_EQ(CanonicalLanguage("deu"), "de");
  EXPECT_EQ(CanonicalLanguage("de_DE"), "de");
  EXPECT_EQ(CanonicalLanguage("pt-BR"), "pt");
  EXPECT_EQ(CanonicalLanguage("fra"), "fr");
  EXPECT_EQ(CanonicalLanguage("zho_Hans"), "zh");
  EXPECT_EQ(CanonicalLanguage("iw"), "he");
  EXPECT_EQ(CanonicalLanguage("heb"), "he");
  EXPECT_EQ(CanonicalLanguage("nob"), "nb");
  EXPECT_EQ(CanonicalLanguage("no"), "nb");
  EXPECT_EQ(CanonicalLanguage("zh-Hant"), "zh");
  EXPECT_EQ(CanonicalLanguage("jw"), "jv");
  EXPECT_EQ(CanonicalLanguage("mul"), "mul");
}

TEST(CanonicalLanguage, AnythingElseIsNoCode) {
  EXPECT_EQ(CanonicalLanguage(""), "");
  EXPECT_EQ(CanonicalLanguage("d"), "");
  EXPECT_EQ(CanonicalLanguage("german"), "");
  EXPECT_EQ(CanonicalLanguage("de!"), "");
  EXPECT_EQ(CanonicalLanguage("12"), "");
  EXPECT_EQ(CanonicalLanguage("auto"), "");
}

TEST(TargetTokenLanguage, ReadsMultilingualTargetTokens) {
  EXPECT_EQ(TargetTokenLanguage(">>deu<<"), "de");
  EXPECT_EQ(TargetTokenLanguage(">>fr<<"), "fr");
  EXPECT_EQ(TargetTokenLanguage(">>por_BR<<"), "pt");
  EXPECT_EQ(TargetTokenLanguage(">>deu"), "");
  EXPECT_EQ(TargetTokenLanguage("▁deu"), "");
  EXPECT_EQ(TargetTokenLanguage(">><<"), "");
}

TEST(LanguageName, NamesLanguagesInEnglish) {
  EXPECT_EQ(LanguageName("de"), "German");
  EXPECT_EQ(LanguageName("deu"), "German");
  EXPECT_EQ(LanguageName("pt-BR"), "Portuguese");
  EXPECT_EQ(LanguageName("zh"), "Chinese");
  EXPECT_EQ(LanguageName("nb"), "Norwegian Bokm\u00e5l");
  EXPECT_EQ(LanguageName("iw"), "Hebrew");
}

TEST(LanguageName, UnknownCodesNameThemselves) {
  EXPECT_EQ(LanguageName(""), "");
  EXPECT_EQ(LanguageName("qqx"), "qqx");
}

}  // namespace
}  // namespace transerve::text
