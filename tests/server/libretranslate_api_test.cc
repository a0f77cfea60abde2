// LibreTranslate's API over a recording fake backend: what each request becomes for the
// Translator service, and what each answer (or error) becomes for the client.
#include "server/http/libretranslate_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "server/http/libretranslate_request.h"

namespace transerve::http {
namespace {

using Json = nlohmann::json;

v1::ModelInfo Model(const std::string& name, const std::string& source, const std::string& target,
                    std::vector<std::string> targets = {}) {
  v1::ModelInfo m;
  m.set_name(name);
  m.set_source_language(source);
  m.set_target_language(target);
  for (const auto& t : targets) m.add_target_languages(t);
  return m;
}

// Answers each text with "<target>:<text>", and with num_hypotheses > 1 hypotheses that repeat
// themselves and the best one (which LibreTranslate's filtering drops).
class FakeBackend : public TranslatorBackend {
 public:
  FakeBackend() {
    *models.add_models() = Model("opus-mt-en-de", "en", "de", {"de"});
    *models.add_models() = Model("opus-mt-de-en", "de", "en", {"en"});
    *models.add_models() = Model("opus-mt-en-mul", "en", "mul", {"fr", "es", "it"});
    models.mutable_models(0)->set_is_default(true);
  }

  static std::string Translated(const std::string& target, const std::string& text) {
    return target + ":" + text;
  }
  static std::string Alternative(int i, const std::string& text) {
    return "alt" + std::to_string(i) + ":" + text;
  }

  grpc::Status Translate(const v1::TranslateRequest& request, const CallOptions& options,
                         v1::TranslateResponse* response) override {
    requests.push_back(request);
    translate_options.push_back(options);
    if (!translate_status.ok()) return translate_status;
    response->set_model(answer_model);
    for (int i = 0; i < request.texts_size() + extra_translations; ++i) {
      const std::string& text = request.texts(i % request.texts_size());
      v1::Translation* t = response->add_translations();
      t->set_text(Translated(request.target_language(), text));
      const int n = request.options().num_hypotheses();
      if (n > 1) {
        t->add_hypotheses()->set_text(t->text());
        for (int h = 1; h < n; ++h) {
          // Every other one repeats the previous, or is the best, or is empty.
          if (h % 3 == 0) {
            t->add_hypotheses()->set_text(h % 2 ? "" : t->text());
          } else {
            t->add_hypotheses()->set_text(Alternative((h + 1) / 2, text));
          }
        }
      }
    }
    return grpc::Status::OK;
  }
  std::unique_ptr<Stream> OpenStream(const v1::TranslateRequest&, const CallOptions&) override {
    return nullptr;  // not used by LibreTranslate's API
  }
  grpc::Status ListModels(const CallOptions& options, v1::ListModelsResponse* response) override {
    list_options.push_back(options);
    if (!list_status.ok()) return list_status;
    *response = models;
    return grpc::Status::OK;
  }
  bool Serving() override { return true; }
  bool KeyRequired() const override { return key_required; }

  v1::ListModelsResponse models;
  grpc::Status list_status = grpc::Status::OK;
  grpc::Status translate_status = grpc::Status::OK;
  int extra_translations = 0;
  std::string answer_model = "opus-mt-en-de";
  bool key_required = false;
  std::vector<v1::TranslateRequest> requests;
  std::vector<CallOptions> translate_options;
  std::vector<CallOptions> list_options;
};

class LtApiTest : public ::testing::Test {
 protected:
  LtApiTest() : seed_(std::random_device{}()), rng_(seed_) {}

  std::string Word() {
    std::uniform_int_distribution<int> length(2, 10), letter('a', 'z');
    std::string w(length(rng_), ' ');
    for (char& c : w) c = static_cast<char>(letter(rng_));
    return w;
  }
  std::string Text() {
    std::string t = Word();
    for (int i = std::uniform_int_distribution<int>(1, 6)(rng_); i > 0; --i) {
      t += ' ';
      t += Word();
    }
    return t;
  }
  std::vector<std::string> Texts() {
    std::vector<std::string> v(std::uniform_int_distribution<int>(2, 6)(rng_));
    for (auto& t : v) t = Text();
    return v;
  }
  int Between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  static HttpInput JsonInput(const Json& body) {
    HttpInput in;
    in.method = "POST";
    in.path = "/translate";
    in.content_type = "application/json";
    in.body = body.dump();
    return in;
  }
  static HttpInput FormInput(
      std::multimap<std::string, std::string> params,
      const std::string& content_type = "application/x-www-form-urlencoded") {
    HttpInput in;
    in.method = "POST";
    in.path = "/translate";
    in.content_type = content_type;
    in.params = std::move(params);
    return in;
  }

  // The reply's body, checked to be JSON of the reply's content type.
  static Json Body(const HttpReply& r) {
    EXPECT_EQ(r.content_type, "application/json");
    return Json::parse(r.body);
  }
  static void ExpectError(const HttpReply& r, int status, const std::string& message) {
    EXPECT_EQ(r.status, status) << r.body;
    const Json body = Body(r);
    ASSERT_TRUE(body.is_object() && body.contains("error") && body["error"].is_string()) << r.body;
    EXPECT_EQ(body["error"].get<std::string>(), message);
  }

