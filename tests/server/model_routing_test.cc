// Choosing a model by name or by language pair (server/model_routing.h), and reading a model's
// languages from its files (server/model_languages.h).
#include "server/model_routing.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/translator/translator.h"
#include "server/model_languages.h"
#include "tests/testing/paths.h"

namespace transerve {
namespace {

ModelLanguages Pair(std::string s, std::string t) {
  ModelLanguages l;
  l.source = std::move(s);
  l.target = std::move(t);
  return l;
}

ModelLanguages Multilingual(std::string s, std::map<std::string, std::string> tokens) {
  ModelLanguages l;
  l.source = std::move(s);
  l.target = "mul";
  l.tokens.targets = std::move(tokens);
  return l;
}

std::vector<RoutableModel> Served() {
  return {{"en-de", Pair("en", "de")},
          {"en-fr", Pair("en", "fr")},
          {"de-en", Pair("de", "en")},
          {"en-mul", Multilingual("en", {{"de", ">>deu<<"}, {"es", ">>spa<<"}, {"it", ">>ita<<"}})},
          {"mul-en", Pair("mul", "en")}};
}

absl::StatusOr<Route> RouteOf(std::string model, std::string source, std::string target) {
  return RouteRequest(Served(), LanguageRequest{model, source, target});
}

TEST(RouteRequest, NoModelNoLanguageIsTheDefault) {
  auto r = RouteOf("", "", "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, 0u);
  EXPECT_EQ(r->tokens.target, "");
}

TEST(RouteRequest, APairPicksTheBilingualModelFirst) {
  auto r = RouteOf("", "en", "de");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, 0u);
  EXPECT_EQ(r->tokens.target, "");
  r = RouteOf("", "en", "fr");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, 1u);
  r = RouteOf("", "de", "en");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, 2u);
}

TEST(RouteRequest, AMultilingualTargetGetsItsToken) {
  auto r = RouteOf("", "en", "es");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, 3u);
  EXPECT_EQ(r->tokens.target, ">>spa<<");
  // Named, the multilingual model also serves a language a bilingual model has.
  r = RouteOf("en-mul", "", "de");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens.target, ">>deu<<");
}

TEST(RouteRequest, AMultilingualSourceReadsAnyLanguage) {
  auto r = RouteOf("", "fi", "en");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, 4u);
  // ... but a bilingual model for the pair comes first.
  r = RouteOf("", "de", "en");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, 2u);
}

TEST(RouteRequest, ATargetAloneTakesAnySource) {
  auto r = RouteOf("", "", "fr");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, 1u);
}

TEST(RouteRequest, ASourceAloneTakesTheFirstModelReadingIt) {
  auto r = RouteOf("", "de", "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, 2u);
}

TEST(RouteRequest, UnservedPairsAndNamesAreNotFoundWithWhatIsServed) {
  auto r = RouteOf("", "en", "ja");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("en-de (en-de)"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("en-{de,es,it}"), std::string::npos) << r.status();
  EXPECT_EQ(RouteOf("nope", "", "").status().code(), absl::StatusCode::kNotFound);
  std::vector<RoutableModel> bilingual{{"en-de", Pair("en", "de")}};
  EXPECT_EQ(RouteRequest(bilingual, LanguageRequest{"", "ja", ""}).status().code(),
            absl::StatusCode::kNotFound);
  // A multilingual source reads Japanese too.
  auto any = RouteOf("", "ja", "");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->model, 4u);
}

