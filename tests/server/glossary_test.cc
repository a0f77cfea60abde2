// Glossaries through the real server, as users reach them: the gRPC Glossaries service and
// DeepL's routes over HTTP (v2 and v3), terms applied inside sentences, multi-sentence
// documents and HTML by every API, glossaries kept across a restart, and creates and deletes
// beside a translation load. The model is the tiny random fixture declared en-de: its output is
// noise, so what is checked is what the server guarantees whatever the model writes — each
// source term's target term comes out once per occurrence, the rest of the markup intact.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/testing/paths.h"
#include "tests/testing/server_process.h"
#include "transerve/v1/glossaries.grpc.pb.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::ServerProcess;

struct Server {
  Server(const fs::path& dir, const std::string& log, std::vector<std::string> extra = {}) {
    const std::string fixture = testing::SourceDir() + "/tests/fixtures/tiny-marian/model";
    fs::create_directories(dir);
    if (!fs::exists(dir / "ende")) fs::create_directory_symlink(fixture, dir / "ende");
    std::vector<std::string> flags = {absl::StrCat("--model_dir=", (dir / "ende").string()),
                                      "--model_languages=ende=en-de",
                                      absl::StrCat("--data_dir=", (dir / "data").string()),
                                      "--host=127.0.0.1",
                                      "--port=0",
                                      "--http_port=0",
                                      "--metrics_port=0",
                                      "--num_threads=2",
                                      "--dtype=float32"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    process = std::make_unique<ServerProcess>(flags, (dir / log).string());
    port = process->WaitServing(std::chrono::seconds(180));
    if (port > 0) http_port = process->ServingPort("http_port");
  }
  std::shared_ptr<grpc::Channel> Channel() const {
    return grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                               grpc::InsecureChannelCredentials());
  }
  std::unique_ptr<ServerProcess> process;
  int port = 0;
  int http_port = -1;
};

std::unique_ptr<grpc::ClientContext> Context(const std::string& token = "") {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(240));
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  return ctx;
}

// Random lower-case words, and target terms no model output holds by chance.
class Words {
 public:
  explicit Words(uint32_t seed) : rng_(seed) {}
  std::string Word() {
    static const char* kWords[] = {"the",  "house", "is",    "small", "and",  "green", "we",
                                   "city", "with",  "my",    "red",   "fast", "never", "light",
                                   "open", "file",  "sleep", "under", "over", "water"};
    return kWords[std::uniform_int_distribution<int>(0, 19)(rng_)];
  }
  std::string Term() {
    std::string t;
    for (int i = std::uniform_int_distribution<int>(5, 8)(rng_); i > 0; --i) {
      t.push_back(static_cast<char>(std::uniform_int_distribution<int>('a', 'z')(rng_)));
    }
    return t;
  }
  std::string Target() { return "Zq" + Term(); }
  int Between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
};

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// A sentence of random words with terms from `terms` put in at random, and how many times each
// term's index went in.
std::string SentenceWithTerms(Words& w, const std::vector<v1::GlossaryEntry>& terms,
                              std::vector<int>* uses) {
  std::vector<std::string> words;
  for (int i = w.Between(3, 9); i > 0; --i) {
    if (w.Between(0, 3) == 0) {
      const int k = w.Between(0, static_cast<int>(terms.size()) - 1);
      words.push_back(terms[k].source());
      ++(*uses)[k];
    } else {
      words.push_back(w.Word());
    }
  }
  return absl::StrJoin(words, " ") + ".";
}

v1::CreateGlossaryRequest RandomGlossary(Words& w, int n, const std::string& name) {
  v1::CreateGlossaryRequest r;
  r.set_name(name);
  v1::GlossaryDictionary* d = r.add_dictionaries();
  d->set_source_language("en");
  d->set_target_language("de");
  std::set<std::string> seen;
  while (d->entries_size() < n) {
    const std::string source = w.Term();
    if (!seen.insert(source).second) continue;
    v1::GlossaryEntry* e = d->add_entries();
    e->set_source(source);
    e->set_target(w.Target());
  }
  return r;
}

std::vector<v1::GlossaryEntry> Entries(const v1::CreateGlossaryRequest& r) {
  return {r.dictionaries(0).entries().begin(), r.dictionaries(0).entries().end()};
}

class GlossaryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / absl::StrCat("transerve_glossary_", getpid()));
    fs::remove_all(*dir_);
    server_ = new Server(*dir_, "server.log");
  }
  static void TearDownTestSuite() {
    delete server_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_GT(server_->port, 0) << server_->process->Log();
    seed_ = std::random_device{}();
  }
  std::unique_ptr<v1::Translator::Stub> Translator() {
    return v1::Translator::NewStub(server_->Channel());
  }
  std::unique_ptr<v1::Glossaries::Stub> Glossaries() {
    return v1::Glossaries::NewStub(server_->Channel());
  }
  httplib::Client Http() {
    httplib::Client c("127.0.0.1", server_->http_port);
    c.set_read_timeout(std::chrono::seconds(240));
    return c;
  }

  static fs::path* dir_;
  static Server* server_;
  uint32_t seed_ = 0;
};

fs::path* GlossaryTest::dir_ = nullptr;
Server* GlossaryTest::server_ = nullptr;

TEST_F(GlossaryTest, EveryTermComesOutAsItsTargetInSentencesDocumentsAndHtml) {
  SCOPED_TRACE(absl::StrCat("seed ", seed_));
  Words w(seed_);
  const auto create = RandomGlossary(w, 30, "products");
  v1::Glossary g;
  auto glossaries = Glossaries();
  ASSERT_TRUE(glossaries->CreateGlossary(Context().get(), create, &g).ok());
  const auto terms = Entries(create);
  auto stub = Translator();
  for (const bool html : {false, true}) {
    std::vector<int> uses(terms.size(), 0);
    v1::TranslateRequest r;
    r.set_source_language("en");
    r.set_target_language("de");
    r.mutable_options()->set_max_length(24);
    r.mutable_document()->set_glossary_id(g.glossary_id());
    if (html) r.mutable_document()->set_format(v1::DocumentOptions::FORMAT_HTML);
    std::vector<std::vector<int>> per_text;
    for (int t = 0; t < 6; ++t) {
      std::vector<int> mine(terms.size(), 0);
      std::string text;
      // A document of several sentences (as HTML: paragraphs, one term in bold).
      for (int s = w.Between(1, 3); s > 0; --s) {
        std::string sentence = SentenceWithTerms(w, terms, &mine);
        if (html) sentence = absl::StrCat("<p>", sentence, " <b>", terms[t].source(), "</b></p>");
        if (html) ++mine[t];
        absl::StrAppend(&text, text.empty() ? "" : " ", sentence);
      }
      r.add_texts(text);
      per_text.push_back(mine);
    }
    v1::TranslateResponse out;
    const grpc::Status s = stub->Translate(Context().get(), r, &out);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(out.translations_size(), r.texts_size());
    for (int t = 0; t < r.texts_size(); ++t) {
      const std::string& text = out.translations(t).text();
      for (size_t k = 0; k < terms.size(); ++k) {
        EXPECT_EQ(Count(text, terms[k].target()), static_cast<size_t>(per_text[t][k]))
            << terms[k].source() << " -> " << terms[k].target() << " in: " << r.texts(t)
            << "\n  gave: " << text;
        EXPECT_EQ(Count(text, terms[k].source()), 0u) << text;
      }
      if (html) {
        EXPECT_EQ(Count(text, "<b>"), Count(r.texts(t), "<b>")) << text;
        EXPECT_EQ(Count(text, "</p>"), Count(r.texts(t), "</p>")) << text;
      }
    }
  }
}

TEST_F(GlossaryTest, RequestEntriesWinATieAndCapitalisedTermsKeepTheirCase) {
  Words w(seed_);
  const auto create = RandomGlossary(w, 5, "stored");
  v1::Glossary g;
  ASSERT_TRUE(Glossaries()->CreateGlossary(Context().get(), create, &g).ok());
  const v1::GlossaryEntry& stored = create.dictionaries(0).entries(0);
  v1::TranslateRequest r;
  r.set_source_language("en");
  r.set_target_language("de");
  r.mutable_options()->set_max_length(24);
  r.mutable_document()->set_glossary_id(g.glossary_id());
  v1::GlossaryEntry* own = r.mutable_document()->add_glossary_entries();
  own->set_source(stored.source());
  own->set_target("Zqmine");
  std::string capitalised = stored.source();
  capitalised[0] = static_cast<char>(capitalised[0] - 'a' + 'A');
  const std::string other = create.dictionaries(0).entries(1).source();
  r.add_texts(absl::StrCat(capitalised, " is green. The ", stored.source(), " and the ",
                           absl::AsciiStrToUpper(other), " sleep."));
  v1::TranslateResponse out;
  ASSERT_TRUE(Translator()->Translate(Context().get(), r, &out).ok());
  const std::string& text = out.translations(0).text();
  EXPECT_EQ(Count(text, "Zqmine"), 2u) << text;  // the request's own term, both spellings
  EXPECT_EQ(Count(text, stored.target()), 0u) << text;
  EXPECT_EQ(Count(text, absl::AsciiStrToUpper(create.dictionaries(0).entries(1).target())), 1u)
      << text;
}

