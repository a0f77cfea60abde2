// Documents through the real transerve-server, as users send them (issue 17): the shipped
// English->German model and a second model routed to by language; paragraphs with their layout,
// HTML, placeholders, language routing and detection, streaming, long sentences and limits,
// and many callers at once mixing all of it. Every answer is checked against what the server
// answers for the same sentences alone, not against fixed strings.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/testing/paths.h"
#include "tests/testing/sentence_pool.h"
#include "tests/testing/server_process.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

using testing::ServerProcess;

constexpr const auto& kSentences = testing::kSentencePool;

class DocumentsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     absl::StrCat("transerve_documents_", getpid()));
    std::filesystem::create_directories(*dir_);
    const std::string models =
        absl::StrCat(testing::SourceDir(), "/models/en-de-small,", testing::SourceDir(),
                     "/tests/fixtures/tiny-marian/model");
    server_ = new ServerProcess(
        {"--model_dir=" + models, "--model_languages=model=fr-es", "--host=127.0.0.1", "--port=0",
         "--metrics_port=-1", "--http_port=-1", "--num_threads=2", "--max_source_tokens=40",
         "--max_sentences_per_request=40"},
        (*dir_ / "server.log").string());
    port_ = server_->WaitServing(std::chrono::seconds(180));
  }
  static void TearDownTestSuite() {
    delete server_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_GT(port_, 0) << server_->Log();
    stub_ = v1::Translator::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  }

  static v1::TranslateRequest Request(const std::vector<std::string>& texts) {
    v1::TranslateRequest r;
    for (const auto& t : texts) r.add_texts(t);
    r.mutable_options()->set_beam_size(1);
    r.mutable_options()->set_max_length(48);
    return r;
  }
  grpc::Status Call(const v1::TranslateRequest& r, v1::TranslateResponse* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    return stub_->Translate(&ctx, r, out);
  }
  // The translation of one sentence sent alone, without splitting.
  std::string Alone(const std::string& sentence, v1::TranslateRequest base) {
    base.clear_texts();
    base.add_texts(sentence);
    base.mutable_document()->set_split_sentences(false);
    base.mutable_document()->set_format(v1::DocumentOptions::FORMAT_TEXT);
    v1::TranslateResponse out;
    EXPECT_TRUE(Call(base, &out).ok());
    return out.translations_size() == 1 ? out.translations(0).text() : "<none>";
  }

  static std::filesystem::path* dir_;
  static ServerProcess* server_;
  static int port_;
  std::unique_ptr<v1::Translator::Stub> stub_;
};
std::filesystem::path* DocumentsTest::dir_ = nullptr;
ServerProcess* DocumentsTest::server_ = nullptr;
int DocumentsTest::port_ = 0;

// The source with each sentence replaced by its translation: what the output must be when the
// layout is kept exactly.
std::string Substituted(const std::string& source, const v1::Translation& t) {
  std::string out;
  size_t pos = 0;
  for (const auto& s : t.sentences()) {
    const size_t at = source.find(s.source(), pos);
    if (at == std::string::npos) return "<sentence not in source: " + s.source() + ">";
    out += source.substr(pos, at - pos) + s.text();
    pos = at + s.source().size();
  }
  return out + source.substr(pos);
}

// A document of random sentences in a random layout: spaces, tabs, \n, \r\n, blank lines,
// bullets, numbering.
std::string RandomDocument(std::mt19937& rng, int* sentences) {
  const char* kBreaks[] = {" ",    "  ",   "\n",   "\r\n",  "\n\n",
                           "\n\t", "\n- ", "\n* ", "\n1. ", "\n  2) "};
  std::uniform_int_distribution<int> n(2, 6), pick(0, std::size(kSentences) - 1),
      brk(0, std::size(kBreaks) - 1), coin(0, 1);
  *sentences = n(rng);
  std::string doc = coin(rng) ? "  " : "";
  for (int i = 0; i < *sentences; ++i) {
    if (i > 0) doc += kBreaks[brk(rng)];
    doc += kSentences[pick(rng)];
  }
  if (coin(rng)) doc += "\n";
  return doc;
}

