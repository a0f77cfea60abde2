#include "server/translator_service.h"

#include <grpcpp/grpcpp.h>

#include <utility>

#include "server/admission.h"
#include "server/grpc_status.h"
#include "server/raw_messages.h"
#include "server/stream_reactor.h"
#include "server/translate_reactor.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

// What a call whose bytes are no TranslateRequest gets (the code gRPC itself gives a message it
// cannot parse).
grpc::Status Unparsable() {
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                      "the request cannot be parsed as a transerve.v1.TranslateRequest");
}

// A stream refused before it starts.
class RefusedStream final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// Translate and TranslateStream are raw methods, parsed by raw_messages.h (leniently, so that
// validation sees invalid UTF-8); ListModels is an ordinary one.
using Base = v1::Translator::WithRawCallbackMethod_Translate<
    v1::Translator::WithRawCallbackMethod_TranslateStream<
        v1::Translator::WithCallbackMethod_ListModels<v1::Translator::Service>>>;

class TranslatorService final : public Base {
 public:
  explicit TranslatorService(ServiceContext* context) : context_(context) {}

  grpc::ServerUnaryReactor* Translate(grpc::CallbackServerContext* ctx,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override {
    auto parsed = ParseTranslateRequest(*request);
    if (!parsed.has_value()) {
      grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
      reactor->Finish(Unparsable());
      return reactor;
    }
    return StartTranslate(context_, ctx, *std::move(parsed), response);
  }

  grpc::ServerWriteReactor<grpc::ByteBuffer>* TranslateStream(
      grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request) override {
    auto parsed = ParseTranslateRequest(*request);
    if (!parsed.has_value()) return new RefusedStream(Unparsable());
    return StartTranslateStream(context_, ctx, *std::move(parsed));
  }

  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* ctx,
                                       const v1::ListModelsRequest*,
                                       v1::ListModelsResponse* resp) override {
    const absl::Time start = absl::Now();
    auto* reactor = ctx->DefaultReactor();
    grpc::Status status = grpc::Status::OK;
    if (auto s = Authenticate(*context_, ctx); !s.ok()) {
      status = ToGrpcStatus(s);
    } else if (!context_->ready.load()) {
      status = ToGrpcStatus(absl::UnavailableError("the server is still loading its models"));
    } else {
      for (v1::ModelInfo& m : context_->repository->ModelInfos())
        *resp->add_models() = std::move(m);
      resp->set_pivot_language(context_->config.pivot_language);
    }
    context_->Record("ListModels", status.error_code(), "", ctx, start, 0);
    reactor->Finish(status);
    return reactor;
  }

 private:
  ServiceContext* const context_;
};

}  // namespace

std::unique_ptr<grpc::Service> MakeTranslatorService(ServiceContext* context) {
  return std::make_unique<TranslatorService>(context);
}

}  // namespace transerve
