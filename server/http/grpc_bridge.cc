#include "server/http/grpc_bridge.h"

#include <grpcpp/client_context.h>

#include <chrono>
#include <utility>

#include "server/http/front_end_metadata.h"

namespace transerve::http {
namespace {

void Prepare(const CallOptions& options, grpc::ClientContext* ctx,
             const std::string& token_override = "") {
  ctx->AddMetadata(kFrontEndMetadataKey, "http");
  const std::string& token = token_override.empty() ? options.bearer_token : token_override;
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  if (options.timeout_ms > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(options.timeout_ms));
  }
}

class GrpcStream final : public TranslatorBackend::Stream {
 public:
  GrpcStream(v1::Translator::Stub* stub, const v1::TranslateRequest& request,
             const CallOptions& options) {
    Prepare(options, &ctx_);
    reader_ = stub->TranslateStream(&ctx_, request);
  }
  ~GrpcStream() override {
    if (!finished_) {
      ctx_.TryCancel();
      Finish();
    }
  }
  bool Next(v1::TranslateStreamResponse* message) override { return reader_->Read(message); }
  void Cancel() override { ctx_.TryCancel(); }
  grpc::Status Finish() override {
    if (!finished_) {
      // Finish needs every message read first.
      v1::TranslateStreamResponse rest;
      while (reader_->Read(&rest)) {
      }
      status_ = reader_->Finish();
      finished_ = true;
    }
    return status_;
  }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<v1::TranslateStreamResponse>> reader_;
  bool finished_ = false;
  grpc::Status status_;
};

}  // namespace

GrpcBackend::GrpcBackend(std::shared_ptr<grpc::Channel> channel, std::string server_token,
                         std::function<bool()> serving)
    : channel_(std::move(channel)),
      stub_(v1::Translator::NewStub(channel_)),
      glossaries_(v1::Glossaries::NewStub(channel_)),
      server_token_(std::move(server_token)),
      key_required_(!server_token_.empty()),
      serving_(std::move(serving)) {}

grpc::Status GrpcBackend::Translate(const v1::TranslateRequest& request, const CallOptions& options,
                                    v1::TranslateResponse* response) {
  grpc::ClientContext ctx;
  Prepare(options, &ctx);
  return stub_->Translate(&ctx, request, response);
}

std::unique_ptr<TranslatorBackend::Stream> GrpcBackend::OpenStream(
    const v1::TranslateRequest& request, const CallOptions& options) {
  return std::make_unique<GrpcStream>(stub_.get(), request, options);
}

grpc::Status GrpcBackend::ListModels(const CallOptions& options, v1::ListModelsResponse* response) {
  grpc::ClientContext ctx;
  Prepare(options, &ctx, options.as_server ? server_token_ : "");
  return stub_->ListModels(&ctx, v1::ListModelsRequest(), response);
}

bool GrpcBackend::Serving() { return serving_(); }

// A unary call with the caller's token (and deadline): `call(ctx)` makes it.
template <typename Call>
grpc::Status Unary(const CallOptions& options, Call call) {
  grpc::ClientContext ctx;
  Prepare(options, &ctx);
  return call(&ctx);
}

grpc::Status GrpcBackend::CreateGlossary(const v1::CreateGlossaryRequest& request,
                                         const CallOptions& options, v1::Glossary* response) {
  return Unary(options, [&](grpc::ClientContext* ctx) {
    return glossaries_->CreateGlossary(ctx, request, response);
  });
}

grpc::Status GrpcBackend::ListGlossaries(const CallOptions& options,
                                         v1::ListGlossariesResponse* response) {
  return Unary(options, [&](grpc::ClientContext* ctx) {
    return glossaries_->ListGlossaries(ctx, v1::ListGlossariesRequest(), response);
  });
}

grpc::Status GrpcBackend::GetGlossary(const v1::GlossaryRequest& request,
                                      const CallOptions& options, v1::Glossary* response) {
  return Unary(options, [&](grpc::ClientContext* ctx) {
    return glossaries_->GetGlossary(ctx, request, response);
  });
}

grpc::Status GrpcBackend::GetGlossaryEntries(const v1::GlossaryEntriesRequest& request,
                                             const CallOptions& options,
                                             v1::GlossaryDictionary* response) {
  return Unary(options, [&](grpc::ClientContext* ctx) {
    return glossaries_->GetGlossaryEntries(ctx, request, response);
  });
}

grpc::Status GrpcBackend::UpdateGlossary(const v1::UpdateGlossaryRequest& request,
                                         const CallOptions& options, v1::Glossary* response) {
  return Unary(options, [&](grpc::ClientContext* ctx) {
    return glossaries_->UpdateGlossary(ctx, request, response);
  });
}

grpc::Status GrpcBackend::DeleteGlossaryDictionary(const v1::GlossaryEntriesRequest& request,
                                                   const CallOptions& options) {
  v1::DeleteGlossaryResponse response;
  return Unary(options, [&](grpc::ClientContext* ctx) {
    return glossaries_->DeleteGlossaryDictionary(ctx, request, &response);
  });
}

grpc::Status GrpcBackend::DeleteGlossary(const v1::GlossaryRequest& request,
                                         const CallOptions& options) {
  v1::DeleteGlossaryResponse response;
  return Unary(options, [&](grpc::ClientContext* ctx) {
    return glossaries_->DeleteGlossary(ctx, request, &response);
  });
}

}  // namespace transerve::http