  const unsigned seed_;
  std::mt19937 rng_;
  FakeBackend backend_;
};

#define TRACE_SEED() SCOPED_TRACE("seed " + std::to_string(seed_))

TEST_F(LtApiTest, JsonStringQMapsFieldByField) {
  TRACE_SEED();
  const std::string q = Text();
  const HttpReply r =
      LtTranslate(JsonInput({{"q", q}, {"source", "en"}, {"target", "de"}}), backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(backend_.requests.size(), 1u);
  const v1::TranslateRequest& req = backend_.requests[0];
  ASSERT_EQ(req.texts_size(), 1);
  EXPECT_EQ(req.texts(0), q);
  EXPECT_EQ(req.source_language(), "en");
  EXPECT_EQ(req.target_language(), "de");
  EXPECT_EQ(req.model(), "");
  EXPECT_EQ(req.document().format(), v1::DocumentOptions::FORMAT_TEXT);
  EXPECT_EQ(req.options().num_hypotheses(), 0);
  EXPECT_EQ(req.options().beam_size(), 0);
  EXPECT_EQ(Body(r), Json({{"translatedText", FakeBackend::Translated("de", q)}}));
}

TEST_F(LtApiTest, GlossaryIdExtensionReachesTheRequestFromJsonAndForm) {
  TRACE_SEED();
  const std::string id = Word();
  ASSERT_EQ(LtTranslate(
                JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}, {"glossary_id", id}}),
                backend_)
                .status,
            200);
  HttpInput form;
  form.method = "POST";
  form.path = "/translate";
  form.content_type = "application/x-www-form-urlencoded";
  form.params = {{"q", Text()}, {"source", "en"}, {"target", "de"}, {"glossary_id", id + "2"}};
  ASSERT_EQ(LtTranslate(form, backend_).status, 200);
  ASSERT_EQ(backend_.requests.size(), 2u);
  EXPECT_EQ(backend_.requests[0].document().glossary_id(), id);
  EXPECT_EQ(backend_.requests[1].document().glossary_id(), id + "2");
}

