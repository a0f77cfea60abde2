// What the HTTP APIs call to translate: the Translator service, reached in-process over gRPC by
// the server (grpc_bridge.h), so HTTP requests take the same path as gRPC ones. An interface so
// that the APIs' mapping is unit-tested over a recording fake as well as over the real server.
#pragma once

#include <grpcpp/support/status.h>

#include <functional>
#include <string>

#include "transerve/v1/translator.pb.h"

namespace transerve::http {

struct CallOptions {
  std::string bearer_token;  // sent as "authorization: Bearer <token>" when not empty
  long timeout_ms = 0;       // 0: no deadline
};

class TranslatorBackend {
 public:
  virtual ~TranslatorBackend() = default;
  // Each blocks the calling (HTTP worker) thread until the call ends; never the scheduler.
  virtual grpc::Status Translate(const v1::TranslateRequest& request, const CallOptions& options,
                                 v1::TranslateResponse* response) = 0;
  // `on_message` runs for each message in order; returning false cancels the call (the client
  // went away). The status is the call's.
  virtual grpc::Status TranslateStream(
      const v1::TranslateRequest& request, const CallOptions& options,
      const std::function<bool(const v1::TranslateStreamResponse&)>& on_message) = 0;
  virtual grpc::Status ListModels(const CallOptions& options, v1::ListModelsResponse* response) = 0;
  // gRPC health's answer for the whole server: SERVING (true) or not.
  virtual bool Serving() = 0;
  // Whether bearer tokens are configured (LibreTranslate's /frontend/settings says so).
  virtual bool KeyRequired() const = 0;
};

}  // namespace transerve::http