TEST_F(GlossaryTest, BadGlossaryUseIsAnsweredWithTheRightStatus) {
  Words w(seed_);
  auto stub = Translator();
  v1::TranslateRequest r;
  r.add_texts("the house is green.");
  r.set_source_language("en");
  r.set_target_language("de");
  r.mutable_document()->set_glossary_id("00000000-0000-4000-8000-000000000000");
  v1::TranslateResponse out;
  EXPECT_EQ(stub->Translate(Context().get(), r, &out).error_code(), grpc::StatusCode::NOT_FOUND);
  // A glossary without the request's pair.
  auto create = RandomGlossary(w, 3, "fr");
  create.mutable_dictionaries(0)->set_source_language("fr");
  v1::Glossary g;
  ASSERT_TRUE(Glossaries()->CreateGlossary(Context().get(), create, &g).ok());
  r.mutable_document()->set_glossary_id(g.glossary_id());
  const grpc::Status s = stub->Translate(Context().get(), r, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("fr-de"), std::string::npos) << s.error_message();
  // Bad entries in a request.
  r.mutable_document()->clear_glossary_id();
  v1::GlossaryEntry* e = r.mutable_document()->add_glossary_entries();
  e->set_source("house");
  e->set_target("two\nlines");
  EXPECT_EQ(stub->Translate(Context().get(), r, &out).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // And a bad glossary.
  create.mutable_dictionaries(0)->mutable_entries(0)->set_source(" padded");
  EXPECT_EQ(Glossaries()->CreateGlossary(Context().get(), create, &g).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(GlossaryTest, DeeplRoutesCreateListReadUpdateAndDeleteAndTranslateWithThem) {
  Words w(seed_);
  auto http = Http();
  const auto glossary = RandomGlossary(w, 8, "deepl");
  std::string tsv;
  for (const auto& e : glossary.dictionaries(0).entries()) {
    absl::StrAppend(&tsv, e.source(), "\t", e.target(), "\n");
  }
  // v2, as a form.
  auto res = http.Post("/v2/glossaries", httplib::Params{{"name", "deepl v2"},
                                                         {"source_lang", "EN"},
                                                         {"target_lang", "DE"},
                                                         {"entries", tsv},
                                                         {"entries_format", "tsv"}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  const Json created = Json::parse(res->body);
  const std::string id = created["glossary_id"];
  EXPECT_EQ(created["entry_count"], 8);
  EXPECT_EQ(created["source_lang"], "en");
  EXPECT_EQ(created["ready"], true);
  res = http.Get(("/v2/glossaries/" + id + "/entries").c_str());
  ASSERT_TRUE(res && res->status == 200);
  EXPECT_EQ(res->body + "\n", tsv);
  res = http.Get("/v2/glossaries");
  ASSERT_TRUE(res && res->status == 200);
  bool listed = false;
  const Json list = Json::parse(res->body);
  for (const Json& g : list["glossaries"]) listed = listed || g["glossary_id"] == id;
  EXPECT_TRUE(listed) << res->body;
  // Translating with it, as a form.
  const auto terms = Entries(glossary);
  std::vector<int> uses(terms.size(), 0);
  const std::string text = SentenceWithTerms(w, terms, &uses) + " " + terms[2].source() + ".";
  ++uses[2];
  res = http.Post(
      "/v2/translate",
      httplib::Params{
          {"text", text}, {"source_lang", "EN"}, {"target_lang", "DE"}, {"glossary_id", id}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::string translated = Json::parse(res->body)["translations"][0]["text"];
  for (size_t k = 0; k < terms.size(); ++k) {
    EXPECT_EQ(Count(translated, terms[k].target()), static_cast<size_t>(uses[k])) << translated;
  }
  // v3 as JSON: two dictionaries, then merged, replaced, one deleted, then all.
  Json v3 = {{"name", "multi"},
             {"dictionaries",
              {{{"source_lang", "en"},
                {"target_lang", "de"},
                {"entries", "a1\tb1\na2\tb2"},
                {"entries_format", "tsv"}},
               {{"source_lang", "en"},
                {"target_lang", "fr"},
                {"entries", "\"x,1\",y1\n"},
                {"entries_format", "csv"}}}}};
  res = http.Post("/v3/glossaries", v3.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  const std::string multi = Json::parse(res->body)["glossary_id"];
  EXPECT_EQ(Json::parse(res->body)["dictionaries"].size(), 2u);
  res = http.Get(("/v3/glossaries/" + multi + "/entries?source_lang=en&target_lang=fr").c_str());
  ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "");
  EXPECT_EQ(Json::parse(res->body)["dictionaries"][0]["entries"], "x,1\ty1");
  Json patch = {{"name", "renamed"},
                {"dictionaries",
                 {{{"source_lang", "en"}, {"target_lang", "de"}, {"entries", "a2\tc2\na3\tb3"}}}}};
  res = http.Patch(("/v3/glossaries/" + multi).c_str(), patch.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Json::parse(res->body)["name"], "renamed");
  EXPECT_EQ(Json::parse(res->body)["dictionaries"][0]["entry_count"], 3);
  res = http.Put(("/v3/glossaries/" + multi + "/dictionaries").c_str(),
                 Json{{"source_lang", "en"}, {"target_lang", "de"}, {"entries", "k\tv"}}.dump(),
                 "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Json::parse(res->body)["entry_count"], 1);
  res = http.Delete(
      ("/v3/glossaries/" + multi + "/dictionaries?source_lang=en&target_lang=fr").c_str());
  ASSERT_TRUE(res && res->status == 204) << (res ? res->body : "");
  res = http.Get(("/v2/glossaries/" + multi).c_str());  // one dictionary left: v2 shows it
  ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "");
  for (const std::string& gone : {id, multi}) {
    res = http.Delete(("/v2/glossaries/" + gone).c_str());
    ASSERT_TRUE(res && res->status == 204);
    res = http.Get(("/v2/glossaries/" + gone).c_str());
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404);
    EXPECT_TRUE(Json::parse(res->body)["message"].is_string());
  }
  // A large glossary as a form (as DeepL's client libraries send it): far over 8 KB.
  const auto large = RandomGlossary(w, 1000, "large");
  std::string large_tsv;
  for (const auto& e : large.dictionaries(0).entries()) {
    absl::StrAppend(&large_tsv, e.source(), "\t", e.target(), "\n");
  }
  ASSERT_GT(large_tsv.size(), 8u << 10);
  res = http.Post(
      "/v2/glossaries",
      httplib::Params{
          {"name", "large"}, {"source_lang", "en"}, {"target_lang", "de"}, {"entries", large_tsv}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  EXPECT_EQ(Json::parse(res->body)["entry_count"], 1000);
  // Errors in DeepL's shape.
  res = http.Post("/v2/glossaries", httplib::Params{{"name", "bad"},
                                                    {"source_lang", "EN"},
                                                    {"target_lang", "DE"},
                                                    {"entries", "a\tb\na\tc"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(Json::parse(res->body)["message"].get<std::string>().find("entries[1]"),
            std::string::npos);
  res = http.Post(
      "/v2/translate",
      httplib::Params{
          {"text", "x"}, {"target_lang", "DE"}, {"source_lang", "EN"}, {"glossary_id", id}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404) << res->body;
}

// DeepL's request shapes over HTTP (JSON arrays, HTML with ignore_tags, its errors), and the
// glossary through LibreTranslate's API, the native JSON API and transerve-client.
TEST_F(GlossaryTest, EveryApiTakesTheGlossaryAndDeeplShapesWork) {
  SCOPED_TRACE(absl::StrCat("seed ", seed_));
  Words w(seed_);
  const auto create = RandomGlossary(w, 6, "apis");
  v1::Glossary g;
  ASSERT_TRUE(Glossaries()->CreateGlossary(Context().get(), create, &g).ok());
  const auto terms = Entries(create);
  auto http = Http();
  // DeepL, JSON: an array of texts, HTML with an element kept as it is.
  const std::string kept = "<x id=\"1\">" + terms[1].source() + " stays</x>";
  const std::vector<std::string> texts = {
      "the " + terms[0].source() + " is green.",
      "<p>we " + terms[0].source() + " " + kept + " <b>" + terms[2].source() + "</b>.</p>"};
  Json body = {{"text", texts},          {"source_lang", "EN"},  {"target_lang", "DE"},
               {"tag_handling", "html"}, {"ignore_tags", {"x"}}, {"glossary_id", g.glossary_id()}};
  auto res = http.Post("/v2/translate", body.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const Json out = Json::parse(res->body)["translations"];
  ASSERT_EQ(out.size(), 2u);
  const std::string first = out[0]["text"], second = out[1]["text"];
  EXPECT_EQ(Count(first, terms[0].target()), 1u) << first;
  EXPECT_EQ(Count(second, terms[0].target()), 1u) << second;
  EXPECT_EQ(Count(second, kept), 1u) << second;  // ignore_tags: as it was, term and all
  // (Where the tags go is the alignment's: the random model's is noise.)
  EXPECT_EQ(Count(second, terms[2].target()), 1u) << second;
  EXPECT_EQ(Count(second, "<b>"), 1u) << second;
  EXPECT_EQ(Count(second, "</b>"), 1u) << second;
  // DeepL's errors, over HTTP.
  for (const auto& [bad, status] : std::vector<std::pair<Json, int>>{
           {{{"text", {"x"}}}, 400},
           {{{"text", {"x"}}, {"target_lang", "FR"}}, 400},
           {{{"text", {"x"}}, {"target_lang", "DE"}, {"glossary_id", g.glossary_id()}}, 400}}) {
    res = http.Post("/v2/translate", bad.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << bad.dump() << " " << res->body;
    EXPECT_TRUE(Json::parse(res->body)["message"].is_string()) << res->body;
  }
  res = http.Post("/v2/translate", std::string(20 << 20, 'a'), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  // LibreTranslate's API with the extension field, and the native JSON API.
  const std::string sentence = "a " + terms[3].source() + " and a " + terms[4].source() + ".";
  res = http.Post(
      "/translate",
      Json{{"q", sentence}, {"source", "en"}, {"target", "de"}, {"glossary_id", g.glossary_id()}}
          .dump(),
      "application/json");
  ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "");
  const std::string lt = Json::parse(res->body)["translatedText"];
  EXPECT_EQ(Count(lt, terms[3].target()) + Count(lt, terms[4].target()), 2u) << lt;
  res = http.Post("/v1/translate",
                  Json{{"texts", {sentence}},
                       {"sourceLanguage", "en"},
                       {"targetLanguage", "de"},
                       {"document", {{"glossaryId", g.glossary_id()}}}}
                      .dump(),
                  "application/json");
  ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "");
  const std::string native = Json::parse(res->body)["translations"][0]["text"];
  EXPECT_EQ(Count(native, terms[3].target()) + Count(native, terms[4].target()), 2u) << native;
  // transerve-client --glossary_id.
  const std::string cmd =
      absl::StrCat(testing::BinaryDir(), "/bin/transerve-client --target=127.0.0.1:", server_->port,
                   " --source_language=en --target_language=de", " --glossary_id=", g.glossary_id(),
                   " '", sentence, "'");
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string printed;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) printed.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << printed;
  EXPECT_EQ(Count(printed, terms[3].target()) + Count(printed, terms[4].target()), 2u) << printed;
}

TEST_F(GlossaryTest, CreatesAndDeletesBesideATranslationLoadLoseNothing) {
  Words w(seed_);
  const auto create = RandomGlossary(w, 20, "steady");
  v1::Glossary steady;
  ASSERT_TRUE(Glossaries()->CreateGlossary(Context().get(), create, &steady).ok());
  const auto terms = Entries(create);
  std::atomic<int> translated{0}, churned{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      Words mine(seed_ + c);
      auto stub = Translator();
      for (int i = 0; i < 6; ++i) {
        std::vector<int> uses(terms.size(), 0);
        v1::TranslateRequest r;
        r.add_texts(SentenceWithTerms(mine, terms, &uses));
        r.set_source_language("en");
        r.set_target_language("de");
        r.mutable_options()->set_max_length(16);
        r.mutable_document()->set_glossary_id(steady.glossary_id());
        v1::TranslateResponse out;
        const grpc::Status s = stub->Translate(Context().get(), r, &out);
        ASSERT_TRUE(s.ok()) << s.error_message();
        for (size_t k = 0; k < terms.size(); ++k) {
          EXPECT_EQ(Count(out.translations(0).text(), terms[k].target()),
                    static_cast<size_t>(uses[k]));
        }
        ++translated;
      }
    });
  }
  std::vector<std::thread> churn;
  for (int c = 0; c < 2; ++c) {
    churn.emplace_back([&, c] {
      Words mine(seed_ + 100 + c);
      auto glossaries = Glossaries();
      for (int i = 0; i < 15; ++i) {
        v1::Glossary g;
        ASSERT_TRUE(
            glossaries->CreateGlossary(Context().get(), RandomGlossary(mine, 10, "c"), &g).ok());
        v1::GlossaryRequest which;
        which.set_glossary_id(g.glossary_id());
        v1::DeleteGlossaryResponse deleted;
        ASSERT_TRUE(glossaries->DeleteGlossary(Context().get(), which, &deleted).ok());
        ++churned;
      }
    });
  }
  for (auto& t : callers) t.join();
  for (auto& t : churn) t.join();
  EXPECT_EQ(translated.load(), 24);
  EXPECT_EQ(churned.load(), 30);
  v1::ListGlossariesResponse list;
  ASSERT_TRUE(Glossaries()->ListGlossaries(Context().get(), {}, &list).ok());
  for (const v1::Glossary& g : list.glossaries()) EXPECT_NE(g.name(), "c");
}

// A server of its own: glossaries written by one process are served by the next on the same
// --data_dir; with tokens, glossary calls need one as translations do.
TEST(GlossaryRestartTest, GlossariesOutliveTheProcessAndNeedTheToken) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("transerve_glossary_r_", getpid());
  fs::remove_all(dir);
  Words w(std::random_device{}());
  const auto create = RandomGlossary(w, 40, "kept");
  std::string id;
  {
    Server first(dir, "first.log", {"--auth_token=sesame"});
    ASSERT_GT(first.port, 0) << first.process->Log();
    auto glossaries = v1::Glossaries::NewStub(first.Channel());
    v1::Glossary g;
    EXPECT_EQ(glossaries->CreateGlossary(Context().get(), create, &g).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    ASSERT_TRUE(glossaries->CreateGlossary(Context("sesame").get(), create, &g).ok());
    id = g.glossary_id();
    httplib::Client http("127.0.0.1", first.http_port);
    auto res = http.Get("/v2/glossaries");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 403);
    httplib::Headers key = {{"Authorization", "DeepL-Auth-Key sesame"}};
    res = http.Get("/v2/glossaries", key);
    ASSERT_TRUE(res && res->status == 200);
    ASSERT_EQ(first.process->Terminate(std::chrono::seconds(60)), 0);
  }
  Server second(dir, "second.log", {"--auth_token=sesame"});
  ASSERT_GT(second.port, 0) << second.process->Log();
  auto glossaries = v1::Glossaries::NewStub(second.Channel());
  v1::GlossaryEntriesRequest which;
  which.set_glossary_id(id);
  which.set_source_language("en");
  which.set_target_language("de");
  v1::GlossaryDictionary d;
  ASSERT_TRUE(glossaries->GetGlossaryEntries(Context("sesame").get(), which, &d).ok());
  ASSERT_EQ(d.entries_size(), 40);
  for (int i = 0; i < d.entries_size(); ++i) {
    EXPECT_EQ(d.entries(i).source(), create.dictionaries(0).entries(i).source());
    EXPECT_EQ(d.entries(i).target(), create.dictionaries(0).entries(i).target());
  }
  const auto terms = Entries(create);
  std::vector<int> uses(terms.size(), 0);
  v1::TranslateRequest r;
  r.add_texts(SentenceWithTerms(w, terms, &uses));
  r.set_source_language("en");
  r.set_target_language("de");
  r.mutable_options()->set_max_length(16);
  r.mutable_document()->set_glossary_id(id);
  v1::TranslateResponse out;
  ASSERT_TRUE(
      v1::Translator::NewStub(second.Channel())->Translate(Context("sesame").get(), r, &out).ok());
  for (size_t k = 0; k < terms.size(); ++k) {
    EXPECT_EQ(Count(out.translations(0).text(), terms[k].target()), static_cast<size_t>(uses[k]));
  }
  second.process.reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace transerve