TEST(RouteRequest, ANamedModelMustServeTheNamedPair) {
  EXPECT_EQ(RouteOf("en-de", "en", "fr").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RouteOf("en-de", "fr", "de").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(RouteOf("en-de", "en", "de").ok());
  EXPECT_TRUE(RouteOf("mul-en", "sv", "en").ok());
}

TEST(RouteRequest, AModelWithUnknownLanguagesIsTakenAtTheCallersWord) {
  std::vector<RoutableModel> models{{"mystery", ModelLanguages{}}};
  auto r = RouteRequest(models, LanguageRequest{"mystery", "en", "de"});
  EXPECT_TRUE(r.ok()) << r.status();
  // ... but is never picked by languages alone.
  EXPECT_EQ(RouteRequest(models, LanguageRequest{"", "en", "de"}).status().code(),
            absl::StatusCode::kNotFound);
}

// An M2M-100 / NLLB-200 model: sources start with their language's token, the target's is forced.
ModelLanguages LanguageCoded(std::map<std::string, std::string> tokens) {
  ModelLanguages l;
  l.source = "mul";
  l.target = "mul";
  l.tokens.sources = tokens;
  l.tokens.targets = std::move(tokens);
  l.tokens.target_forced = true;
  return l;
}

std::vector<RoutableModel> WithNllb() {
  return {{"en-de", Pair("en", "de")},
          {"nllb",
           LanguageCoded(
               {{"en", "eng_Latn"}, {"de", "deu_Latn"}, {"fr", "fra_Latn"}, {"zh", "zho_Hans"}})}};
}

TEST(RouteRequest, ALanguageCodedModelGetsBothTokensAndABilingualModelIsPreferred) {
  auto r = RouteRequest(WithNllb(), LanguageRequest{"", "en", "fr"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, 1u);
  EXPECT_EQ(r->tokens.source, "eng_Latn");
  EXPECT_EQ(r->tokens.target, "fra_Latn");
  EXPECT_TRUE(r->tokens.target_forced);
  EXPECT_FALSE(r->needs_source);
  r = RouteRequest(WithNllb(), LanguageRequest{"", "en", "de"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, 0u);
  EXPECT_TRUE(r->tokens.source.empty());
  EXPECT_FALSE(r->tokens.target_forced);
  r = RouteRequest(WithNllb(), LanguageRequest{"", "zh", "de"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, 1u);
  EXPECT_EQ(r->tokens.source, "zho_Hans");
  EXPECT_EQ(r->tokens.target, "deu_Latn");
}

TEST(RouteRequest, ALanguageCodedModelNeedsASourceItReadsAndATarget) {
  // No source: routed, and the caller is told to detect one.
  auto r = RouteRequest(WithNllb(), LanguageRequest{"", "", "fr"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, 1u);
  EXPECT_TRUE(r->needs_source);
  EXPECT_EQ(r->tokens.target, "fra_Latn");
  // A source it does not read: by name refused, by languages not found.
  EXPECT_EQ(RouteRequest(WithNllb(), LanguageRequest{"nllb", "ja", "fr"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RouteRequest(WithNllb(), LanguageRequest{"", "ja", "fr"}).status().code(),
            absl::StatusCode::kNotFound);
  // No target: the model cannot choose one.
  auto none = RouteRequest(WithNllb(), LanguageRequest{"nllb", "en", ""});
  ASSERT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("target_language"), std::string::npos) << none.status();
  // Many languages are counted in the list of what is served, not spelled out.
  std::map<std::string, std::string> many;
  for (char a = 'a'; a <= 'z'; ++a) many[std::string{a, a}] = std::string{a, a, a} + "_Latn";
  std::vector<RoutableModel> big{{"big", LanguageCoded(many)}};
  auto unserved = RouteRequest(big, LanguageRequest{"", "en", "xx"});
  ASSERT_EQ(unserved.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unserved.status().message().find("big (mul-{26 languages})"), std::string::npos)
      << unserved.status();
}

TEST(RoutePivot, ChainsTwoModelsThroughTheLanguageBetween) {
  // No model translates de-fr: de-en, then en-fr.
  ASSERT_EQ(RouteOf("", "de", "fr").status().code(), absl::StatusCode::kNotFound);
  auto p = RoutePivot(Served(), LanguageRequest{"", "de", "fr"}, "en");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->first.model, 2u);  // the bilingual de-en before mul-en
  EXPECT_EQ(p->second.model, 1u);
  EXPECT_EQ(p->language, "en");
  // Any source through mul-en, then the multilingual model with its target token.
  p = RoutePivot(Served(), LanguageRequest{"", "sv", "it"}, "en");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->first.model, 4u);
  EXPECT_EQ(p->second.model, 3u);
  EXPECT_EQ(p->second.tokens.target, ">>ita<<");
}

TEST(RoutePivot, NotFoundWhereALegHasNoModelOrThereIsNothingToChain) {
  auto missing = RoutePivot(Served(), LanguageRequest{"", "sv", "ja"}, "en");
  ASSERT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("into 'ja'"), std::string::npos) << missing.status();
  EXPECT_EQ(RoutePivot({{"en-de", Pair("en", "de")}}, LanguageRequest{"", "fr", "de"}, "en")
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  for (const LanguageRequest& r : {LanguageRequest{"", "en", "ja"}, LanguageRequest{"", "ja", "en"},
                                   LanguageRequest{"", "", "fr"}, LanguageRequest{"", "de", ""},
                                   LanguageRequest{"de-en", "de", "fr"}}) {
    EXPECT_EQ(RoutePivot(Served(), r, "en").status().code(), absl::StatusCode::kNotFound)
        << r.model << " " << r.source << "-" << r.target;
  }
  EXPECT_EQ(RoutePivot(Served(), LanguageRequest{"", "de", "fr"}, "").status().code(),
            absl::StatusCode::kNotFound);
}

class ModelLanguagesTest : public ::testing::Test {
 protected:
  static const MarianTokenizer& Model() {
    static MarianTokenizer* t = [] {
      auto r = MarianTokenizer::Load(testing::SourceDir() + "/tests/fixtures/tiny-marian/model");
      EXPECT_TRUE(r.ok()) << r.status();
      return r->release();
    }();
    return *t;
  }
  // A directory with only a tokenizer_config.json (languages are read from the files alone).
  std::string Dir(const std::string& name, const std::string& config) {
    const auto dir = std::filesystem::path(::testing::TempDir()) / name;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "tokenizer_config.json") << config;
    return dir.string();
  }
};

TEST_F(ModelLanguagesTest, ReadsTheTokenizerConfig) {
  auto l =
      ReadModelLanguages(Dir("m1", R"({"source_lang": "eng", "target_lang": "deu"})"), "", Model());
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->source, "en");
  EXPECT_EQ(l->target, "de");
  EXPECT_TRUE(l->Serves("en", "de"));
  EXPECT_FALSE(l->Serves("en", "fr"));
}

TEST_F(ModelLanguagesTest, FallsBackToTheOpusMtDirectoryName) {
  auto l = ReadModelLanguages(Dir("opus-mt-fr-es", "{}"), "", Model());
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->source, "fr");
  EXPECT_EQ(l->target, "es");
  l = ReadModelLanguages(Dir("opus-mt-tc-big-en-pt", "not json"), "", Model());
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->source, "en");
  EXPECT_EQ(l->target, "pt");
}

TEST_F(ModelLanguagesTest, TheOperatorsPairWinsAndIsChecked) {
  auto l = ReadModelLanguages(Dir("opus-mt-fr-es2", R"({"source_lang": "fra"})"), "sv-fi", Model());
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->source, "sv");
  EXPECT_EQ(l->target, "fi");
  EXPECT_EQ(ReadModelLanguages(Dir("x", "{}"), "english", Model()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ModelLanguagesTest, UnknownWhenNothingSays) {
  auto l = ReadModelLanguages(Dir("plain", "{}"), "", Model());
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->source, "");
  EXPECT_EQ(l->target, "");
  EXPECT_TRUE(l->targets().empty());
}

}  // namespace
}  // namespace transerve