TEST_F(LtApiTest, JsonArrayQAnswersAnArrayInOrder) {
  TRACE_SEED();
  const auto texts = Texts();
  const HttpReply r =
      LtTranslate(JsonInput({{"q", texts}, {"source", "en"}, {"target", "de"}}), backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(backend_.requests.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(backend_.requests[0].texts().begin(),
                                     backend_.requests[0].texts().end()),
            texts);
  Json expected = Json::array();
  for (const auto& t : texts) expected.push_back(FakeBackend::Translated("de", t));
  EXPECT_EQ(Body(r), Json({{"translatedText", expected}}));
}

TEST_F(LtApiTest, FormBodiesAndQueryParametersReadTheSameFields) {
  TRACE_SEED();
  for (const std::string content_type :
       {"application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz", ""}) {
    SCOPED_TRACE(content_type);
    const std::string q = Text();
    const HttpReply r = LtTranslate(
        FormInput({{"q", q}, {"source", "de"}, {"target", "en"}, {"format", "html"}}, content_type),
        backend_);
    ASSERT_EQ(r.status, 200) << r.body;
    const v1::TranslateRequest& req = backend_.requests.back();
    ASSERT_EQ(req.texts_size(), 1);
    EXPECT_EQ(req.texts(0), q);
    EXPECT_EQ(req.source_language(), "de");
    EXPECT_EQ(req.target_language(), "en");
    EXPECT_EQ(req.document().format(), v1::DocumentOptions::FORMAT_HTML);
    EXPECT_EQ(Body(r), Json({{"translatedText", FakeBackend::Translated("en", q)}}));
  }
}

TEST_F(LtApiTest, FormTakesTheFirstOfARepeatedField) {
  TRACE_SEED();
  const std::string first = Text(), second = Text() + "x";
  const HttpReply r = LtTranslate(
      FormInput({{"q", first}, {"q", second}, {"source", "en"}, {"target", "de"}}), backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(backend_.requests.back().texts_size(), 1);
  EXPECT_EQ(backend_.requests.back().texts(0), first);
}

TEST_F(LtApiTest, FormLineBreaksBecomeNewlinesAsLibreTranslateCountsThem) {
  TRACE_SEED();
  const std::string a = Word(), b = Word(), c = Word(), d = Word();
  const HttpReply r =
      LtTranslate(FormInput({{"q", a + "\r\n" + b + "\r" + c + "\xE2\x80\xA8" + d + "\n"},
                             {"source", "en"},
                             {"target", "de"}}),
                  backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(backend_.requests.back().texts(0), a + "\n" + b + "\n" + c + "\n" + d);
  // A JSON q is taken as it is.
  const std::string raw = a + "\r\n" + b + "\n";
  ASSERT_EQ(
      LtTranslate(JsonInput({{"q", raw}, {"source", "en"}, {"target", "de"}}), backend_).status,
      200);
  EXPECT_EQ(backend_.requests.back().texts(0), raw);
}

TEST(NormalizeLineBreaks, FollowsPythonSplitlines) {
  EXPECT_EQ(NormalizeLineBreaks("a\n\nb"), "a\n\nb");
  EXPECT_EQ(NormalizeLineBreaks("a\n\n"), "a\n");
  EXPECT_EQ(NormalizeLineBreaks("\n"), "");
  EXPECT_EQ(NormalizeLineBreaks("a\vb\fc\x1c"
                                "d\xC2\x85"
                                "e\xE2\x80\xA9"
                                "f"),
            "a\nb\nc\nd\ne\nf");
  EXPECT_EQ(NormalizeLineBreaks("a\r\r\nb"), "a\n\nb");
  EXPECT_EQ(NormalizeLineBreaks("no breaks"), "no breaks");
}

TEST(ParseLtInteger, ReadsWhatPythonIntReads) {
  EXPECT_EQ(ParseLtInteger("3"), 3);
  EXPECT_EQ(ParseLtInteger("  +12 "), 12);
  EXPECT_EQ(ParseLtInteger("-4"), -4);
  EXPECT_EQ(ParseLtInteger("99999999999999999999999"), std::numeric_limits<long long>::max());
  EXPECT_EQ(ParseLtInteger(""), std::nullopt);
  EXPECT_EQ(ParseLtInteger("3.5"), std::nullopt);
  EXPECT_EQ(ParseLtInteger("0x10"), std::nullopt);
  EXPECT_EQ(ParseLtInteger("-"), std::nullopt);
}

const char kGerman[] =
    "Der schnelle braune Fuchs springt über den faulen Hund, und die Katze schläft den ganzen Tag "
    "auf dem warmen Sofa im Wohnzimmer.";
const char kGerman2[] =
    "Morgen fahren wir mit dem Zug in die Berge und wandern bis zum See, wenn das Wetter gut "
    "bleibt.";

TEST_F(LtApiTest, AutoDetectsAmongTheListedLanguagesAndTranslatesFromTheBest) {
  HttpReply r =
      LtTranslate(JsonInput({{"q", kGerman}, {"source", "auto"}, {"target", "en"}}), backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(backend_.requests.back().source_language(), "de");
  Json body = Body(r);
  EXPECT_EQ(body["translatedText"], FakeBackend::Translated("en", kGerman));
  const Json detected = body["detectedLanguage"];
  EXPECT_EQ(detected["language"], "de") << body.dump();
  EXPECT_GT(detected["confidence"].get<double>(), 0.0) << body.dump();
  EXPECT_LE(detected["confidence"].get<double>(), 100.0) << body.dump();
  // /detect's best answer for the same text.
  HttpInput detect = JsonInput({{"q", kGerman}});
  detect.path = "/detect";
  EXPECT_EQ(Body(LtDetect(detect, backend_))[0], detected);
  // An array q: the texts' detections merged, one detectedLanguage per text.
  r = LtTranslate(JsonInput({{"q", {kGerman, kGerman2}}, {"source", "auto"}, {"target", "en"}}),
                  backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(backend_.requests.back().source_language(), "de");
  body = Body(r);
  ASSERT_EQ(body["detectedLanguage"].size(), 2u) << body.dump();
  EXPECT_EQ(body["detectedLanguage"][0], body["detectedLanguage"][1]);
  EXPECT_EQ(body["detectedLanguage"][0]["language"], "de");
}

TEST_F(LtApiTest, AutoWithNothingDetectedTranslatesFromEnglishWithNoConfidence) {
  TRACE_SEED();
  const std::string q = std::to_string(Between(1, 1 << 30)) + " ... 42";
  HttpReply r = LtTranslate(JsonInput({{"q", q}, {"source", "auto"}, {"target", "de"}}), backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(backend_.requests.back().source_language(), "en");
  EXPECT_EQ(Body(r)["detectedLanguage"], Json({{"confidence", 0.0}, {"language", "en"}}));
  // A server that lists no English: LibreTranslate names the source as sent.
  backend_.models.Clear();
  *backend_.models.add_models() = Model("opus-mt-de-fr", "de", "fr");
  const size_t calls = backend_.requests.size();
  ExpectError(LtTranslate(JsonInput({{"q", q}, {"source", "auto"}, {"target", "fr"}}), backend_),
              400, "auto is not supported");
  EXPECT_EQ(backend_.requests.size(), calls);
}

TEST_F(LtApiTest, AutoDetectingALanguageWithoutAModelIntoTheTargetIs400) {
  const size_t calls = backend_.requests.size();
  ExpectError(
      LtTranslate(JsonInput({{"q", kGerman}, {"source", "auto"}, {"target", "fr"}}), backend_), 400,
      "French (fr) is not available as a target language from German (de)");
  EXPECT_EQ(backend_.requests.size(), calls);
}

TEST_F(LtApiTest, AlternativesAskForHypothesesAndComeBackFiltered) {
  TRACE_SEED();
  const int n = Between(1, 7);
  const std::string q = Text();
  const HttpReply r = LtTranslate(
      JsonInput({{"q", q}, {"source", "en"}, {"target", "de"}, {"alternatives", n}}), backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  const v1::DecodingOptions& o = backend_.requests.back().options();
  EXPECT_EQ(o.num_hypotheses(), n + 1);
  EXPECT_EQ(o.beam_size(), std::max(n + 1, 4));
  // The fake's hypotheses after the best repeat each other, the best one and "": each
  // alternative comes once, never empty, never the best.
  Json expected = Json::array();
  for (int h = 1, last = 0; h <= n; ++h) {
    if (h % 3 != 0 && (h + 1) / 2 != last) {
      last = (h + 1) / 2;
      expected.push_back(FakeBackend::Alternative(last, q));
    }
  }
  const Json body = Body(r);
  EXPECT_EQ(body["translatedText"], FakeBackend::Translated("de", q));
  EXPECT_EQ(body["alternatives"], expected);
}

TEST_F(LtApiTest, AlternativesOfAnArrayQAreAnArrayPerText) {
  TRACE_SEED();
  const auto texts = Texts();
  const HttpReply r = LtTranslate(
      FormInput({{"q", texts[0]}, {"source", "en"}, {"target", "de"}, {"alternatives", "1"}}),
      backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["alternatives"], Json({FakeBackend::Alternative(1, texts[0])}));
  const HttpReply batch = LtTranslate(
      JsonInput({{"q", texts}, {"source", "en"}, {"target", "de"}, {"alternatives", "2"}}),
      backend_);
  ASSERT_EQ(batch.status, 200) << batch.body;
  const Json body = Body(batch);
  ASSERT_EQ(body["alternatives"].size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(body["alternatives"][i], Json({FakeBackend::Alternative(1, texts[i])}));
  }
}

TEST_F(LtApiTest, NoAlternativesNoHypothesesAndNoField) {
  TRACE_SEED();
  for (const Json& alternatives : {Json(0), Json(-Between(1, 1000)), Json("-3"), Json(0.9)}) {
    SCOPED_TRACE(alternatives.dump());
    const HttpReply r = LtTranslate(
        JsonInput(
            {{"q", Text()}, {"source", "en"}, {"target", "de"}, {"alternatives", alternatives}}),
        backend_);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(Body(r).contains("alternatives"));
    EXPECT_EQ(backend_.requests.back().options().num_hypotheses(), 0);
  }
}

TEST_F(LtApiTest, AlternativesOverTheBeamLimitOrNotANumberAre400) {
  TRACE_SEED();
  LtSettings settings;
  settings.max_beam_size = Between(2, 16);
  const std::string limit = std::to_string(settings.max_beam_size - 1);
  for (const Json& alternatives :
       {Json(settings.max_beam_size), Json(1e300), Json("99999999999999999999999"),
        Json(18446744073709551615ull)}) {
    SCOPED_TRACE(alternatives.dump());
    ExpectError(LtTranslate(JsonInput({{"q", Text()},
                                       {"source", "en"},
                                       {"target", "de"},
                                       {"alternatives", alternatives}}),
                            backend_, settings),
                400, "Invalid request: alternatives parameter must be <= " + limit);
  }
  for (const Json& alternatives : {Json(nullptr), Json("abc"), Json("3.5"), Json::array()}) {
    SCOPED_TRACE(alternatives.dump());
    ExpectError(LtTranslate(JsonInput({{"q", Text()},
                                       {"source", "en"},
                                       {"target", "de"},
                                       {"alternatives", alternatives}}),
                            backend_),
                400, "Invalid request: alternatives parameter is not a number");
  }
  EXPECT_TRUE(backend_.requests.empty());
}

TEST_F(LtApiTest, TheAlternativesBeamIsCappedByTheServersBeam) {
  TRACE_SEED();
  LtSettings settings;
  settings.max_beam_size = 3;
  settings.alternatives_beam_size = 6;
  ASSERT_EQ(LtTranslate(
                JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}, {"alternatives", 1}}),
                backend_, settings)
                .status,
            200);
  EXPECT_EQ(backend_.requests.back().options().beam_size(), 3);
  EXPECT_EQ(backend_.requests.back().options().num_hypotheses(), 2);
}

TEST_F(LtApiTest, FormatIsTextHtmlOrA400) {
  TRACE_SEED();
  ASSERT_EQ(LtTranslate(
                JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}, {"format", "html"}}),
                backend_)
                .status,
            200);
  EXPECT_EQ(backend_.requests.back().document().format(), v1::DocumentOptions::FORMAT_HTML);
  ASSERT_EQ(LtTranslate(
                JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}, {"format", nullptr}}),
                backend_)
                .status,
            200);
  EXPECT_EQ(backend_.requests.back().document().format(), v1::DocumentOptions::FORMAT_TEXT);
  const std::string format = Word();
  ExpectError(
      LtTranslate(
          JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}, {"format", format}}),
          backend_),
      400, format + " format is not supported");
  ExpectError(
      LtTranslate(JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}, {"format", 5}}),
                  backend_),
      400, "5 format is not supported");
}

