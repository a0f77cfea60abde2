// DeepL's API over a recording fake backend: what each request (form or JSON) becomes for the
// Translator service, and what each answer or error becomes for the client; glossary entries in
// DeepL's TSV and CSV.
#include "server/http/deepl_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "server/http/deepl_request.h"

namespace transerve::http {
namespace {

using Json = nlohmann::json;

v1::ModelInfo Model(const std::string& name, const std::string& source,
                    std::vector<std::string> targets) {
  v1::ModelInfo m;
  m.set_name(name);
  m.set_source_language(source);
  m.set_target_language(targets.size() == 1 ? targets[0] : "mul");
  for (const auto& t : targets) m.add_target_languages(t);
  return m;
}

// Answers each text with "<target>:<text>"; records what it was asked.
class FakeBackend : public TranslatorBackend {
 public:
  FakeBackend() {
    *models.add_models() = Model("en-de", "en", {"de"});
    *models.add_models() = Model("de-en", "de", {"en"});
    *models.add_models() = Model("en-pt", "en", {"pt"});
    models.mutable_models(0)->set_is_default(true);
  }
  grpc::Status Translate(const v1::TranslateRequest& request, const CallOptions& options,
                         v1::TranslateResponse* response) override {
    requests.push_back(request);
    tokens.push_back(options.bearer_token);
    if (!translate_status.ok()) return translate_status;
    response->set_model(request.source_language() == "de" ? "de-en" : "en-de");
    for (const std::string& t : request.texts()) {
      response->add_translations()->set_text(request.target_language() + ":" + t);
    }
    return grpc::Status::OK;
  }
  std::unique_ptr<Stream> OpenStream(const v1::TranslateRequest&, const CallOptions&) override {
    return nullptr;
  }
  grpc::Status ListModels(const CallOptions& options, v1::ListModelsResponse* response) override {
    tokens.push_back(options.bearer_token);
    if (!list_status.ok()) return list_status;
    *response = models;
    return grpc::Status::OK;
  }
  bool Serving() override { return true; }
  bool KeyRequired() const override { return false; }

  v1::ListModelsResponse models;
  grpc::Status list_status = grpc::Status::OK;
  grpc::Status translate_status = grpc::Status::OK;
  std::vector<v1::TranslateRequest> requests;
  std::vector<std::string> tokens;
};

class DeeplApiTest : public ::testing::Test {
 protected:
  std::string Word() {
    std::uniform_int_distribution<int> length(2, 9), letter('a', 'z');
    std::string w(length(rng_), ' ');
    for (char& c : w) c = static_cast<char>(letter(rng_));
    return w;
  }
  std::string Sentence() {
    std::string s = Word();
    for (int i = std::uniform_int_distribution<int>(2, 8)(rng_); i > 0; --i) s += " " + Word();
    return s + ".";
  }
  static HttpInput Form(std::multimap<std::string, std::string> params) {
    HttpInput in;
    in.method = "POST";
    in.path = "/v2/translate";
    in.content_type = "application/x-www-form-urlencoded";
    in.params = std::move(params);
    return in;
  }
  static HttpInput JsonBody(const Json& body) {
    HttpInput in;
    in.method = "POST";
    in.path = "/v2/translate";
    in.content_type = "application/json";
    in.body = body.dump();
    return in;
  }
  static Json Body(const HttpReply& r) { return Json::parse(r.body); }

