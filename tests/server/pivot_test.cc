// Pivoting through the real server: two models declared fr-en ("fren", the tiny fixture) and
// en-de ("ende", the variant fixture, another model), and a caller asking for fr-de, which no
// model translates. Each answer must equal the two legs asked for one after the other; markup
// and protected spans must come through both legs; streaming, many callers mixing pivoted and
// direct pairs, LibreTranslate's API, the metrics and the errors are checked as a user sees them.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/testing/paths.h"
#include "tests/testing/server_process.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

using testing::ServerProcess;

constexpr int kMaxLength = 24;

std::vector<std::string> RandomTexts(int n, std::mt19937& rng) {
  static const char* kWords[] = {"le",      "chat",   "est",     "petit",   "et",
                                 "vert",    "nous",   "la",      "ville",   "avec",
                                 "mes",     "amis",   "rouge",   "rapide",  "jamais",
                                 "lumiere", "ouvrir", "fichier", "serveur", "maison"};
  std::uniform_int_distribution<int> length(1, 9);
  std::uniform_int_distribution<int> word(0, std::size(kWords) - 1);
  std::vector<std::string> texts;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> words;
    for (int w = length(rng); w > 0; --w) words.push_back(kWords[word(rng)]);
    texts.push_back(absl::StrCat(absl::StrJoin(words, " "), "."));
  }
  return texts;
}

struct Server {
  Server(const std::filesystem::path& dir, const std::string& name,
         std::vector<std::string> extra) {
    const std::string fixtures = testing::SourceDir() + "/tests/fixtures/";
    std::filesystem::create_directories(dir);
    std::filesystem::create_directory_symlink(fixtures + "tiny-marian/model", dir / "fren");
    std::filesystem::create_directory_symlink(fixtures + "tiny-marian-variant/model", dir / "ende");
    std::vector<std::string> flags = {
        absl::StrCat("--model_dir=", (dir / "fren").string(), ",", (dir / "ende").string()),
        "--model_languages=fren=fr-en,ende=en-de",
        "--host=127.0.0.1",
        "--port=0",
        "--http_port=0",
        "--metrics_port=0",
        "--num_threads=2",
        "--dtype=float32"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    process = std::make_unique<ServerProcess>(flags, (dir / (name + ".log")).string());
    port = process->WaitServing(std::chrono::seconds(180));
    if (port > 0) {
      http_port = process->ServingPort("http_port");
      metrics_port = process->ServingPort("metrics_port");
    }
  }
  std::unique_ptr<v1::Translator::Stub> Stub() const {
    return v1::Translator::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  std::unique_ptr<ServerProcess> process;
  int port = 0;
  int http_port = -1;
  int metrics_port = -1;
};

grpc::Status Translate(v1::Translator::Stub* stub, const v1::TranslateRequest& r,
                       v1::TranslateResponse* out) {
  grpc::ClientContext ctx;
  // Generous: under ThreadSanitizer everything runs many times slower.
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(240));
  return stub->Translate(&ctx, r, out);
}

v1::TranslateRequest Request(const std::vector<std::string>& texts, int beam) {
  v1::TranslateRequest r;
  for (const auto& t : texts) r.add_texts(t);
  r.mutable_options()->set_beam_size(beam);
  r.mutable_options()->set_max_length(kMaxLength);
  r.mutable_options()->set_return_scores(true);
  return r;
}

v1::TranslateRequest Pivoted(const std::vector<std::string>& texts, int beam) {
  v1::TranslateRequest r = Request(texts, beam);
  r.set_source_language("fr");
  r.set_target_language("de");
  return r;
}

// The two legs called one after the other: `texts` by fren, then each of its translations by
// ende as one segment, as the server's second leg takes it (no splitting, no protected spans).
// `blank` tells which English translations were empty: the server answers an empty text with no
// tokens at all, the second leg answers an empty segment with the EOS alone.
std::vector<v1::Translation> LegByLeg(v1::Translator::Stub* stub,
                                      const std::vector<std::string>& texts, int beam,
                                      std::vector<bool>* blank) {
  v1::TranslateRequest first = Request(texts, beam);
  first.set_model("fren");
  v1::TranslateResponse english;
  const grpc::Status s = Translate(stub, first, &english);
  EXPECT_TRUE(s.ok()) << s.error_message();
  std::vector<v1::Translation> out;
  for (const v1::Translation& t : english.translations()) {
    blank->push_back(t.text().find_first_not_of(" ") == std::string::npos);
    v1::TranslateRequest second = Request({t.text()}, beam);
    second.set_model("ende");
    second.mutable_document()->set_split_sentences(false);
    second.mutable_document()->set_protect_spans(false);
    v1::TranslateResponse german;
    const grpc::Status g = Translate(stub, second, &german);
    EXPECT_TRUE(g.ok()) << g.error_message();
    if (german.translations_size() == 1) out.push_back(german.translations(0));
  }
  return out;
}

std::vector<int32_t> Ids(const v1::Translation& t) {
  return std::vector<int32_t>(t.token_ids().begin(), t.token_ids().end());
}

std::string Fetch(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(std::chrono::seconds(60));
  auto res = c.Get(path.c_str());
  return res && res->status == 200 ? res->body : "";
}

class PivotTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     absl::StrCat("transerve_pivot_", getpid()));
    std::filesystem::remove_all(*dir_);
    server_ = new Server(*dir_ / "main", "server", {});
  }
  static void TearDownTestSuite() {
    delete server_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override { ASSERT_GT(server_->port, 0) << server_->process->Log(); }

  static std::filesystem::path* dir_;
  static Server* server_;
};