TEST_F(LtApiTest, MissingFieldsAre400InLibreTranslatesOrder) {
  TRACE_SEED();
  const std::string q = Text();
  for (const Json& empty : {Json(nullptr), Json(""), Json::array(), Json(0), Json(false)}) {
    SCOPED_TRACE(empty.dump());
    ExpectError(
        LtTranslate(JsonInput({{"q", empty}, {"source", "en"}, {"target", "de"}}), backend_), 400,
        "Invalid request: missing q parameter");
    ExpectError(LtTranslate(JsonInput({{"q", q}, {"source", empty}, {"target", "de"}}), backend_),
                400, "Invalid request: missing source parameter");
    ExpectError(LtTranslate(JsonInput({{"q", q}, {"source", "en"}, {"target", empty}}), backend_),
                400, "Invalid request: missing target parameter");
  }
  ExpectError(LtTranslate(JsonInput(Json::object()), backend_), 400,
              "Invalid request: missing q parameter");
  ExpectError(LtTranslate(FormInput({{"source", "en"}}), backend_), 400,
              "Invalid request: missing q parameter");
  ExpectError(LtTranslate(FormInput({{"q", q}, {"target", "de"}}), backend_), 400,
              "Invalid request: missing source parameter");
  ExpectError(LtTranslate(FormInput({{"q", q}, {"source", "en"}, {"target", ""}}), backend_), 400,
              "Invalid request: missing target parameter");
  EXPECT_TRUE(backend_.requests.empty());
}

