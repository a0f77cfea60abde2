#include "server/admin_service.h"

#include <grpcpp/grpcpp.h>

#include <string>

#include "model/core/logging.h"
#include "server/auth.h"
#include "server/grpc_status.h"
#include "transerve/v1/admin.grpc.pb.h"

namespace transerve {
namespace {

using Base = v1::Admin::WithCallbackMethod_ListModels<
    v1::Admin::WithCallbackMethod_LoadModel<v1::Admin::WithCallbackMethod_UnloadModel<
        v1::Admin::WithCallbackMethod_ReloadModel<v1::Admin::Service>>>>;

class AdminService final : public Base {
 public:
  explicit AdminService(ServiceContext* context) : context_(context) {}

  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* ctx,
                                       const v1::AdminListModelsRequest*,
                                       v1::AdminListModelsResponse* response) override {
    auto* reactor = ctx->DefaultReactor();
    absl::Status s = Check(ctx);
    if (s.ok()) *response = context_->repository->Status();
    Finish(reactor, ctx, "Admin.ListModels", "", absl::Now(), s);
    return reactor;
  }

  grpc::ServerUnaryReactor* LoadModel(grpc::CallbackServerContext* ctx,
                                      const v1::ModelRequest* request,
                                      v1::ModelStatus* response) override {
    return Deferred(ctx, "Admin.LoadModel", request->name(), response,
                    [this](const std::string& name, ModelRepository::StatusDone done) {
                      context_->repository->Load(name, std::move(done));
                    });
  }

  grpc::ServerUnaryReactor* UnloadModel(grpc::CallbackServerContext* ctx,
                                        const v1::ModelRequest* request,
                                        v1::ModelStatus* response) override {
    return Deferred(ctx, "Admin.UnloadModel", request->name(), response,
                    [this](const std::string& name, ModelRepository::StatusDone done) {
                      done(context_->repository->Unload(name));
                    });
  }

  grpc::ServerUnaryReactor* ReloadModel(grpc::CallbackServerContext* ctx,
                                        const v1::ModelRequest* request,
                                        v1::ModelStatus* response) override {
    return Deferred(ctx, "Admin.ReloadModel", request->name(), response,
                    [this](const std::string& name, ModelRepository::StatusDone done) {
                      context_->repository->Reload(name, std::move(done));
                    });
  }

 private:
  absl::Status Check(const grpc::CallbackServerContext* ctx) const {
    if (context_->config.admin_tokens.empty()) {
      return absl::PermissionDeniedError(
          "the admin service is off: start the server with --admin_token or --admin_tokens_file");
    }
    const auto& md = ctx->client_metadata();
    const auto it = md.find("authorization");
    const std::string_view presented = it == md.end()
                                           ? std::string_view()
                                           : std::string_view(it->second.data(), it->second.size());
    if (!BearerTokenAccepted(presented, context_->config.admin_tokens)) {
      return absl::UnauthenticatedError(
          "missing or wrong admin bearer token (authorization metadata)");
    }
    if (!context_->ready.load() || context_->repository == nullptr) {
      return absl::UnavailableError("the server is still loading its models");
    }
    return absl::OkStatus();
  }

  // Runs `work` (which answers through its callback, possibly on another thread) once the call
  // is authorized.
  template <typename Work>
  grpc::ServerUnaryReactor* Deferred(grpc::CallbackServerContext* ctx, const char* method,
                                     const std::string& name, v1::ModelStatus* response,
                                     Work work) {
    auto* reactor = ctx->DefaultReactor();
    const absl::Time start = absl::Now();
    if (absl::Status s = Check(ctx); !s.ok()) {
      Finish(reactor, ctx, method, name, start, s);
      return reactor;
    }
    if (name.empty()) {
      Finish(reactor, ctx, method, name, start, absl::InvalidArgumentError("name is empty"));
      return reactor;
    }
    Log().info("admin {} '{}'", method, name);
    work(name, [this, reactor, ctx, method, name, start,
                response](absl::StatusOr<v1::ModelStatus> result) {
      if (result.ok()) *response = *std::move(result);
      Finish(reactor, ctx, method, name, start, result.status());
    });
    return reactor;
  }

  void Finish(grpc::ServerUnaryReactor* reactor, const grpc::CallbackServerContext* ctx,
              const char* method, const std::string& model, absl::Time start,
              const absl::Status& s) {
    const grpc::Status g = ToGrpcStatus(s);
    context_->Record(method, g.error_code(), model, ctx, start, 0);
    reactor->Finish(g);
  }

  ServiceContext* const context_;
};

}  // namespace

std::unique_ptr<grpc::Service> MakeAdminService(ServiceContext* context) {
  return std::make_unique<AdminService>(context);
}

}  // namespace transerve
