// transerve's HTTP front end: LibreTranslate's API, DeepL's, the native JSON API with
// Server-Sent Events, health, and the web page, on cpp-httplib, over a TranslatorBackend (the
// server's in-process Translator service). Owns the listener and its workers; knows nothing of the
// engine or the scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/http/libretranslate_api.h"
#include "server/http/translator_backend.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace transerve::http {

class DeeplApi;

struct HttpOptions {
  std::string host = "0.0.0.0";
  int port = 0;  // 0 picks a free port
  // Connections served at once (one worker thread each) and accepted connections waiting for
  // a worker; beyond both, connections wait in the kernel's backlog.
  int threads = 64;
  int pending_connections = 256;
  size_t max_body_bytes = 16 << 20;  // 413 beyond
  // Slow clients: each read and write of a request or answer must progress within these.
  int64_t io_timeout_ms = 10000;
  // An idle keep-alive connection is closed after this (and the drain waits at most this).
  int keep_alive_timeout_s = 3;
  int keep_alive_max_requests = 1000;
  // PEM files; both set: HTTPS (the gRPC port's TLS files). With the CA: clients must present a
  // certificate it signs.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  LtSettings libretranslate;  // its limits, as /frontend/settings tells them
};

class HttpFrontEnd {
 public:
  // Binds and starts serving; UNAVAILABLE when it cannot listen (or the TLS files fail).
  static absl::StatusOr<std::unique_ptr<HttpFrontEnd>> Start(
      const HttpOptions& options, std::unique_ptr<TranslatorBackend> backend,
      prometheus::Registry& registry);
  ~HttpFrontEnd();  // Stop()

  int port() const { return port_; }
  // The drain, in three steps. Closes the listener (new connections are refused) and answers
  // 503 to new requests on open connections; the requests in flight go on. Idempotent.
  void StopAccepting();
  // Until no request is in flight (streams until their last event), or `deadline`; true when
  // none is. gRPC's shutdown must wait for this: it closes the in-process channel at once.
  bool AwaitIdle(absl::Time deadline);
  // StopAccepting, then waits for every connection to end (idle keep-alive ones within their
  // timeout). Idempotent.
  void Stop();

  struct Routes;

 private:
  HttpFrontEnd() = default;
  std::unique_ptr<TranslatorBackend> backend_;
  std::unique_ptr<DeeplApi> deepl_;  // DeepL's routes (it counts their characters)
  std::unique_ptr<Routes> routes_;
  int port_ = 0;
  std::thread listener_;
};

}  // namespace transerve::http