TEST_F(LtApiTest, WrongJsonTypesAre400) {
  TRACE_SEED();
  const std::string types = "Invalid request: q parameter must be a string or an array of strings";
  ExpectError(LtTranslate(JsonInput({{"q", Between(1, 1000)}, {"source", "en"}, {"target", "de"}}),
                          backend_),
              400, types);
  ExpectError(LtTranslate(JsonInput({{"q", Json::array({Text(), Between(1, 9)})},
                                     {"source", "en"},
                                     {"target", "de"}}),
                          backend_),
              400, types);
  ExpectError(
      LtTranslate(JsonInput({{"q", Json::object({{"a", 1}})}, {"source", "en"}, {"target", "de"}}),
                  backend_),
      400, types);
  ExpectError(LtTranslate(JsonInput({{"q", Text()}, {"source", 7}, {"target", "de"}}), backend_),
              400, "7 is not supported");
  ExpectError(
      LtTranslate(JsonInput({{"q", Text()}, {"source", "en"}, {"target", Json::array({"de"})}}),
                  backend_),
      400, "[...] is not supported");
  EXPECT_TRUE(backend_.requests.empty());
}

TEST_F(LtApiTest, DeeplyNestedValuesAre400) {
  TRACE_SEED();
  const size_t depth = 100000 + Between(0, 1000);
  const std::string nested = std::string(depth, '[') + std::string(depth, ']');
  HttpInput in = JsonInput({});
  for (const std::string field : {"q", "source", "target", "format", "alternatives"}) {
    SCOPED_TRACE(field);
    Json body = {{"q", Text()}, {"source", "en"}, {"target", "de"}};
    body.erase(field);
    std::string text = body.dump();
    text.insert(1, "\"" + field + "\": " + nested + ",");
    in.body = text;
    const HttpReply r = LtTranslate(in, backend_);
    EXPECT_EQ(r.status, 400);
    EXPECT_TRUE(Body(r).contains("error"));
  }
  EXPECT_TRUE(backend_.requests.empty());
}

TEST_F(LtApiTest, BodiesThatAreNotAJsonObjectAre400) {
  TRACE_SEED();
  HttpInput in = JsonInput({});
  for (const std::string body :
       {"", "{", "{\"q\": \"a\",}", "\xff\xfe", "[1,2]", "\"q\"", "null"}) {
    in.body = body;
    const HttpReply r = LtTranslate(in, backend_);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_TRUE(Body(r).contains("error"));
  }
  // A number beyond double's range is a 400 too (nlohmann throws out_of_range, not parse_error).
  in.body = "{\"q\": \"x\", \"source\": \"en\", \"target\": \"de\", \"alternatives\": 1e400}";
  EXPECT_EQ(LtTranslate(in, backend_).status, 400);
  in.body = "[\"" + Text() + "\"]";
  ExpectError(LtTranslate(in, backend_), 400, "Invalid JSON format");
  in.content_type = "application/vnd.api+json; charset=utf-8";
  ExpectError(LtTranslate(in, backend_), 400, "Invalid JSON format");
  EXPECT_TRUE(backend_.requests.empty());
}

TEST_F(LtApiTest, LanguagesOutsideTheModelsAre400WithLibreTranslatesWording) {
  TRACE_SEED();
  ExpectError(LtTranslate(JsonInput({{"q", Text()}, {"source", "xx"}, {"target", "de"}}), backend_),
              400, "xx is not supported");
  ExpectError(LtTranslate(JsonInput({{"q", Text()}, {"source", "en"}, {"target", "ja"}}), backend_),
              400, "ja is not supported");
  ExpectError(
      LtTranslate(JsonInput({{"q", Text()}, {"source", "en"}, {"target", "klingon"}}), backend_),
      400, "klingon is not supported");
  // Both served, but not as a pair.
  ExpectError(LtTranslate(JsonInput({{"q", Text()}, {"source", "de"}, {"target", "fr"}}), backend_),
              400, "French (fr) is not available as a target language from German (de)");
  EXPECT_TRUE(backend_.requests.empty());
}

TEST_F(LtApiTest, LanguageCodesAreComparedCanonically) {
  TRACE_SEED();
  ASSERT_EQ(LtTranslate(JsonInput({{"q", Text()}, {"source", "eng"}, {"target", "DEU"}}), backend_)
                .status,
            200);
  EXPECT_EQ(backend_.requests.back().source_language(), "en");
  EXPECT_EQ(backend_.requests.back().target_language(), "de");
  // A multilingual model's target.
  ASSERT_EQ(
      LtTranslate(JsonInput({{"q", Text()}, {"source", "en"}, {"target", "it"}}), backend_).status,
      200);
  EXPECT_EQ(backend_.requests.back().target_language(), "it");
}