std::filesystem::path* PivotTest::dir_ = nullptr;
Server* PivotTest::server_ = nullptr;

TEST_F(PivotTest, APivotEqualsItsTwoLegsOneAfterTheOther) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937 rng(seed);
  auto stub = server_->Stub();
  int compared = 0;
  for (int beam : {1, 4}) {
    const std::vector<std::string> texts = RandomTexts(6, rng);
    v1::TranslateResponse pivoted;
    const grpc::Status s = Translate(stub.get(), Pivoted(texts, beam), &pivoted);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(pivoted.model(), "fren+ende");
    EXPECT_EQ(pivoted.pivot().language(), "en");
    EXPECT_EQ(pivoted.pivot().first_model(), "fren");
    EXPECT_EQ(pivoted.pivot().second_model(), "ende");
    std::vector<bool> blank;
    const std::vector<v1::Translation> expected = LegByLeg(stub.get(), texts, beam, &blank);
    ASSERT_EQ(expected.size(), texts.size());
    ASSERT_EQ(pivoted.translations_size(), static_cast<int>(texts.size()));
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(pivoted.translations(i).text(), expected[i].text()) << texts[i] << " beam " << beam;
      if (blank[i]) {
        EXPECT_EQ(pivoted.translations(i).token_ids_size(), 1) << texts[i];
        continue;
      }
      ++compared;
      EXPECT_EQ(Ids(pivoted.translations(i)), Ids(expected[i])) << texts[i];
      EXPECT_FLOAT_EQ(pivoted.translations(i).score(), expected[i].score()) << texts[i];
    }
  }
  // The first leg said something most of the time: the comparison was not of empty texts.
  EXPECT_GE(compared, 4);
  // A direct pair is still served by its model alone.
  v1::TranslateRequest direct = Request(RandomTexts(1, rng), 1);
  direct.set_source_language("en");
  direct.set_target_language("de");
  v1::TranslateResponse one;
  ASSERT_TRUE(Translate(stub.get(), direct, &one).ok());
  EXPECT_EQ(one.model(), "ende");
  EXPECT_FALSE(one.has_pivot());
}