TEST_F(DocumentsTest, AParagraphComesBackSentenceForSentenceWithItsLayout) {
  std::mt19937 rng(17);
  for (int round = 0; round < 8; ++round) {
    int count = 0;
    const std::string doc = RandomDocument(rng, &count);
    v1::TranslateResponse out;
    ASSERT_TRUE(Call(Request({doc}), &out).ok());
    const v1::Translation& t = out.translations(0);
    ASSERT_EQ(t.sentences_size(), count) << doc;  // none dropped, none merged
    EXPECT_EQ(t.text(), Substituted(doc, t)) << doc;
    for (const auto& s : t.sentences()) {
      EXPECT_EQ(s.text(), Alone(s.source(), Request({}))) << s.source();
      EXPECT_LE(s.confidence(), 0.0f);
      EXPECT_GT(s.confidence(), -20.0f);
    }
    EXPECT_LE(t.confidence(), 0.0f);
    EXPECT_EQ(out.model(), "en-de-small");
  }
}

TEST_F(DocumentsTest, SplittingOffSendsEachTextWhole) {
  v1::TranslateRequest r = Request({"Open the file. Save it."});
  r.mutable_document()->set_split_sentences(false);
  v1::TranslateResponse out;
  ASSERT_TRUE(Call(r, &out).ok());
  EXPECT_EQ(out.translations(0).sentences_size(), 1);
}

TEST_F(DocumentsTest, ProtectedSpansComeBackUntouched) {
  const std::vector<std::string> texts = {
      "Send bug reports to bugs@example.org.",
      "Edit /etc/transerve/server.conf and restart the server.",
      "See https://example.org/docs/setup.html for details.",
      "Copied %d files to %s.",
      "Hello {name}, you have {0} new messages.",
      "The variable ${HOME} points to your home folder.",
  };
  const std::vector<std::vector<std::string>> spans = {{"bugs@example.org"},
                                                       {"/etc/transerve/server.conf"},
                                                       {"https://example.org/docs/setup.html"},
                                                       {"%d", "%s"},
                                                       {"{name}", "{0}"},
                                                       {"${HOME}"}};
  v1::TranslateResponse out;
  ASSERT_TRUE(Call(Request(texts), &out).ok());
  for (size_t i = 0; i < texts.size(); ++i) {
    for (const auto& span : spans[i]) {
      EXPECT_NE(out.translations(i).text().find(span), std::string::npos)
          << texts[i] << " -> " << out.translations(i).text();
    }
  }
  // A term the caller names stays too.
  v1::TranslateRequest r = Request({"Open the Control Panel to change it."});
  r.mutable_document()->add_protected_terms("Control Panel");
  ASSERT_TRUE(Call(r, &out).ok());
  EXPECT_NE(out.translations(0).text().find("Control Panel"), std::string::npos)
      << out.translations(0).text();
}

// Start and end tags of an HTML fragment, in order (a small scanner: the test's own).
std::vector<std::string> Tags(const std::string& html) {
  std::vector<std::string> tags;
  size_t pos = 0;
  while ((pos = html.find('<', pos)) != std::string::npos) {
    const size_t end = html.find('>', pos);
    if (end == std::string::npos) break;
    tags.push_back(html.substr(pos, end - pos + 1));
    pos = end + 1;
  }
  return tags;
}

bool WellNested(const std::vector<std::string>& tags) {
  std::vector<std::string> open;
  for (const auto& t : tags) {
    if (t.rfind("<!--", 0) == 0 || t.rfind("<br", 0) == 0 || t.back() == '/' ||
        t.rfind("<img", 0) == 0)
      continue;
    const bool closing = t[1] == '/';
    std::string name = t.substr(closing ? 2 : 1);
    name = name.substr(0, name.find_first_of(" >"));
    if (!closing) {
      open.push_back(name);
    } else {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    }
  }
  return open.empty();
}

