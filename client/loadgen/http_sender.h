// The load generator's calls over the HTTP front end (HTTP_CONTRACT.md), v1 or LibreTranslate
// API. A fixed pool of workers, each with its own keep-alive connection (an httplib client is
// not safe to share between threads), takes the calls in the order they were sent; a call that
// waits for a free worker waits in the client, and its latency (from its scheduled time) shows
// it.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/loadgen/http_api.h"
#include "client/loadgen/request_sender.h"

namespace transerve {

struct HttpSenderOptions {
  std::string host;
  int port = 0;
  HttpApi api = HttpApi::kV1;
  bool stream = false;                             // v1 only: /v1/translate/stream (SSE)
  std::string auth_token;                          // "Authorization: Bearer ..."
  absl::Duration deadline = absl::ZeroDuration();  // per call (X-Request-Timeout-Ms); zero: none
  int connections = 1;                             // workers, one connection each
  std::string source_language = "en";              // LibreTranslate's "source"
  std::string target_language = "de";              // LibreTranslate's "target"
};

// "HOST:PORT" or "[V6]:PORT" into host and port; INVALID_ARGUMENT otherwise.
absl::Status SplitHostPort(const std::string& address, std::string* host, int* port);

class HttpCall;

class HttpSender : public RequestSender {
 public:
  // INVALID_ARGUMENT for unusable options (streaming over LibreTranslate, no connection).
  static absl::StatusOr<std::unique_ptr<HttpSender>> Create(HttpSenderOptions options);
  ~HttpSender() override;

  // Reachable once GET /healthz gets any HTTP answer.
  absl::Status WaitUntilReachable(absl::Duration timeout) override;
  std::unique_ptr<SentCall> NewCall(CallRecord* record) override;

 private:
  friend class HttpCall;
  explicit HttpSender(HttpSenderOptions options);
  void Enqueue(HttpCall* call);
  void Work();

  const HttpSenderOptions options_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<HttpCall*> queue_;  // started, waiting for a worker
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace transerve