  std::mt19937 rng_{7};
  FakeBackend backend_;
  DeeplApi api_{backend_};
};

TEST_F(DeeplApiTest, FormWithRepeatedTextGivesOneTranslationEachInOrder) {
  const std::vector<std::string> texts = {Sentence(), Sentence(), Sentence()};
  HttpInput in = Form({{"text", texts[0]},
                       {"text", texts[1]},
                       {"text", texts[2]},
                       {"target_lang", "DE"},
                       {"source_lang", "EN"}});
  in.authorization = "DeepL-Auth-Key secret:fx";
  const HttpReply r = api_.Translate(in);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json b = Body(r);
  ASSERT_EQ(b["translations"].size(), 3u);
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(b["translations"][i]["text"], "de:" + texts[i]);
    EXPECT_EQ(b["translations"][i]["detected_source_language"], "EN");
  }
  ASSERT_EQ(backend_.requests.size(), 1u);
  EXPECT_EQ(backend_.requests[0].source_language(), "en");
  EXPECT_EQ(backend_.requests[0].target_language(), "de");
  EXPECT_EQ(backend_.requests[0].document().format(), v1::DocumentOptions::FORMAT_TEXT);
  for (const std::string& token : backend_.tokens) EXPECT_EQ(token, "secret:fx");
}

TEST_F(DeeplApiTest, JsonArrayWithOptionsMapsOntoTheRequest) {
  const std::string text = "<p>" + Sentence() + "</p>";
  const HttpReply r = api_.Translate(JsonBody({{"text", {text}},
                                               {"target_lang", "en-us"},
                                               {"source_lang", "de"},
                                               {"tag_handling", "html"},
                                               {"split_sentences", "0"},
                                               {"formality", "prefer_less"},
                                               {"glossary_id", "abc"},
                                               {"show_billed_characters", true},
                                               {"model_type", "prefer_quality_optimized"},
                                               {"preserve_formatting", true},
                                               {"context", "ignored"},
                                               {"ignore_tags", "x, code"}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const v1::TranslateRequest& q = backend_.requests.at(0);
  EXPECT_EQ(q.target_language(), "en");
  EXPECT_EQ(q.document().format(), v1::DocumentOptions::FORMAT_HTML);
  EXPECT_FALSE(q.document().split_sentences());
  EXPECT_EQ(q.document().glossary_id(), "abc");
  ASSERT_EQ(q.document().untranslated_elements_size(), 2);
  EXPECT_EQ(q.document().untranslated_elements(1), "code");
  const Json t = Body(r)["translations"][0];
  EXPECT_EQ(t["billed_characters"], static_cast<int>(text.size()));
  EXPECT_EQ(t["model_type_used"], "quality_optimized");
  EXPECT_EQ(t["detected_source_language"], "DE");
}

TEST_F(DeeplApiTest, AnUnnamedSourceIsDetectedAmongTheServedOnes) {
  const HttpReply r = api_.Translate(JsonBody(
      {{"text", {"Das ist ein kleines Haus, und wir wohnen seit vielen Jahren gern darin."}},
       {"target_lang", "EN-GB"}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["translations"][0]["detected_source_language"], "DE");
  EXPECT_EQ(backend_.requests.at(0).source_language(), "de");
}

TEST_F(DeeplApiTest, ErrorsHaveDeeplsStatusesAndMessages) {
  struct Case {
    Json body;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{{"target_lang", "DE"}}, 400, "Parameter 'text' not specified."},
      {{{"text", "x"}}, 400, "Parameter 'target_lang' not specified."},
      {{{"text", "x"}, {"target_lang", "XX"}}, 400, "Value for 'target_lang' not supported."},
      {{{"text", "x"}, {"target_lang", "DE"}, {"source_lang", "QQ"}},
       400,
       "Value for 'source_lang' not supported."},
      {{{"text", "x"}, {"target_lang", "DE"}, {"tag_handling", "svg"}},
       400,
       "Value for 'tag_handling' not supported."},
      {{{"text", "x"}, {"target_lang", "DE"}, {"split_sentences", "2"}},
       400,
       "Value for 'split_sentences' not supported."},
      {{{"text", "x"}, {"target_lang", "DE"}, {"formality", "more"}},
       400,
       "'formality' is not supported for given 'target_lang'."},
      {{{"text", "x"}, {"target_lang", "DE"}, {"glossary_id", "g"}},
       400,
       "Use of a glossary requires the 'source_lang' parameter to be specified."},
      {{{"text", "x"}, {"target_lang", "PT-BR"}, {"source_lang", "DE"}}, 400, "No model here"},
  };
  for (const Case& c : cases) {
    const HttpReply r = api_.Translate(JsonBody(c.body));
    EXPECT_EQ(r.status, c.status) << c.body.dump() << " " << r.body;
    EXPECT_NE(Body(r)["message"].get<std::string>().find(c.says), std::string::npos)
        << c.body.dump() << " " << r.body;
  }
  EXPECT_TRUE(backend_.requests.empty());
  HttpInput not_object = JsonBody(Json::array({1}));
  EXPECT_EQ(api_.Translate(not_object).status, 400);

  const std::vector<std::pair<grpc::StatusCode, int>> mapped = {
      {grpc::StatusCode::UNAUTHENTICATED, 403},  {grpc::StatusCode::RESOURCE_EXHAUSTED, 429},
      {grpc::StatusCode::UNAVAILABLE, 503},      {grpc::StatusCode::DEADLINE_EXCEEDED, 504},
      {grpc::StatusCode::INVALID_ARGUMENT, 400}, {grpc::StatusCode::NOT_FOUND, 404},
      {grpc::StatusCode::INTERNAL, 500}};
  for (const auto& [code, status] : mapped) {
    backend_.translate_status = grpc::Status(code, "why");
    const HttpReply r =
        api_.Translate(JsonBody({{"text", "x"}, {"target_lang", "DE"}, {"source_lang", "EN"}}));
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_TRUE(Body(r)["message"].is_string());
  }
  backend_.list_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no");
  EXPECT_EQ(api_.Usage(Form({})).status, 403);
  EXPECT_EQ(api_.Languages(Form({})).status, 403);
}

TEST_F(DeeplApiTest, LanguagesListSourcesAndTargetsWithVariants) {
  HttpInput in = Form({});
  in.method = "GET";
  const Json sources = Body(api_.Languages(in));
  std::vector<std::string> codes;
  for (const Json& l : sources) codes.push_back(l["language"]);
  EXPECT_EQ(codes, (std::vector<std::string>{"DE", "EN"}));
  EXPECT_EQ(sources[1]["name"], "English");
  const Json targets = Body(api_.Languages(Form({{"type", "target"}})));
  codes.clear();
  for (const Json& l : targets) {
    codes.push_back(l["language"]);
    EXPECT_EQ(l["supports_formality"], false);
  }
  EXPECT_EQ(codes, (std::vector<std::string>{"DE", "EN-GB", "EN-US", "PT-BR", "PT-PT"}));
  EXPECT_EQ(api_.Languages(Form({{"type", "both"}})).status, 400);
  const Json pairs = Body(api_.GlossaryLanguagePairs(in))["supported_languages"];
  EXPECT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0], (Json{{"source_lang", "de"}, {"target_lang", "en"}}));
}

TEST_F(DeeplApiTest, UsageCountsTheCharactersTranslated) {
  EXPECT_EQ(Body(api_.Usage(Form({})))["character_count"], 0);
  int64_t sent = 0;
  for (int i = 0; i < 5; ++i) {
    const std::string text = Sentence() + " ä";
    sent += static_cast<int64_t>(text.size()) - 1;  // "ä" is two bytes, one character
    ASSERT_EQ(
        api_.Translate(Form({{"text", text}, {"target_lang", "DE"}, {"source_lang", "EN"}})).status,
        200);
  }
  const Json usage = Body(api_.Usage(Form({})));
  EXPECT_EQ(usage["character_count"], sent);
  EXPECT_GT(usage["character_limit"].get<int64_t>(), 0);
}

TEST_F(DeeplApiTest, DeeplxDialect) {
  HttpInput in =
      JsonBody({{"text", "Hello there."}, {"source_lang", "auto"}, {"target_lang", "DE"}});
  in.path = "/deeplx/translate";
  const HttpReply r = api_.DeeplxTranslate(in);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json b = Body(r);
  EXPECT_EQ(b["code"], 200);
  EXPECT_EQ(b["data"], "de:Hello there.");
  EXPECT_EQ(b["target_lang"], "DE");
  in = JsonBody({{"text", ""}, {"target_lang", "DE"}});
  EXPECT_EQ(Body(api_.DeeplxTranslate(in))["code"], 400);
}

TEST(DeeplPaths, OnlyDeeplsOwnRoutes) {
  for (const char* p : {"/v2/translate", "/v2/usage", "/v2/glossaries", "/v2/glossaries/x/entries",
                        "/v3/glossaries/x", "/deeplx/translate"}) {
    EXPECT_TRUE(IsDeeplPath(p)) << p;
  }
  for (const char* p : {"/v2/models", "/v2/glossariesx", "/v1/translate", "/translate", "/v3/x"}) {
    EXPECT_FALSE(IsDeeplPath(p)) << p;
  }
}

TEST(DeeplAuthKey, HeaderSchemesAndTheLegacyField) {
  HttpInput in;
  DeeplFields none = std::get<DeeplFields>(DeeplFields::Read(in));
  EXPECT_EQ(DeeplAuthKey(in, none), "");
  in.authorization = "  deepl-auth-key   k1  ";
  EXPECT_EQ(DeeplAuthKey(in, none), "k1");
  in.authorization = "Bearer k2";
  EXPECT_EQ(DeeplAuthKey(in, none), "k2");
  in.authorization = "";
  in.params = {{"auth_key", "k3"}};
  EXPECT_EQ(DeeplAuthKey(in, std::get<DeeplFields>(DeeplFields::Read(in))), "k3");
}

TEST(DeeplFields, JsonValuesAndCommaLists) {
  HttpInput in;
  in.content_type = "application/json; charset=utf-8";
  in.body = R"({"a": true, "b": 3, "c": ["x", "y"], "d": null, "e": {"k": 1},
               "ignore_tags": "x, y,,z"})";
  const auto f = std::get<DeeplFields>(DeeplFields::Read(in));
  EXPECT_EQ(f.Get("a"), "1");
  EXPECT_EQ(f.Get("b"), "3");
  EXPECT_EQ(f.GetAll("c"), (std::vector<std::string>{"x", "y"}));
  EXPECT_FALSE(f.Has("d"));
  EXPECT_EQ(Json::parse(*f.Get("e"))["k"], 1);
  EXPECT_EQ(f.GetList("ignore_tags"), (std::vector<std::string>{"x", "y", "z"}));
}

TEST(GlossaryEntries, TsvAndCsvRoundTripRandomTerms) {
  std::mt19937 rng(3);
  for (int round = 0; round < 50; ++round) {
    std::vector<text::Term> terms;
    for (int i = std::uniform_int_distribution<int>(1, 20)(rng); i > 0; --i) {
      std::string s, t;
      for (int k = std::uniform_int_distribution<int>(1, 8)(rng); k > 0; --k) {
        const char* parts[] = {"a", "b", " c", "ü", ",", "\"", "x"};
        s += parts[std::uniform_int_distribution<int>(0, 6)(rng)];
        t += parts[std::uniform_int_distribution<int>(0, 6)(rng)];
      }
      terms.push_back({"s" + s, "t" + t});
    }
    const std::string tsv = GlossaryEntriesTsv(terms);
    auto back = ParseGlossaryEntries(tsv, "tsv");
    ASSERT_TRUE(std::holds_alternative<std::vector<text::Term>>(back)) << tsv;
    const auto& got = std::get<std::vector<text::Term>>(back);
    ASSERT_EQ(got.size(), terms.size());
    std::string csv;
    for (const text::Term& x : terms) {
      auto quote = [](const std::string& v) {
        std::string q = "\"";
        for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
      };
      csv += quote(x.source) + "," + quote(x.target) + ",en,de\r\n";
    }
    auto from_csv = ParseGlossaryEntries(csv, "CSV");
    ASSERT_TRUE(std::holds_alternative<std::vector<text::Term>>(from_csv)) << csv;
    const auto& got_csv = std::get<std::vector<text::Term>>(from_csv);
    for (size_t i = 0; i < terms.size(); ++i) {
      EXPECT_EQ(got[i].source, terms[i].source);
      EXPECT_EQ(got[i].target, terms[i].target);
      EXPECT_EQ(got_csv[i].source, terms[i].source);
      EXPECT_EQ(got_csv[i].target, terms[i].target);
    }
  }
  EXPECT_TRUE(std::holds_alternative<DeeplError>(ParseGlossaryEntries("a\tb\tc", "tsv")));
  EXPECT_TRUE(std::holds_alternative<DeeplError>(ParseGlossaryEntries("a", "tsv")));
  EXPECT_TRUE(std::holds_alternative<DeeplError>(ParseGlossaryEntries("\"a,b", "csv")));
  EXPECT_TRUE(std::holds_alternative<DeeplError>(ParseGlossaryEntries("a,b,c", "csv")));
  EXPECT_TRUE(std::holds_alternative<DeeplError>(ParseGlossaryEntries("\n\n", "tsv")));
  EXPECT_TRUE(std::holds_alternative<DeeplError>(ParseGlossaryEntries("a\tb", "xlsx")));
  const auto d = std::get<DeeplError>(ParseGlossaryEntries("a\tb\n\nbad", "tsv"));
  EXPECT_NE(d.message.find("line 3"), std::string::npos) << d.message;
}

}  // namespace
}  // namespace transerve::http
