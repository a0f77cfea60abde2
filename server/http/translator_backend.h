// What the HTTP APIs call to translate: the Translator service, reached in-process over gRPC by
// the server (grpc_bridge.h), so HTTP requests take the same path as gRPC ones. An interface so
// that the APIs' mapping is unit-tested over a recording fake as well as over the real server.
#pragma once

#include <grpcpp/support/status.h>

#include <memory>
#include <string>

#include "transerve/v1/glossaries.pb.h"
#include "transerve/v1/translator.pb.h"

namespace transerve::http {

struct CallOptions {
  std::string bearer_token;  // sent as "authorization: Bearer <token>" when not empty
  long timeout_ms = 0;       // 0: no deadline
  // ListModels only: list as the server itself, whatever token the caller has. LibreTranslate's
  // /languages and /frontend/settings are open to anyone, as its server has them.
  bool as_server = false;
};

class TranslatorBackend {
 public:
  virtual ~TranslatorBackend() = default;
  // Each blocks the calling (HTTP worker) thread until the call ends; never the scheduler.
  virtual grpc::Status Translate(const v1::TranslateRequest& request, const CallOptions& options,
                                 v1::TranslateResponse* response) = 0;
  // A TranslateStream call, read message by message on the calling thread (so an HTTP answer
  // can still choose its status from the first message or the error that came instead).
  class Stream {
   public:
    virtual ~Stream() = default;
    // The next message; false when the call is over (then Finish says how).
    virtual bool Next(v1::TranslateStreamResponse* message) = 0;
    // Ends the call early (the client went away); Finish then says CANCELLED.
    virtual void Cancel() = 0;
    // The call's status, once Next returned false or after Cancel.
    virtual grpc::Status Finish() = 0;
  };
  virtual std::unique_ptr<Stream> OpenStream(const v1::TranslateRequest& request,
                                             const CallOptions& options) = 0;
  virtual grpc::Status ListModels(const CallOptions& options, v1::ListModelsResponse* response) = 0;
  // gRPC health's answer for the whole server: SERVING (true) or not.
  virtual bool Serving() = 0;
  // Whether bearer tokens are configured (LibreTranslate's /frontend/settings says so).
  virtual bool KeyRequired() const = 0;

  // The Glossaries service's calls (DeepL's glossary routes). A backend without glossaries
  // answers UNIMPLEMENTED.
  virtual grpc::Status CreateGlossary(const v1::CreateGlossaryRequest&, const CallOptions&,
                                      v1::Glossary*) {
    return NoGlossaries();
  }
  virtual grpc::Status ListGlossaries(const CallOptions&, v1::ListGlossariesResponse*) {
    return NoGlossaries();
  }
  virtual grpc::Status GetGlossary(const v1::GlossaryRequest&, const CallOptions&, v1::Glossary*) {
    return NoGlossaries();
  }
  virtual grpc::Status GetGlossaryEntries(const v1::GlossaryEntriesRequest&, const CallOptions&,
                                          v1::GlossaryDictionary*) {
    return NoGlossaries();
  }
  virtual grpc::Status UpdateGlossary(const v1::UpdateGlossaryRequest&, const CallOptions&,
                                      v1::Glossary*) {
    return NoGlossaries();
  }
  virtual grpc::Status DeleteGlossaryDictionary(const v1::GlossaryEntriesRequest&,
                                                const CallOptions&) {
    return NoGlossaries();
  }
  virtual grpc::Status DeleteGlossary(const v1::GlossaryRequest&, const CallOptions&) {
    return NoGlossaries();
  }

 private:
  static grpc::Status NoGlossaries() {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this backend keeps no glossaries");
  }
};

}  // namespace transerve::http
