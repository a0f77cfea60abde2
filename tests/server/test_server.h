// What the in-process gRPC service tests share: a TranserveServer on a free loopback port with
// the tiny fixture model, channels to it, requests, calls and reads of its metrics.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/server.h"
#include "tests/testing/paths.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve::testing {

inline std::string ModelDir() { return SourceDir() + "/tests/fixtures/tiny-marian/model"; }

// One model, one engine thread, no metrics listener (MetricsText() reads them), float32 (the
// tests check the dtype reported; auto may pick int8).
inline ServerConfig BaseConfig() {
  ServerConfig c;
  c.model_dirs = {ModelDir()};
  c.dtype = "float32";
  c.address = "127.0.0.1:0";
  c.metrics_address = "";
  c.num_threads = 1;
  return c;
}

inline std::unique_ptr<TranserveServer> StartServer(const ServerConfig& c, bool load = true) {
  auto s = TranserveServer::Start(c);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return nullptr;
  if (load) {
    auto st = (*s)->LoadModels();
    EXPECT_TRUE(st.ok()) << st;
  }
  return *std::move(s);
}

inline std::shared_ptr<grpc::Channel> Connect(const TranserveServer& s,
                                              const grpc::ChannelArguments& args = {}) {
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", s.port()),
                                   grpc::InsecureChannelCredentials(), args);
}

inline v1::TranslateRequest Request(const std::vector<std::string>& texts, int beam,
                                    int max_length) {
  v1::TranslateRequest req;
  for (const auto& t : texts) req.add_texts(t);
  req.mutable_options()->set_beam_size(beam);
  req.mutable_options()->set_max_length(max_length);
  req.mutable_options()->set_return_scores(true);
  return req;
}

inline grpc::Status Call(v1::Translator::Stub* stub, const v1::TranslateRequest& req,
                         v1::TranslateResponse* resp, int timeout_ms = 60000) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  return stub->Translate(&ctx, req, resp);
}

// The value of one sample line of the exposition, -1 when absent.
inline double Sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

// transerve_requests_total of one method and status for the model "model" (0 when absent).
inline double Answered(TranserveServer& s, const std::string& method, const std::string& code) {
  const double v =
      Sample(s.MetricsText(), absl::StrCat("transerve_requests_total{code=\"", code, "\",method=\"",
                                           method, "\",model=\"model\",protocol=\"grpc\"}"));
  return v < 0 ? 0 : v;
}

// Waits until the server is decoding something (the request reached the scheduler).
inline bool WaitUntilDecoding(TranserveServer& server) {
  for (int i = 0; i < 1000; ++i) {
    if (Sample(server.MetricsText(), R"(transerve_active_sequences{model="model"})") >= 1) {
      return true;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return false;
}

}  // namespace transerve::testing