TEST_F(LtApiTest, ApiKeyAndDeadlineReachTheBackend) {
  TRACE_SEED();
  const std::string key = Word(), header_key = Word() + "h";
  HttpInput in = JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}, {"api_key", key}});
  in.timeout_ms = Between(1, 100000);
  ASSERT_EQ(LtTranslate(in, backend_).status, 200);
  EXPECT_EQ(backend_.translate_options.back().bearer_token, key);
  EXPECT_EQ(backend_.list_options.back().bearer_token, key);
  EXPECT_EQ(backend_.translate_options.back().timeout_ms, in.timeout_ms);
  // The Authorization header wins.
  in.authorization = "Bearer " + header_key;
  ASSERT_EQ(LtTranslate(in, backend_).status, 200);
  EXPECT_EQ(backend_.translate_options.back().bearer_token, header_key);
  // A form's and the query's api_key (with a JSON body as well).
  ASSERT_EQ(
      LtTranslate(FormInput({{"q", Text()}, {"source", "en"}, {"target", "de"}, {"api_key", key}}),
                  backend_)
          .status,
      200);
  EXPECT_EQ(backend_.translate_options.back().bearer_token, key);
  in = JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}});
  in.params = {{"api_key", key}};
  ASSERT_EQ(LtTranslate(in, backend_).status, 200);
  EXPECT_EQ(backend_.translate_options.back().bearer_token, key);
  // No key at all: none sent.
  ASSERT_EQ(
      LtTranslate(JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}}), backend_).status,
      200);
  EXPECT_EQ(backend_.translate_options.back().bearer_token, "");
}

struct Mapped {
  grpc::StatusCode code;
  int http;
};

TEST_F(LtApiTest, BackendErrorsMapToLibreTranslatesCodes) {
  TRACE_SEED();
  const Mapped cases[] = {
      {grpc::StatusCode::INVALID_ARGUMENT, 400},  {grpc::StatusCode::NOT_FOUND, 400},
      {grpc::StatusCode::OUT_OF_RANGE, 400},      {grpc::StatusCode::UNAUTHENTICATED, 403},
      {grpc::StatusCode::PERMISSION_DENIED, 403}, {grpc::StatusCode::RESOURCE_EXHAUSTED, 429},
      {grpc::StatusCode::UNAVAILABLE, 503},       {grpc::StatusCode::DEADLINE_EXCEEDED, 504},
      {grpc::StatusCode::CANCELLED, 499},         {grpc::StatusCode::INTERNAL, 500},
      {grpc::StatusCode::UNKNOWN, 500},
  };
  for (const Mapped& m : cases) {
    for (bool at_list : {false, true}) {
      SCOPED_TRACE(std::to_string(m.code) + (at_list ? " ListModels" : " Translate"));
      const std::string message = Text();
      backend_.list_status = at_list ? grpc::Status(m.code, message) : grpc::Status::OK;
      backend_.translate_status = at_list ? grpc::Status::OK : grpc::Status(m.code, message);
      const HttpReply r =
          LtTranslate(JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}}), backend_);
      EXPECT_EQ(r.status, m.http);
      const std::string error = Body(r)["error"].get<std::string>();
      if (m.http == 400 || m.http == 503 || m.http == 504 || m.http == 499) {
        EXPECT_EQ(error, message);
      } else if (m.http == 429) {
        EXPECT_EQ(error, "Slowdown: " + message);
      } else if (m.http == 500) {
        EXPECT_EQ(error, "Cannot translate text: " + message);
      }
    }
  }
}

TEST_F(LtApiTest, AKeyFailureSaysWhetherAKeyWasGiven) {
  TRACE_SEED();
  backend_.list_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, Text());
  ExpectError(LtTranslate(JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}}), backend_),
              403, "Please contact the server operator to get an API key");
  ExpectError(
      LtTranslate(
          JsonInput({{"q", Text()}, {"source", "en"}, {"target", "de"}, {"api_key", Word()}}),
          backend_),
      403, "Invalid API key");
  // Before the fields are checked, as LibreTranslate checks the key first.
  ExpectError(LtTranslate(JsonInput({{"source", "en"}}), backend_), 403,
              "Please contact the server operator to get an API key");
  ExpectError(LtDetect(FormInput({}), backend_), 403,
              "Please contact the server operator to get an API key");
  // Only a body that is not JSON comes before the key (the key is in it).
  HttpInput broken = JsonInput({});
  broken.body = "{";
  EXPECT_EQ(LtTranslate(broken, backend_).status, 400);
  ExpectError(LtTranslate(JsonInput({{"q", Text()}, {"source", "xx"}, {"target", "de"}}), backend_),
              403, "Please contact the server operator to get an API key");
}

TEST_F(LtApiTest, CharAndBatchLimits) {
  TRACE_SEED();
  LtSettings settings;
  settings.char_limit = Between(5, 50);
  settings.batch_limit = Between(1, 3);
  const std::string longest(settings.char_limit, 'a');
  // Characters, not bytes: "ü" is two bytes.
  std::string umlauts;
  for (int i = 0; i < settings.char_limit; ++i) umlauts += "\xC3\xBC";
  for (const std::string& ok : {longest, umlauts}) {
    EXPECT_EQ(
        LtTranslate(JsonInput({{"q", ok}, {"source", "en"}, {"target", "de"}}), backend_, settings)
            .status,
        200);
  }
  ExpectError(LtTranslate(JsonInput({{"q", longest + "b"}, {"source", "en"}, {"target", "de"}}),
                          backend_, settings),
              413,  // LibreTranslate says 400; the text itself is too large (docs/http.md)
              "Invalid request: request (" + std::to_string(settings.char_limit + 1) +
                  ") exceeds text limit (" + std::to_string(settings.char_limit) + ")");
  std::vector<std::string> batch(settings.batch_limit + 1, "x");
  ExpectError(LtTranslate(JsonInput({{"q", batch}, {"source", "en"}, {"target", "de"}}), backend_,
                          settings),
              400,
              "Invalid request: request (" + std::to_string(batch.size()) +
                  ") exceeds text limit (" + std::to_string(settings.batch_limit) + ")");
}

