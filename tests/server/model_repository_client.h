// What the model repository's tests (model_repository_test.cc) drive the real server with:
// transerve-server over a repository directory with its channel, Translator and Admin calls,
// grpc.health.v1, and /metrics read by name and labels.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/testing/sentence_pool.h"
#include "tests/testing/server_process.h"
#include "transerve/v1/admin.grpc.pb.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve::repository_test {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::ServerProcess;

inline constexpr char kAdminToken[] = "admin-7f3c9e";
inline constexpr int kMaxLength = 24;
// Every repository server: a fast poll so the tests need not wait long for a rescan, a bounded
// KV cache so a model's resident bytes do not grow with its load.
inline const std::vector<std::string> kCommonFlags = {"--host=127.0.0.1",
                                                      "--port=0",
                                                      "--http_port=-1",
                                                      "--metrics_port=0",
                                                      "--num_threads=2",
                                                      "--kv_cache_mb=8",
                                                      "--max_queue_wait=120s",
                                                      "--drain_timeout=60s",
                                                      "--repository_poll_interval=200ms"};

inline std::vector<std::string> Pool() {
  return std::vector<std::string>(std::begin(testing::kSentencePool),
                                  std::end(testing::kSentencePool));
}

struct Answer {
  std::string text;
  std::vector<int32_t> ids;
  float score = 0;
  bool operator==(const Answer& o) const {
    return text == o.text && ids == o.ids &&
           std::abs(score - o.score) <= 1e-4f * std::max(1.0f, std::abs(o.score));
  }
};

inline Answer FromTranslation(const v1::Translation& t) {
  return {t.text(), std::vector<int32_t>(t.token_ids().begin(), t.token_ids().end()), t.score()};
}

inline std::string Describe(const grpc::Status& s) {
  return absl::StrCat("status ", s.error_code(), " '", s.error_message(), "'");
}

inline v1::TranslateRequest Request(const std::string& model, const std::vector<std::string>& texts,
                                    int beam, int max_length = kMaxLength) {
  v1::TranslateRequest req;
  req.set_model(model);
  for (const auto& t : texts) req.add_texts(t);
  req.mutable_options()->set_beam_size(beam);
  req.mutable_options()->set_max_length(max_length);
  req.mutable_options()->set_return_scores(true);
  return req;
}

inline void SetDeadline(grpc::ClientContext* ctx, int seconds = 240) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

inline grpc::Status Unary(v1::Translator::Stub* stub, const v1::TranslateRequest& req,
                          std::vector<Answer>* out) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  v1::TranslateResponse resp;
  grpc::Status s = stub->Translate(&ctx, req, &resp);
  if (!s.ok()) return s;
  if (resp.model() != req.model()) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "answered by model " + resp.model());
  }
  out->clear();
  for (const auto& t : resp.translations()) out->push_back(FromTranslation(t));
  return s;
}

// The final translation of each text; each text's deltas must add up to it.
inline grpc::Status Stream(v1::Translator::Stub* stub, const v1::TranslateRequest& req,
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

// The one answer of a one-text unary call, or the failed status.
inline grpc::Status TranslateOne(v1::Translator::Stub* stub, const std::string& model,
                                 const std::string& text, int beam, Answer* out) {
  std::vector<Answer> got;
  grpc::Status s = Unary(stub, Request(model, {text}, beam), &got);
  if (s.ok() && got.size() != 1) return grpc::Status(grpc::StatusCode::INTERNAL, "not 1 answer");
  if (s.ok()) *out = got[0];
  return s;
}

// --- /metrics -------------------------------------------------------------------------------

inline std::string Metrics(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(std::chrono::seconds(10));
  c.set_read_timeout(std::chrono::seconds(30));
  auto res = c.Get("/metrics");
  return res && res->status == 200 ? res->body : "";
}

// The sum of the samples of `name` whose labels contain every one of `labels` (a name without
// labels matches its unlabelled sample too).
inline double MetricSum(const std::string& text, const std::string& name,
                        const std::vector<std::string>& labels = {}) {
  double sum = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#' || !absl::StartsWith(line, name)) continue;
    absl::string_view rest = line.substr(name.size());
    absl::string_view label_text;
    if (absl::StartsWith(rest, "{")) {
      const size_t close = rest.rfind('}');
      if (close == absl::string_view::npos) continue;
      label_text = rest.substr(0, close);
      rest = rest.substr(close + 1);
    } else if (!absl::StartsWith(rest, " ")) {
      continue;  // another metric whose name starts with this one
    }
    bool all = true;
    for (const auto& l : labels) all = all && absl::StrContains(label_text, l);
    double value = 0;
    if (all && absl::SimpleAtod(absl::StripAsciiWhitespace(rest), &value)) sum += value;
  }
  return sum;
}

