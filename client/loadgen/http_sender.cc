#include "client/loadgen/http_sender.h"

#include <httplib.h>

#include <chrono>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace transerve {

// One call: queued at Start, run by whichever worker is free on that worker's connection.
class HttpCall : public SentCall {
 public:
  HttpCall(HttpSender* sender, CallRecord* record) : sender_(sender), record_(record) {}

  void Start(std::function<void(const absl::Status&)> done) override {
    done_ = std::move(done);
    sender_->Enqueue(this);
  }

  void Cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    // Shuts the socket of a request in flight: the worker's send returns at once.
    if (client_ != nullptr) client_->stop();
  }

  // On a worker: sends the call over `client`, then tells the load loop.
  void Run(httplib::Client& client) {
    bool cancelled = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled = cancelled_;
      if (!cancelled) client_ = &client;
    }
    if (cancelled) {
      done_(absl::CancelledError("cancelled before it was sent"));
      return;
    }
    const auto started = std::chrono::steady_clock::now();
    absl::Status status = Exchange(client);
    {
      std::lock_guard<std::mutex> lock(mu_);
      client_ = nullptr;
      cancelled = cancelled_;
    }
    if (status.code() == absl::StatusCode::kUnavailable) {
      const HttpSenderOptions& o = sender_->options_;
      if (cancelled) {
        status = absl::CancelledError("cancelled");
      } else if (o.deadline > absl::ZeroDuration() && std::chrono::steady_clock::now() - started >=
                                                          absl::ToChronoNanoseconds(o.deadline)) {
        status = absl::DeadlineExceededError(status.message());
      }
    }
    done_(status);
  }

 private:
  // The request and its answer; a transport failure is UNAVAILABLE.
  absl::Status Exchange(httplib::Client& client) {
    const HttpSenderOptions& o = sender_->options_;
    httplib::Request request;
    request.method = "POST";
    request.path = TranslatePath(o.api, o.stream);
    request.body = RequestBody(o.api, record_->request, o.source_language, o.target_language);
    request.set_header("Content-Type", "application/json");
    if (!o.auth_token.empty()) request.set_header("Authorization", "Bearer " + o.auth_token);
    if (o.deadline > absl::ZeroDuration()) {
      request.set_header("X-Request-Timeout-Ms",
                         absl::StrCat(absl::ToInt64Milliseconds(o.deadline)));
    }
    httplib::Response response;
    httplib::Error error = httplib::Error::Success;
    if (!o.stream) {
      if (!client.send(request, response, error)) {
        return absl::UnavailableError(absl::StrCat("HTTP: ", httplib::to_string(error)));
      }
      return ReadAnswer(o.api, response.status, response.body, record_);
    }
    // Streaming: the events as they arrive; an error before the stream began is a plain JSON
    // answer with its HTTP status.
    V1StreamReader stream(record_);
    std::string error_body;
    int status = 0;
    request.response_handler = [&](const httplib::Response& r) {
      status = r.status;
      return true;
    };
    request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      if (status == 200) {
        stream.Feed(std::string_view(data, size));
      } else {
        error_body.append(data, size);
      }
      return true;
    };
    if (!client.send(request, response, error)) {
      return absl::UnavailableError(absl::StrCat("HTTP: ", httplib::to_string(error)));
    }
    if (status != 200) return ReadAnswer(o.api, status, error_body, record_);
    return stream.Finish();
  }

  HttpSender* sender_;
  CallRecord* record_;
  std::function<void(const absl::Status&)> done_;
  std::mutex mu_;
  bool cancelled_ = false;
  httplib::Client* client_ = nullptr;  // while a worker sends this call
};

absl::Status SplitHostPort(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), port) || *port <= 0 || *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", address, "' is not HOST:PORT (a port from 1 to 65535)"));
  }
  *host = address.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HttpSender>> HttpSender::Create(HttpSenderOptions options) {
  if (options.stream && options.api != HttpApi::kV1) {
    return absl::InvalidArgumentError("streaming is the v1 API's (/v1/translate/stream)");
  }
  if (options.connections < 1) return absl::InvalidArgumentError("connections must be >= 1");
  if (options.host.empty() || options.port <= 0) {
    return absl::InvalidArgumentError("no HTTP address");
  }
  return std::unique_ptr<HttpSender>(new HttpSender(std::move(options)));
}

HttpSender::HttpSender(HttpSenderOptions options) : options_(std::move(options)) {
  for (int i = 0; i < options_.connections; ++i) workers_.emplace_back([this] { Work(); });
}

HttpSender::~HttpSender() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

absl::Status HttpSender::WaitUntilReachable(absl::Duration timeout) {
  const auto give_up = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  httplib::Client client(options_.host, options_.port);
  client.set_connection_timeout(std::chrono::milliseconds(500));
  // A port that accepts but never answers must not outlast the timeout.
  client.set_read_timeout(absl::ToChronoNanoseconds(timeout));
  while (true) {
    if (client.Get("/healthz")) return absl::OkStatus();
    if (std::chrono::steady_clock::now() >= give_up) {
      return absl::UnavailableError(absl::StrCat("cannot connect to the server (HTTP ",
                                                 options_.host, ":", options_.port, ") within ",
                                                 absl::FormatDuration(timeout)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::unique_ptr<SentCall> HttpSender::NewCall(CallRecord* record) {
  return std::make_unique<HttpCall>(this, record);
}

void HttpSender::Enqueue(HttpCall* call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(call);
  }
  wake_.notify_one();
}

void HttpSender::Work() {
  httplib::Client client(options_.host, options_.port);
  client.set_keep_alive(true);
  // Headers and body leave in separate writes: without this, Nagle holds the body for the
  // server's delayed ACK (tens of ms a call).
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(std::chrono::seconds(5));
  // The server bounds a call with a deadline (X-Request-Timeout-Ms); the socket waits a little
  // longer so that its answer, not the client's timeout, says how the call ended. Without one,
  // the load loop's drain cancels what is left.
  client.set_read_timeout(options_.deadline > absl::ZeroDuration()
                              ? absl::ToChronoNanoseconds(options_.deadline + absl::Seconds(2))
                              : std::chrono::nanoseconds(std::chrono::minutes(10)));
  while (true) {
    HttpCall* call = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      call = queue_.front();
      queue_.pop_front();
    }
    call->Run(client);
  }
}

}  // namespace transerve