TEST_F(LtApiTest, ABackendAnsweringTheWrongNumberOfTextsIs500) {
  TRACE_SEED();
  backend_.extra_translations = Between(1, 3);
  const HttpReply r =
      LtTranslate(JsonInput({{"q", Texts()}, {"source", "en"}, {"target", "de"}}), backend_);
  EXPECT_EQ(r.status, 500);
  EXPECT_TRUE(Body(r).contains("error"));
}

TEST_F(LtApiTest, InvalidUtf8GoesToTheBackendAndComesBackAsValidJson) {
  TRACE_SEED();
  const std::string bad = Word() + "\xC3\x28\xFF" + Word();
  HttpInput in = FormInput({{"q", bad}, {"source", "en"}, {"target", "de"}});
  const HttpReply r = LtTranslate(in, backend_);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(backend_.requests.back().texts(0), bad);
  EXPECT_TRUE(Body(r)["translatedText"].is_string());
  // Echoed in an error, too.
  in.params = {{"q", Word()}, {"source", "\xFF\xFE"}, {"target", "de"}};
  const HttpReply e = LtTranslate(in, backend_);
  EXPECT_EQ(e.status, 400);
  EXPECT_TRUE(Body(e)["error"].is_string());
}

TEST_F(LtApiTest, DetectAnswersLanguagesAmongTheListedOnes) {
  const std::string german =
      "Der schnelle braune Fuchs springt über den faulen Hund, und die Katze schläft den ganzen "
      "Tag auf dem warmen Sofa im Wohnzimmer.";
  HttpInput in = JsonInput({{"q", german}});
  in.path = "/detect";
  HttpReply r = LtDetect(in, backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  Json body = Body(r);
  ASSERT_TRUE(body.is_array() && !body.empty()) << r.body;
  EXPECT_EQ(body[0]["language"], "de");
  EXPECT_GT(body[0]["confidence"].get<double>(), 50.0);
  EXPECT_LE(body[0]["confidence"].get<double>(), 100.0);
  // German is listed when a model only writes it, and LibreTranslate detects it then too.
  backend_.models.Clear();
  *backend_.models.add_models() = Model("opus-mt-en-de", "en", "de");
  body = Body(LtDetect(in, backend_));
  ASSERT_TRUE(body.is_array() && !body.empty()) << body.dump();
  EXPECT_EQ(body[0]["language"], "de") << body.dump();
  // A server without German models does not answer German.
  backend_.models.Clear();
  *backend_.models.add_models() = Model("opus-mt-en-fr", "en", "fr");
  *backend_.models.add_models() = Model("opus-mt-es-fr", "es", "fr");
  body = Body(LtDetect(in, backend_));
  for (const Json& d : body) EXPECT_NE(d["language"], "de") << body.dump();
}

TEST_F(LtApiTest, DetectWithNothingToDetectAnswersEnglishWithNoConfidence) {
  TRACE_SEED();
  HttpInput in = FormInput({{"q", std::to_string(Between(1, 1 << 30)) + " ... 42"}});
  EXPECT_EQ(Body(LtDetect(in, backend_)), Json::array({{{"confidence", 0.0}, {"language", "en"}}}));
  ExpectError(LtDetect(FormInput({}), backend_), 400, "Invalid request: missing q parameter");
  ExpectError(LtDetect(JsonInput({{"q", ""}}), backend_), 400,
              "Invalid request: missing q parameter");
  backend_.list_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no");
  ExpectError(LtDetect(in, backend_), 403, "Please contact the server operator to get an API key");
}

TEST_F(LtApiTest, DetectOfAnArrayMergesTheTexts) {
  const std::string english =
      "The quick brown fox jumps over the lazy dog while the cat sleeps all day long on the sofa.";
  const std::string german =
      "Der schnelle braune Fuchs springt über den faulen Hund, und die Katze schläft den ganzen "
      "Tag auf dem warmen Sofa im Wohnzimmer, solange die Sonne scheint und niemand stört.";
  const Json body = Body(LtDetect(JsonInput({{"q", {english, german}}}), backend_));
  ASSERT_TRUE(body.is_array()) << body.dump();
  std::vector<std::string> languages;
  for (const Json& d : body) languages.push_back(d["language"]);
  EXPECT_NE(std::find(languages.begin(), languages.end(), "en"), languages.end()) << body.dump();
  EXPECT_NE(std::find(languages.begin(), languages.end(), "de"), languages.end()) << body.dump();
  // The longer German text weighs more.
  EXPECT_EQ(languages.front(), "de") << body.dump();
}

TEST_F(LtApiTest, LanguagesListsEveryLanguageWithItsTargets) {
  const HttpReply r = LtLanguages(HttpInput{}, backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json expected = Json::parse(R"([
    {"code": "de", "name": "German", "targets": ["en"]},
    {"code": "en", "name": "English", "targets": ["de", "es", "fr", "it"]},
    {"code": "es", "name": "Spanish", "targets": []},
    {"code": "fr", "name": "French", "targets": []},
    {"code": "it", "name": "Italian", "targets": []}
  ])");
  EXPECT_EQ(Body(r), expected);
}

TEST_F(LtApiTest, AModelReadingAnyLanguageTranslatesFromEveryListedOne) {
  backend_.models.Clear();
  *backend_.models.add_models() = Model("opus-mt-mul-en", "mul", "en");
  *backend_.models.add_models() = Model("opus-mt-en-de", "en", "de");
  const Json body = Body(LtLanguages(HttpInput{}, backend_));
  EXPECT_EQ(body, Json::parse(R"([
    {"code": "de", "name": "German", "targets": ["en"]},
    {"code": "en", "name": "English", "targets": ["de"]}
  ])"));
  // Any source code goes (the model reads it), into English only.
  EXPECT_EQ(
      LtTranslate(JsonInput({{"q", "x"}, {"source", "fi"}, {"target", "en"}}), backend_).status,
      200);
  ExpectError(LtTranslate(JsonInput({{"q", "x"}, {"source", "fi"}, {"target", "de"}}), backend_),
              400, "German (de) is not available as a target language from Finnish (fi)");
}

TEST_F(LtApiTest, PairsThroughThePivotLanguageAreListedAndTranslated) {
  TRACE_SEED();
  backend_.models.set_pivot_language("en");
  const HttpReply r = LtLanguages(HttpInput{}, backend_);
  ASSERT_EQ(r.status, 200) << r.body;
  // German reaches every language English does; the languages only written have no source.
  EXPECT_EQ(Body(r), Json::parse(R"([
    {"code": "de", "name": "German", "targets": ["en", "es", "fr", "it"]},
    {"code": "en", "name": "English", "targets": ["de", "es", "fr", "it"]},
    {"code": "es", "name": "Spanish", "targets": []},
    {"code": "fr", "name": "French", "targets": []},
    {"code": "it", "name": "Italian", "targets": []}
  ])"));
  const std::string q = Text();
  const HttpReply t =
      LtTranslate(JsonInput({{"q", q}, {"source", "de"}, {"target", "fr"}}), backend_);
  ASSERT_EQ(t.status, 200) << t.body;
  // The server does the chaining: the request names the pair as asked.
  EXPECT_EQ(backend_.requests.back().source_language(), "de");
  EXPECT_EQ(backend_.requests.back().target_language(), "fr");
  // A model reading any language into the pivot reaches the pivot's targets from every source.
  backend_.models.Clear();
  backend_.models.set_pivot_language("en");
  *backend_.models.add_models() = Model("opus-mt-mul-en", "mul", "en");
  *backend_.models.add_models() = Model("opus-mt-en-de", "en", "de");
  EXPECT_EQ(
      LtTranslate(JsonInput({{"q", "x"}, {"source", "fi"}, {"target", "de"}}), backend_).status,
      200);
  // Without a pivot language it is refused as before.
  backend_.models.clear_pivot_language();
  ExpectError(LtTranslate(JsonInput({{"q", "x"}, {"source", "fi"}, {"target", "de"}}), backend_),
              400, "German (de) is not available as a target language from Finnish (fi)");
}

TEST_F(LtApiTest, LanguagesListsAsTheServerWhateverTheKey) {
  TRACE_SEED();
  const std::string key = Word();
  HttpInput in;
  in.params = {{"api_key", key}};
  ASSERT_EQ(LtLanguages(in, backend_).status, 200);
  EXPECT_TRUE(backend_.list_options.back().as_server);
  ASSERT_EQ(LtLanguages(HttpInput{}, backend_).status, 200);
  EXPECT_TRUE(backend_.list_options.back().as_server);
  backend_.list_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no");
  ExpectError(LtLanguages(in, backend_), 403, "Invalid API key");
  backend_.list_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "loading");
  ExpectError(LtLanguages(in, backend_), 503, "loading");
}

