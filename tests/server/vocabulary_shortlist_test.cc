// The vocabulary shortlist through the real server: a model directory with a vmap.txt, requests
// with options.use_vocabulary_map, unary and streamed, beside requests without it, from many
// callers at once. Every shortlisted answer keeps to the list and equals transerve-translate's
// on the same directory; every answer equals what the server gives the request alone (a list
// is per sentence, never per batch); a model without vmap.txt refuses the option.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/testing/paths.h"
#include "tests/testing/server_process.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using testing::ServerProcess;

constexpr int kMaxLength = 20;

std::string Words(std::mt19937& rng) {
  static const char* kWords[] = {"the",  "house", "is",   "small", "and",     "green", "we",
                                 "walk", "old",   "city", "with",  "friends", "river", "fast"};
  std::vector<std::string> words;
  for (int w = std::uniform_int_distribution<int>(1, 8)(rng); w > 0; --w) {
    words.push_back(kWords[rng() % std::size(kWords)]);
  }
  return absl::StrCat(absl::StrJoin(words, " "), ".");
}

v1::TranslateRequest Request(const std::string& model, const std::vector<std::string>& texts,
                             int beam, bool shortlist) {
  v1::TranslateRequest r;
  r.set_model(model);
  for (const auto& t : texts) r.add_texts(t);
  r.mutable_options()->set_beam_size(beam);
  r.mutable_options()->set_max_length(kMaxLength);
  r.mutable_options()->set_return_scores(true);
  r.mutable_options()->set_use_vocabulary_map(shortlist);
  r.mutable_document()->set_split_sentences(false);
  return r;
}

grpc::Status Translate(v1::Translator::Stub* stub, const v1::TranslateRequest& r,
                       v1::TranslateResponse* out) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(240));
  return stub->Translate(&ctx, r, out);
}

class VocabularyShortlistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    dir_ = fs::temp_directory_path() / absl::StrCat("transerve_shortlist_", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const std::string fixture = testing::SourceDir() + "/tests/fixtures/tiny-marian/model";
    fs::copy(fixture, dir_ / "listed", fs::copy_options::recursive);
    fs::create_directory_symlink(fixture, dir_ / "plain");
    // The list: random pieces of the target vocabulary (vocab.json), for every sentence.
    std::ifstream in(dir_ / "listed" / "vocab.json");
    const nlohmann::json vocab = nlohmann::json::parse(in);
    std::vector<std::string> pieces;
    for (const auto& [piece, id] : vocab.items()) {
      if (id.get<int>() > 2) pieces.push_back(piece);
    }
    std::shuffle(pieces.begin(), pieces.end(), rng_);
    pieces.resize(40);
    listed_ = std::set<std::string>(pieces.begin(), pieces.end());
    std::ofstream(dir_ / "listed" / "vmap.txt") << "\t" << absl::StrJoin(pieces, " ") << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // transerve-translate's ids for `texts` on the listed model, with the list.
  std::vector<std::vector<int32_t>> Offline(const std::vector<std::string>& texts, int beam) {
    const fs::path input = dir_ / "input.txt", output = dir_ / "output.jsonl";
    std::ofstream(input) << absl::StrJoin(texts, "\n") << "\n";
    const std::string command = absl::StrCat(
        testing::BinaryDir(), "/bin/transerve-translate --model_dir=", (dir_ / "listed").string(),
        " --dtype=float32 --use_vocabulary_map --split_sentences=false --output_format=jsonl",
        " --beam_size=", beam, " --max_length=", kMaxLength, " < ", input.string(), " > ",
        output.string(), " 2> ", (dir_ / "offline.log").string());
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::vector<std::vector<int32_t>> ids;
    std::ifstream lines(output);
    for (std::string line; std::getline(lines, line);) {
      ids.push_back(nlohmann::json::parse(line)["ids"].get<std::vector<int32_t>>());
    }
    return ids;
  }

  uint32_t seed_ = 0;
  std::mt19937 rng_;
  fs::path dir_;
  std::set<std::string> listed_;
};