TEST_F(PivotTest, MarkupProtectedSpansAndAlignmentsComeThroughBothLegs) {
  auto stub = server_->Stub();
  v1::TranslateRequest html = Pivoted(
      {"<p>Le <b>chat</b> est sur https://example.org/chat et la <i>maison</i> est rouge.</p>"}, 1);
  html.mutable_document()->set_format(v1::DocumentOptions::FORMAT_HTML);
  v1::TranslateResponse out;
  ASSERT_TRUE(Translate(stub.get(), html, &out).ok());
  const std::string& text = out.translations(0).text();
  EXPECT_TRUE(absl::StartsWith(text, "<p>") && absl::EndsWith(text, "</p>")) << text;
  for (const char* part : {"<b>", "</b>", "<i>", "</i>", "https://example.org/chat"}) {
    size_t count = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
      ++count;
    }
    EXPECT_EQ(count, 1u) << part << " in " << text;
  }
  // The alignment points from the target's tokens (ende's) at the source's (fren's).
  v1::TranslateRequest aligned = Pivoted({"le chat est rouge."}, 1);
  aligned.mutable_options()->set_return_alignment(true);
  ASSERT_TRUE(Translate(stub.get(), aligned, &out).ok());
  const v1::Alignment& a = out.translations(0).alignment();
  v1::TranslateRequest first = Request({"le chat est rouge."}, 1);
  first.set_model("fren");
  first.mutable_options()->set_return_alignment(true);
  v1::TranslateResponse english;
  ASSERT_TRUE(Translate(stub.get(), first, &english).ok());
  const v1::Alignment& a1 = english.translations(0).alignment();
  ASSERT_EQ(a.source_length(), a1.source_length());
  EXPECT_EQ(std::vector<std::string>(a.source_tokens().begin(), a.source_tokens().end()),
            std::vector<std::string>(a1.source_tokens().begin(), a1.source_tokens().end()));
  EXPECT_EQ(a.target_length(), out.translations(0).target_token_count());
  ASSERT_EQ(a.weights_size(), a.source_length() * a.target_length());
  for (int t = 0; t < a.target_length(); ++t) {
    float row = 0;
    for (int s = 0; s < a.source_length(); ++s) {
      const float w = a.weights(t * a.source_length() + s);
      EXPECT_GE(w, 0.0f);
      row += w;
    }
    EXPECT_LE(row, 1.0f + 1e-3f) << "target token " << t;
    EXPECT_GT(row, 0.0f) << "target token " << t;
  }
}

// A glossary names the request's pair, fr to de, not either leg's: its terms come out in the
// final language once per occurrence, in plain text and HTML.
TEST_F(PivotTest, GlossaryTermsOfThePivotedPairComeOutInTheTargetLanguage) {
  auto stub = server_->Stub();
  for (const bool html : {false, true}) {
    v1::TranslateRequest r =
        Pivoted({html ? "<p>Le <b>serveur</b> et la maison.</p> <p>Un serveur rouge.</p>"
                      : "Le serveur et la maison. Un serveur rouge, Serveur vert."},
                1);
    if (html) r.mutable_document()->set_format(v1::DocumentOptions::FORMAT_HTML);
    v1::GlossaryEntry* e = r.mutable_document()->add_glossary_entries();
    e->set_source("serveur");
    e->set_target("Zqdienstrechner");
    v1::TranslateResponse out;
    const grpc::Status s = Translate(stub.get(), r, &out);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_TRUE(out.has_pivot());
    const std::string& text = out.translations(0).text();
    size_t count = 0;
    for (size_t at = text.find("Zqdienstrechner"); at != std::string::npos;
         at = text.find("Zqdienstrechner", at + 1)) {
      ++count;
    }
    EXPECT_EQ(count, html ? 2u : 3u) << text;
    EXPECT_EQ(text.find("serveur"), std::string::npos) << text;
  }
}

TEST_F(PivotTest, ManyCallersMixPivotedAndDirectPairsUnaryAndStreamed) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937 rng(seed);
  struct Call {
    v1::TranslateRequest request;
    bool stream = false;
    std::vector<std::string> expected;
  };
  std::vector<Call> calls;
  auto stub = server_->Stub();
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"fr", "de"}, {"fr", "en"}, {"en", "de"}};
  for (int i = 0; i < 24; ++i) {
    Call c;
    const auto& [source, target] = pairs[i % pairs.size()];
    c.request = Request(RandomTexts(1 + i % 3, rng), i % 4 == 3 ? 4 : 1);
    c.request.set_source_language(source);
    c.request.set_target_language(target);
    c.stream = i % 2 == 1;
    // Alone on the server first: what every answer under load must say.
    v1::TranslateResponse alone;
    const grpc::Status s = Translate(stub.get(), c.request, &alone);
    ASSERT_TRUE(s.ok()) << s.error_message();
    for (const auto& t : alone.translations()) c.expected.push_back(t.text());
    calls.push_back(std::move(c));
  }
  std::vector<std::string> failures(calls.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < calls.size(); ++i) {
    threads.emplace_back([&, i] {
      auto own = server_->Stub();
      const Call& c = calls[i];
      std::vector<std::string> got(c.request.texts_size());
      const std::string model =
          c.request.target_language() == "de" && c.request.source_language() == "fr" ? "fren+ende"
                                                                                     : "";
      if (c.stream) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(240));
        auto reader = own->TranslateStream(&ctx, c.request);
        v1::TranslateStreamResponse m;
        std::vector<std::string> joined(c.request.texts_size());
        while (reader->Read(&m)) {
          joined[m.index()] += m.text_delta();
          if (!model.empty() && (m.model() != model || m.pivot().language() != "en")) {
            failures[i] = "a chunk without the pivot: " + m.model();
          }
          if (m.done()) got[m.index()] = m.translation().text();
        }
        const grpc::Status s = reader->Finish();
        if (!s.ok()) failures[i] = s.error_message();
        if (joined != got) failures[i] = "the deltas do not add up to the translation";
      } else {
        v1::TranslateResponse r;
        const grpc::Status s = Translate(own.get(), c.request, &r);
        if (!s.ok()) failures[i] = s.error_message();
        for (int k = 0; k < r.translations_size(); ++k) got[k] = r.translations(k).text();
      }
      if (failures[i].empty() && got != c.expected) {
        failures[i] = absl::StrCat("got '", absl::StrJoin(got, "|"), "', alone '",
                                   absl::StrJoin(c.expected, "|"), "'");
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(failures[i], "") << "call " << i << " " << calls[i].request.source_language() << "-"
                               << calls[i].request.target_language();
  }
}