TEST_F(LtApiTest, FrontendSettingsHasLibreTranslatesFields) {
  TRACE_SEED();
  LtSettings settings;
  settings.char_limit = Between(100, 5000);
  settings.frontend_timeout_ms = Between(100, 5000);
  backend_.key_required = Between(0, 1) == 1;
  HttpReply r = LtFrontendSettings(HttpInput{}, backend_, settings);
  ASSERT_EQ(r.status, 200);
  Json expected = {
      {"charLimit", settings.char_limit},
      {"frontendTimeout", settings.frontend_timeout_ms},
      {"apiKeys", backend_.key_required},
      {"keyRequired", backend_.key_required},
      {"suggestions", false},
      {"filesTranslation", false},
      {"supportedFilesFormat", Json::array()},
      {"language",
       {{"source", {{"code", "auto"}, {"name", "Auto Detect"}}},
        {"target", {{"code", "de"}, {"name", "German"}}}}},
  };
  EXPECT_EQ(Body(r), expected);
  // Configured languages, when served.
  settings.frontend_language_source = "de";
  settings.frontend_language_target = "fr";
  expected["language"] = {{"source", {{"code", "de"}, {"name", "German"}}},
                          {"target", {{"code", "fr"}, {"name", "French"}}}};
  EXPECT_EQ(Body(LtFrontendSettings(HttpInput{}, backend_, settings)), expected);
  // The languages cannot be listed: still an answer.
  backend_.list_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no");
  r = LtFrontendSettings(HttpInput{}, backend_, settings);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(Body(r)["language"]["target"]["code"].is_string());
}

}  // namespace
}  // namespace transerve::http