inline std::string ModelLabel(const std::string& model) {
  return absl::StrCat("model=\"", model, "\"");
}

// --- the server -------------------------------------------------------------------------------

// One transerve-server over a repository, its channel, and the stubs the tests use.
class RepositoryServer {
 public:
  RepositoryServer(const fs::path& work, const std::string& name,
                   const std::vector<std::string>& flags) {
    std::vector<std::string> args = kCommonFlags;
    args.insert(args.end(), flags.begin(), flags.end());
    log_ = (work / (name + ".log")).string();
    process_ = std::make_unique<ServerProcess>(args, log_);
    port_ = process_->WaitServing(std::chrono::seconds(180));
    if (port_ <= 0) return;
    metrics_port_ = process_->ServingPort("metrics_port");
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials());
    translator_ = v1::Translator::NewStub(channel_);
    admin_ = v1::Admin::NewStub(channel_);
  }

  bool serving() const { return port_ > 0; }
  std::string Log() const { return process_->Log(); }
  // The process's resident set, from /proc (0 when it cannot be read).
  int64_t ResidentSetBytes() const {
    std::ifstream status("/proc/" + std::to_string(process_->pid()) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
    }
    return 0;
  }
  int Terminate() { return process_->Terminate(std::chrono::seconds(90)); }
  void Signal(int sig) const { kill(process_->pid(), sig); }
  v1::Translator::Stub* translator() { return translator_.get(); }
  std::unique_ptr<v1::Translator::Stub> NewTranslator() {
    return v1::Translator::NewStub(channel_);
  }
  std::string Metrics() const { return repository_test::Metrics(metrics_port_); }

  // Admin calls with `token` ("" sends none).
  grpc::Status List(v1::AdminListModelsResponse* out, const std::string& token = kAdminToken) {
    grpc::ClientContext ctx;
    Authorize(&ctx, token);
    return admin_->ListModels(&ctx, v1::AdminListModelsRequest(), out);
  }
  grpc::Status Load(const std::string& model, v1::ModelStatus* out) {
    return Call(&v1::Admin::Stub::LoadModel, model, out);
  }
  grpc::Status Unload(const std::string& model, v1::ModelStatus* out) {
    return Call(&v1::Admin::Stub::UnloadModel, model, out);
  }
  grpc::Status Reload(const std::string& model, v1::ModelStatus* out) {
    return Call(&v1::Admin::Stub::ReloadModel, model, out);
  }

  // The model's row of Admin ListModels, if listed (a failed call fails the test).
  std::optional<v1::ModelStatus> Status(const std::string& model) {
    v1::AdminListModelsResponse list;
    grpc::Status s = List(&list);
    EXPECT_TRUE(s.ok()) << Describe(s);
    for (const auto& m : list.models()) {
      if (m.name() == model) return m;
    }
    return std::nullopt;
  }

  // grpc.health.v1 for `service`: SERVING, NOT_SERVING, or the RPC's failure as a string.
  std::string Health(const std::string& service) {
    auto stub = grpc::health::v1::Health::NewStub(channel_);
    grpc::ClientContext ctx;
    SetDeadline(&ctx, 10);
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    grpc::Status s = stub->Check(&ctx, req, &resp);
    if (!s.ok()) return Describe(s);
    return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
  }

  // Translator.ListModels' `loaded` for the model (nullopt: not listed).
  std::optional<bool> ListedLoaded(const std::string& model) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, 10);
    v1::ListModelsResponse resp;
    grpc::Status s = translator_->ListModels(&ctx, v1::ListModelsRequest(), &resp);
    EXPECT_TRUE(s.ok()) << Describe(s);
    for (const auto& m : resp.models()) {
      if (m.name() == model) return m.loaded();
    }
    return std::nullopt;
  }

 private:
  static void Authorize(grpc::ClientContext* ctx, const std::string& token) {
    SetDeadline(ctx, 120);
    if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  }
  using AdminMethod = grpc::Status (v1::Admin::Stub::*)(grpc::ClientContext*,
                                                        const v1::ModelRequest&, v1::ModelStatus*);
  grpc::Status Call(AdminMethod method, const std::string& model, v1::ModelStatus* out) {
    grpc::ClientContext ctx;
    Authorize(&ctx, kAdminToken);
    v1::ModelRequest req;
    req.set_name(model);
    return (admin_.get()->*method)(&ctx, req, out);
  }

  std::string log_;
  std::unique_ptr<ServerProcess> process_;
  int port_ = 0;
  int metrics_port_ = -1;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Translator::Stub> translator_;
  std::unique_ptr<v1::Admin::Stub> admin_;
};

// Polls `done` every 50 ms for up to `limit`; whether it became true.
template <typename Predicate>
inline bool WaitFor(std::chrono::seconds limit, Predicate done) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

}  // namespace transerve::repository_test
