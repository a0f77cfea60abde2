// The HTTP front end's TranslatorBackend: the Translator service, called over the server's
// in-process channel. Every HTTP request thus takes gRPC's own path (auth,
// validation, documents, routing, the scheduler, the drain), and its calls are marked as HTTP's
// for the metrics (front_end_metadata.h).
#pragma once

#include <grpcpp/channel.h>

#include <functional>
#include <memory>
#include <string>

#include "server/http/translator_backend.h"
#include "transerve/v1/glossaries.grpc.pb.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve::http {

class GrpcBackend final : public TranslatorBackend {
 public:
  // `server_token`: one of the server's bearer tokens ("" when it has none), for the listings
  // open to anyone (CallOptions::as_server). `serving` is the predicate gRPC health is set
  // from (the same answer, not a second one).
  GrpcBackend(std::shared_ptr<grpc::Channel> channel, std::string server_token,
              std::function<bool()> serving);

  grpc::Status Translate(const v1::TranslateRequest& request, const CallOptions& options,
                         v1::TranslateResponse* response) override;
  std::unique_ptr<Stream> OpenStream(const v1::TranslateRequest& request,
                                     const CallOptions& options) override;
  grpc::Status ListModels(const CallOptions& options, v1::ListModelsResponse* response) override;
  bool Serving() override;
  bool KeyRequired() const override { return key_required_; }
  grpc::Status CreateGlossary(const v1::CreateGlossaryRequest& request, const CallOptions& options,
                              v1::Glossary* response) override;
  grpc::Status ListGlossaries(const CallOptions& options,
                              v1::ListGlossariesResponse* response) override;
  grpc::Status GetGlossary(const v1::GlossaryRequest& request, const CallOptions& options,
                           v1::Glossary* response) override;
  grpc::Status GetGlossaryEntries(const v1::GlossaryEntriesRequest& request,
                                  const CallOptions& options,
                                  v1::GlossaryDictionary* response) override;
  grpc::Status UpdateGlossary(const v1::UpdateGlossaryRequest& request, const CallOptions& options,
                              v1::Glossary* response) override;
  grpc::Status DeleteGlossaryDictionary(const v1::GlossaryEntriesRequest& request,
                                        const CallOptions& options) override;
  grpc::Status DeleteGlossary(const v1::GlossaryRequest& request,
                              const CallOptions& options) override;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Translator::Stub> stub_;
  std::unique_ptr<v1::Glossaries::Stub> glossaries_;
  const std::string server_token_;
  const bool key_required_;
  const std::function<bool()> serving_;
};

}  // namespace transerve::http