TEST_F(DocumentsTest, HtmlKeepsItsMarkupAndLeavesCodeAlone) {
  const std::string script = "<script>var s = \"Open the file.\";</script>";
  const std::string pre = "<pre>Open   the\n file.</pre>";
  const std::string html =
      "<div class=\"x\"><p>Open the <b>file</b> and <a href=\"/s?a=1&amp;b=2\" "
      "title=\"Save the file\">save</a> it.</p>" +
      script + pre +
      "<p>Your <i>changes <em>have</em> been</i> saved.<br>"
      "The password is <span translate=\"no\">too short</span>.</p>"
      "<!-- a comment --></div>";
  v1::TranslateRequest r = Request({html});
  r.mutable_document()->set_format(v1::DocumentOptions::FORMAT_HTML);
  v1::TranslateResponse out;
  grpc::Status s = Call(r, &out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::string& got = out.translations(0).text();
  auto sorted = [](std::vector<std::string> v) {
    for (auto& t : v) {
      // title="..." is translated: compare tags without their title attribute.
      const size_t at = t.find(" title=\"");
      if (at != std::string::npos) t.erase(at, t.find('"', at + 8) - at + 1);
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(Tags(got)), sorted(Tags(html))) << got;
  EXPECT_TRUE(WellNested(Tags(got))) << got;
  EXPECT_NE(got.find(script), std::string::npos) << got;
  EXPECT_NE(got.find(pre), std::string::npos) << got;
  EXPECT_NE(got.find("<span translate=\"no\">too short</span>"), std::string::npos) << got;
  EXPECT_NE(got.find("<!-- a comment -->"), std::string::npos) << got;
  EXPECT_NE(got.find("href=\"/s?a=1&amp;b=2\""), std::string::npos) << got;
  EXPECT_EQ(got.find("Open the file and"), std::string::npos) << got;  // translated
}

TEST_F(DocumentsTest, LanguagesPickTheModelAndAutoDetects) {
  v1::TranslateRequest r = Request({"The server could not be reached. Try again later."});
  r.set_source_language("en");
  r.set_target_language("de");
  v1::TranslateResponse out;
  ASSERT_TRUE(Call(r, &out).ok());
  EXPECT_EQ(out.model(), "en-de-small");
  r.set_source_language("auto");
  ASSERT_TRUE(Call(r, &out).ok());
  EXPECT_EQ(out.model(), "en-de-small");
  EXPECT_EQ(out.detected_language(), "en");
  EXPECT_GT(out.detected_language_confidence(), 0.5f);
  // The fixture model is served as fr-es (--model_languages).
  r.set_source_language("fr");
  r.set_target_language("es");
  ASSERT_TRUE(Call(r, &out).ok());
  EXPECT_EQ(out.model(), "model");
  // French detected: the fr-es model, for a Spanish target.
  v1::TranslateRequest french =
      Request({"Le serveur n'a pas pu être joint. Veuillez réessayer plus tard, s'il vous plaît."});
  french.set_source_language("auto");
  french.set_target_language("es");
  ASSERT_TRUE(Call(french, &out).ok());
  EXPECT_EQ(out.detected_language(), "fr");
  EXPECT_EQ(out.model(), "model");
  // ... and French into German is served by no model: NOT_FOUND, not the English one.
  french.set_target_language("de");
  EXPECT_EQ(Call(french, &out).error_code(), grpc::StatusCode::NOT_FOUND);
  r.set_source_language("en");
  r.set_target_language("ja");
  grpc::Status s = Call(r, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("en-de-small (en-de)"), std::string::npos) << s.error_message();
  r.set_target_language("not a language");
  EXPECT_EQ(Call(r, &out).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // ListModels gives the pairs.
  grpc::ClientContext ctx;
  v1::ListModelsResponse models;
  ASSERT_TRUE(stub_->ListModels(&ctx, v1::ListModelsRequest(), &models).ok());
  ASSERT_EQ(models.models_size(), 2);
  EXPECT_EQ(models.models(0).source_language(), "en");
  EXPECT_EQ(models.models(0).target_language(), "de");
  EXPECT_EQ(models.models(1).source_language(), "fr");
  EXPECT_EQ(models.models(1).target_language(), "es");
}

TEST_F(DocumentsTest, StreamingSendsSentencesInOrderAndTheyConcatenateToTheText) {
  std::mt19937 rng(5);
  for (int beam : {1, 4}) {
    int count = 0;
    std::vector<std::string> docs;
    for (int i = 0; i < 3; ++i) docs.push_back(RandomDocument(rng, &count));
    v1::TranslateRequest r = Request(docs);
    r.mutable_options()->set_beam_size(beam);
    grpc::ClientContext ctx;
    auto reader = stub_->TranslateStream(&ctx, r);
    v1::TranslateStreamResponse chunk;
    std::vector<std::string> joined(docs.size());
    std::vector<std::vector<std::string>> sentences(docs.size());
    std::vector<std::string> final_text(docs.size(), "<none>");
    while (reader->Read(&chunk)) {
      const size_t i = static_cast<size_t>(chunk.index());
      ASSERT_LT(i, docs.size());
      ASSERT_EQ(final_text[i], "<none>") << "a chunk after the text's last";
      joined[i] += chunk.text_delta();
      if (chunk.has_sentence()) sentences[i].push_back(chunk.sentence().source());
      if (chunk.done()) final_text[i] = chunk.translation().text();
    }
    ASSERT_TRUE(reader->Finish().ok());
    v1::TranslateResponse unary;
    ASSERT_TRUE(Call(r, &unary).ok());
    for (size_t i = 0; i < docs.size(); ++i) {
      EXPECT_EQ(joined[i], final_text[i]);
      EXPECT_EQ(final_text[i], unary.translations(i).text());
      std::vector<std::string> in_order;
      for (const auto& s : unary.translations(i).sentences()) in_order.push_back(s.source());
      EXPECT_EQ(sentences[i], in_order);  // each sentence once, in document order
    }
  }
}

TEST_F(DocumentsTest, ASentenceOverTheTokenLimitIsCutNotRejected) {
  // One "sentence" of 60 words and no boundary, over --max_source_tokens=40.
  std::string longest;
  std::mt19937 rng(3);
  const char* kWords[] = {"open", "the", "file", "and", "save", "it", "now", "please"};
  for (int i = 0; i < 60; ++i) longest += absl::StrCat(i ? " " : "", kWords[rng() % 8]);
  v1::TranslateResponse out;
  grpc::Status s = Call(Request({longest}), &out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_GE(out.translations(0).sentences_size(), 2);
  std::string sources;
  for (const auto& part : out.translations(0).sentences()) {
    EXPECT_LE(part.source_token_count(), 40);
    sources += (sources.empty() ? "" : " ") + part.source();
  }
  EXPECT_EQ(sources, longest);  // nothing dropped
  // Without splitting it is refused, as before documents.
  v1::TranslateRequest whole = Request({longest});
  whole.mutable_document()->set_split_sentences(false);
  EXPECT_EQ(Call(whole, &out).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(DocumentsTest, TooManySentencesInOneRequestIsRefusedWithTheLimit) {
  std::string many;
  for (int i = 0; i < 41; ++i) many += absl::StrCat(kSentences[i % 10], " ");
  v1::TranslateResponse out;
  grpc::Status s = Call(Request({many}), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("40"), std::string::npos) << s.error_message();
}

TEST_F(DocumentsTest, ManyCallersMixingFormatsAndOptionsGetTheAnswersTheyGetAlone) {
  std::mt19937 rng(23);
  struct Case {
    v1::TranslateRequest request;
    std::string expected;
  };
  std::vector<Case> cases;
  for (int i = 0; i < 12; ++i) {
    int count = 0;
    Case c;
    const int kind = i % 3;
    std::string doc = RandomDocument(rng, &count);
    if (kind == 1) doc = "<p>" + doc + " <b>Save</b> the <i>file</i>.</p>";
    if (kind == 2) doc += " Mail bugs@example.org about %s.";
    c.request = Request({doc});
    if (kind == 1) c.request.mutable_document()->set_format(v1::DocumentOptions::FORMAT_HTML);
    c.request.mutable_options()->set_beam_size(i % 4 == 0 ? 2 : 1);
    if (i % 5 == 0) c.request.set_target_language("de");
    v1::TranslateResponse out;
    ASSERT_TRUE(Call(c.request, &out).ok());
    c.expected = out.translations(0).text();
    cases.push_back(std::move(c));
  }
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 16; ++t) {
    callers.emplace_back([&, t] {
      auto stub = v1::Translator::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_),
                                                              grpc::InsecureChannelCredentials()));
      for (int k = 0; k < 4; ++k) {
        const Case& c = cases[(t * 5 + k) % cases.size()];
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
        if ((t + k) % 2 == 0) {
          v1::TranslateResponse out;
          if (!stub->Translate(&ctx, c.request, &out).ok()) {
            ++failed;
          } else if (out.translations(0).text() != c.expected) {
            ++wrong;
          }
        } else {
          auto reader = stub->TranslateStream(&ctx, c.request);
          v1::TranslateStreamResponse chunk;
          std::string joined;
          while (reader->Read(&chunk)) joined += chunk.text_delta();
          if (!reader->Finish().ok()) {
            ++failed;
          } else if (joined != c.expected) {
            ++wrong;
          }
        }
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace transerve