TEST_F(PivotTest, LibreTranslatesApiListsAndTranslatesThePivotedPair) {
  ASSERT_GT(server_->http_port, 0);
  const auto languages = nlohmann::json::parse(Fetch(server_->http_port, "/languages"));
  bool listed = false;
  for (const auto& l : languages) {
    if (l["code"] == "fr") {
      const auto targets = l["targets"].get<std::vector<std::string>>();
      listed = std::find(targets.begin(), targets.end(), "de") != targets.end();
    }
  }
  EXPECT_TRUE(listed) << languages.dump();
  httplib::Client c("127.0.0.1", server_->http_port);
  c.set_read_timeout(std::chrono::seconds(120));
  const std::string q = "le chat est petit et la maison est rouge.";
  auto res =
      c.Post("/translate", nlohmann::json({{"q", q}, {"source", "fr"}, {"target", "de"}}).dump(),
             "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto stub = server_->Stub();
  v1::TranslateResponse grpc_answer;
  v1::TranslateRequest same = Pivoted({q}, 0);
  same.clear_options();
  ASSERT_TRUE(Translate(stub.get(), same, &grpc_answer).ok());
  EXPECT_EQ(nlohmann::json::parse(res->body)["translatedText"], grpc_answer.translations(0).text());
}

TEST_F(PivotTest, MetricsNameThePivotAndEachLegCountsItsTokens) {
  auto tokens = [](const std::string& metrics, const std::string& model) {
    const std::string series =
        absl::StrCat("transerve_source_tokens_total{model=\"", model, "\"} ");
    const size_t at = metrics.find(series);
    return at == std::string::npos ? 0.0 : std::stod(metrics.substr(at + series.size()));
  };
  const std::string before = Fetch(server_->metrics_port, "/metrics");
  auto stub = server_->Stub();
  v1::TranslateResponse out;
  ASSERT_TRUE(Translate(stub.get(), Pivoted({"la ville est verte."}, 1), &out).ok());
  const std::string after = Fetch(server_->metrics_port, "/metrics");
  EXPECT_TRUE(absl::StrContains(after, "model=\"fren+ende\"")) << after;
  EXPECT_GT(tokens(after, "fren"), tokens(before, "fren"));
  EXPECT_GT(tokens(after, "ende"), tokens(before, "ende"));
}

TEST_F(PivotTest, APairWithoutALegIsNotFoundAndNoPivotLanguageMeansNone) {
  auto stub = server_->Stub();
  v1::TranslateRequest r = Pivoted({"le chat."}, 1);
  r.set_target_language("ja");
  v1::TranslateResponse out;
  grpc::Status s = Translate(stub.get(), r, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "nor through 'en'")) << s.error_message();
  // A named model is never chained.
  r = Pivoted({"le chat."}, 1);
  r.set_model("fren");
  EXPECT_EQ(Translate(stub.get(), r, &out).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  Server none(*dir_ / "none", "server", {"--pivot_language="});
  ASSERT_GT(none.port, 0) << none.process->Log();
  auto none_stub = none.Stub();
  s = Translate(none_stub.get(), Pivoted({"le chat."}, 1), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
}

}  // namespace
}  // namespace transerve