TEST_F(VocabularyShortlistTest, ShortlistedCallsKeepToTheListAndToTheirAnswerAlone) {
  SCOPED_TRACE(absl::StrCat("seed ", seed_));
  ServerProcess server(
      {absl::StrCat("--model_dir=", (dir_ / "listed").string(), ",", (dir_ / "plain").string()),
       "--host=127.0.0.1", "--port=0", "--metrics_port=-1", "--http_port=-1", "--num_threads=2",
       "--dtype=float32"},
      (dir_ / "server.log").string());
  const int port = server.WaitServing(std::chrono::seconds(180));
  ASSERT_GT(port, 0) << server.Log();
  auto stub = v1::Translator::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  // Alone: within the list, and the same ids as transerve-translate.
  std::vector<std::string> texts;
  for (int i = 0; i < 6; ++i) texts.push_back(Words(rng_));
  for (int beam : {1, 4}) {
    v1::TranslateResponse out;
    ASSERT_TRUE(Translate(stub.get(), Request("listed", texts, beam, true), &out).ok());
    const auto offline = Offline(texts, beam);
    ASSERT_EQ(offline.size(), texts.size());
    for (int i = 0; i < out.translations_size(); ++i) {
      const v1::Translation& t = out.translations(i);
      for (const std::string& piece : t.tokens()) {
        EXPECT_TRUE(listed_.count(piece) || piece == "</s>" || piece == "<unk>")
            << "'" << piece << "' is not in the list";
      }
      EXPECT_EQ(std::vector<int32_t>(t.token_ids().begin(), t.token_ids().end()), offline[i])
          << texts[i] << " beam " << beam;
    }
  }
  // Many callers, with and without the list, unary and streamed: each as alone.
  struct Call {
    v1::TranslateRequest request;
    bool stream = false;
    std::vector<std::string> alone;
  };
  std::vector<Call> calls;
  for (int i = 0; i < 24; ++i) {
    Call c;
    c.request = Request("listed", {Words(rng_), Words(rng_)}, i % 3 == 2 ? 4 : 1, i % 2 == 0);
    c.stream = i % 4 == 1;
    v1::TranslateResponse out;
    ASSERT_TRUE(Translate(stub.get(), c.request, &out).ok());
    for (const auto& t : out.translations()) c.alone.push_back(t.text());
    calls.push_back(std::move(c));
  }
  std::vector<std::string> failures(calls.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < calls.size(); ++i) {
    threads.emplace_back([&, i] {
      auto own = v1::Translator::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                                             grpc::InsecureChannelCredentials()));
      std::vector<std::string> got(calls[i].request.texts_size());
      grpc::Status s;
      if (calls[i].stream) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(240));
        auto reader = own->TranslateStream(&ctx, calls[i].request);
        v1::TranslateStreamResponse m;
        while (reader->Read(&m)) {
          if (m.done()) got[m.index()] = m.translation().text();
        }
        s = reader->Finish();
      } else {
        v1::TranslateResponse out;
        s = Translate(own.get(), calls[i].request, &out);
        for (int k = 0; k < out.translations_size(); ++k) got[k] = out.translations(k).text();
      }
      if (!s.ok()) {
        failures[i] = s.error_message();
      } else if (got != calls[i].alone) {
        failures[i] = absl::StrCat("'", absl::StrJoin(got, "|"), "' vs alone '",
                                   absl::StrJoin(calls[i].alone, "|"), "'");
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(failures[i], "") << "call " << i;
  // The model without vmap.txt says so.
  v1::TranslateResponse out;
  const grpc::Status refused =
      Translate(stub.get(), Request("plain", {Words(rng_)}, 1, true), &out);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("vmap.txt"), std::string::npos) << refused.error_message();
}

}  // namespace
}  // namespace transerve
