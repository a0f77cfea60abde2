// Several models in one transerve-server process, driven as users drive it: the real binary,
// three models (two copies of the tiny fixture and the variant fixture, a different model),
// 32 callers at once mixing unary and streaming calls, greedy and beam search, one to three
// texts per call. Every answer must equal what that model answers for the text alone, with the
// server otherwise idle. Run with continuous and with static batching.
//
// This is the load that once deadlocked the process (two schedulers in one engine thread pool)
// and, before the hang, returned other models' translations.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/testing/paths.h"
#include "tests/testing/server_process.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

using testing::ServerProcess;

constexpr int kCallers = 32;
constexpr int kCallsPerCaller = 6;
constexpr int kMaxLength = 24;
const std::vector<std::string> kModels = {"a", "b", "c"};

// Random short sentences from a small English vocabulary (the fixtures' tokenizers split
// anything; their random weights translate it into something deterministic).
std::vector<std::string> RandomTexts(int n, std::mt19937& rng) {
  static const char* kWords[] = {"the",  "house", "is",    "small", "and",  "green",   "we",
                                 "walk", "old",   "city",  "with",  "my",   "friends", "river",
                                 "fast", "never", "light", "open",  "file", "server"};
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

struct Answer {
  std::string text;
  std::vector<int32_t> ids;
  float score = 0;
};

Answer FromTranslation(const v1::Translation& t) {
  return {t.text(), std::vector<int32_t>(t.token_ids().begin(), t.token_ids().end()), t.score()};
}

v1::TranslateRequest Request(const std::string& model, const std::vector<std::string>& texts,
                             int beam) {
  v1::TranslateRequest req;
  req.set_model(model);
  for (const auto& t : texts) req.add_texts(t);
  req.mutable_options()->set_beam_size(beam);
  req.mutable_options()->set_max_length(kMaxLength);
  req.mutable_options()->set_return_scores(true);
  return req;
}

void SetDeadline(grpc::ClientContext* ctx) {
  // Generous: under ThreadSanitizer everything runs many times slower.
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(240));
}

grpc::Status Unary(v1::Translator::Stub* stub, const v1::TranslateRequest& req,
                   std::vector<Answer>* out) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  v1::TranslateResponse resp;
  grpc::Status s = stub->Translate(&ctx, req, &resp);
  if (!s.ok()) return s;
  if (resp.model() != req.model()) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "answered by model " + resp.model());
  }
  for (const auto& t : resp.translations()) out->push_back(FromTranslation(t));
  return s;
}

// The final translation of each text, checking that each text's deltas add up to it.
grpc::Status Stream(v1::Translator::Stub* stub, const v1::TranslateRequest& req,
                    std::vector<Answer>* out) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto reader = stub->TranslateStream(&ctx, req);
  std::vector<std::string> joined(req.texts_size());
  out->assign(req.texts_size(), Answer{});
  std::vector<bool> done(req.texts_size(), false);
  v1::TranslateStreamResponse msg;
  while (reader->Read(&msg)) {
    if (msg.index() < 0 || msg.index() >= req.texts_size() || msg.model() != req.model()) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "a message for another text or model");
    }
    joined[msg.index()] += msg.text_delta();
    if (msg.done()) {
      done[msg.index()] = true;
      (*out)[msg.index()] = FromTranslation(msg.translation());
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return s;
  for (int i = 0; i < req.texts_size(); ++i) {
    if (!done[i] || joined[i] != (*out)[i].text) {
      return grpc::Status(
          grpc::StatusCode::INTERNAL,
          absl::StrCat("text ", i, ": deltas '", joined[i], "' vs final '", (*out)[i].text, "'"));
    }
  }
  return s;
}

class MultiModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("transerve_multi_model_", getpid(), "_", GetParam());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string fixtures = testing::SourceDir() + "/tests/fixtures/";
    // Names are the directories' base names: a and b are one model twice, c another one.
    std::filesystem::create_directory_symlink(fixtures + "tiny-marian/model", dir_ / "a");
    std::filesystem::create_directory_symlink(fixtures + "tiny-marian/model", dir_ / "b");
    std::filesystem::create_directory_symlink(fixtures + "tiny-marian-variant/model", dir_ / "c");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_P(MultiModelTest, ConcurrentCallersGetEachModelsOwnAnswer) {
  const std::string models =
      absl::StrCat((dir_ / "a").string(), ",", (dir_ / "b").string(), ",", (dir_ / "c").string());
  ServerProcess server(
      {"--model_dir=" + models, "--host=127.0.0.1", "--port=0", "--metrics_port=-1",
       "--http_port=-1", "--batching=" + GetParam(), "--num_threads=2", "--max_batch_sequences=16"},
      (dir_ / "server.log").string());
  const int port = server.WaitServing(std::chrono::seconds(180));
  ASSERT_GT(port, 0) << server.Log();
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
  auto stub = v1::Translator::NewStub(channel);

  std::mt19937 rng(GetParam() == "static" ? 11 : 12);
  const std::vector<std::string> texts = RandomTexts(10, rng);

  // What each model answers for each text alone, one call at a time.
  using Key = std::tuple<std::string, int, int>;  // model, text, beam
  std::map<Key, Answer> alone;
  for (const auto& model : kModels) {
    for (int beam : {1, 4}) {
      for (int t = 0; t < static_cast<int>(texts.size()); ++t) {
        std::vector<Answer> answer;
        grpc::Status s = Unary(stub.get(), Request(model, {texts[t]}, beam), &answer);
        ASSERT_TRUE(s.ok()) << model << " " << s.error_message();
        ASSERT_EQ(answer.size(), 1u);
        alone[{model, t, beam}] = answer[0];
      }
    }
  }
  // a and b are the same model; c is another one, so routing is visible.
  int c_differs = 0;
  for (int t = 0; t < static_cast<int>(texts.size()); ++t) {
    EXPECT_EQ(alone[Key("a", t, 1)].ids, alone[Key("b", t, 1)].ids) << t;
    c_differs += alone[Key("a", t, 1)].ids != alone[Key("c", t, 1)].ids;
  }
  EXPECT_GT(c_differs, 0) << "the variant model translates every text like the fixture";

  // Everything at once.
  std::atomic<int> calls{0};
  std::vector<std::string> failures[kCallers];
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      std::mt19937 own(1000 + c);
      auto caller_stub = v1::Translator::NewStub(channel);
      for (int k = 0; k < kCallsPerCaller; ++k) {
        const std::string& model = kModels[own() % kModels.size()];
        const int beam = own() % 3 == 0 ? 4 : 1;
        const bool streaming = own() % 2 == 0;
        std::vector<int> picked(1 + own() % 3);
        std::vector<std::string> call_texts;
        for (int& p : picked) {
          p = static_cast<int>(own() % texts.size());
          call_texts.push_back(texts[p]);
        }
        std::vector<Answer> got;
        const auto req = Request(model, call_texts, beam);
        grpc::Status s =
            streaming ? Stream(caller_stub.get(), req, &got) : Unary(caller_stub.get(), req, &got);
        calls.fetch_add(1);
        const std::string what = absl::StrCat("caller ", c, " call ", k, " model ", model, " beam ",
                                              beam, streaming ? " stream" : " unary");
        if (!s.ok()) {
          failures[c].push_back(
              absl::StrCat(what, ": status ", s.error_code(), " ", s.error_message()));
          continue;
        }
        if (got.size() != picked.size()) {
          failures[c].push_back(absl::StrCat(what, ": ", got.size(), " translations"));
          continue;
        }
        for (size_t i = 0; i < picked.size(); ++i) {
          const Answer& want = alone[Key(model, picked[i], beam)];
          if (got[i].ids != want.ids || got[i].text != want.text ||
              std::abs(got[i].score - want.score) > 1e-4f * std::max(1.0f, std::abs(want.score))) {
            failures[c].push_back(absl::StrCat(what, " text ", picked[i], ": got '", got[i].text,
                                               "' (", got[i].score, "), alone '", want.text, "' (",
                                               want.score, ")"));
          }
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(calls.load(), kCallers * kCallsPerCaller);
  for (int c = 0; c < kCallers; ++c) {
    for (const auto& f : failures[c]) ADD_FAILURE() << f;
  }

  // And the drain ends cleanly with every model idle again.
  EXPECT_EQ(server.Terminate(std::chrono::seconds(60)), 0) << server.Log();
}

INSTANTIATE_TEST_SUITE_P(Batching, MultiModelTest, ::testing::Values("continuous", "static"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace transerve
