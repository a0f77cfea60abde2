#include "server/glossaries/glossary_service.h"

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/admission.h"
#include "server/glossaries/glossary_store.h"
#include "server/grpc_status.h"
#include "transerve/v1/glossaries.grpc.pb.h"

namespace transerve {
namespace {

using S = v1::Glossaries;
using Base = S::WithCallbackMethod_CreateGlossary<S::WithCallbackMethod_ListGlossaries<
    S::WithCallbackMethod_GetGlossary<S::WithCallbackMethod_GetGlossaryEntries<
        S::WithCallbackMethod_UpdateGlossary<S::WithCallbackMethod_DeleteGlossaryDictionary<
            S::WithCallbackMethod_DeleteGlossary<S::Service>>>>>>>;

std::vector<GlossaryDictionary> FromProto(
    const google::protobuf::RepeatedPtrField<v1::GlossaryDictionary>& in) {
  std::vector<GlossaryDictionary> out;
  for (const v1::GlossaryDictionary& d : in) {
    GlossaryDictionary& x = out.emplace_back();
    x.source_language = d.source_language();
    x.target_language = d.target_language();
    for (const v1::GlossaryEntry& e : d.entries()) x.entries.push_back({e.source(), e.target()});
  }
  return out;
}

void ToProto(const GlossaryDictionary& d, bool with_entries, v1::GlossaryDictionary* out) {
  out->set_source_language(d.source_language);
  out->set_target_language(d.target_language);
  out->set_entry_count(static_cast<int32_t>(d.entries.size()));
  if (!with_entries) return;
  for (const text::Term& t : d.entries) {
    v1::GlossaryEntry* e = out->add_entries();
    e->set_source(t.source);
    e->set_target(t.target);
  }
}

// Without entries.
void ToProto(const Glossary& g, v1::Glossary* out) {
  out->set_glossary_id(g.id);
  out->set_name(g.name);
  out->set_creation_time(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", g.created, absl::UTCTimeZone()));
  for (const GlossaryDictionary& d : g.dictionaries) ToProto(d, false, out->add_dictionaries());
}

class GlossaryService final : public Base {
 public:
  explicit GlossaryService(ServiceContext* context) : context_(context) {}

  grpc::ServerUnaryReactor* CreateGlossary(grpc::CallbackServerContext* ctx,
                                           const v1::CreateGlossaryRequest* request,
                                           v1::Glossary* response) override {
    return Run(ctx, "Glossaries.CreateGlossary", [&](GlossaryStore& store) {
      auto g = store.Create(request->name(), FromProto(request->dictionaries()));
      if (g.ok()) ToProto(**g, response);
      return g.status();
    });
  }

  grpc::ServerUnaryReactor* ListGlossaries(grpc::CallbackServerContext* ctx,
                                           const v1::ListGlossariesRequest*,
                                           v1::ListGlossariesResponse* response) override {
    return Run(ctx, "Glossaries.ListGlossaries", [&](GlossaryStore& store) {
      for (const auto& g : store.List()) ToProto(*g, response->add_glossaries());
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* GetGlossary(grpc::CallbackServerContext* ctx,
                                        const v1::GlossaryRequest* request,
                                        v1::Glossary* response) override {
    return Run(ctx, "Glossaries.GetGlossary", [&](GlossaryStore& store) {
      auto g = store.Get(request->glossary_id());
      if (g.ok()) ToProto(**g, response);
      return g.status();
    });
  }

  grpc::ServerUnaryReactor* GetGlossaryEntries(grpc::CallbackServerContext* ctx,
                                               const v1::GlossaryEntriesRequest* request,
                                               v1::GlossaryDictionary* response) override {
    return Run(ctx, "Glossaries.GetGlossaryEntries", [&](GlossaryStore& store) -> absl::Status {
      auto g = store.Get(request->glossary_id());
      if (!g.ok()) return g.status();
      const GlossaryDictionary* d =
          (*g)->Find(request->source_language(), request->target_language());
      if (d == nullptr) {
        return absl::NotFoundError(
            (*g)->MissingPair(request->source_language(), request->target_language()));
      }
      ToProto(*d, true, response);
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* UpdateGlossary(grpc::CallbackServerContext* ctx,
                                           const v1::UpdateGlossaryRequest* request,
                                           v1::Glossary* response) override {
    return Run(ctx, "Glossaries.UpdateGlossary", [&](GlossaryStore& store) {
      std::optional<std::string> name;
      if (request->has_name()) name = request->name();
      auto g = store.Update(
          request->glossary_id(), std::move(name), FromProto(request->dictionaries()),
          request->mode() == v1::UpdateGlossaryRequest::MODE_REPLACE ? DictionaryUpdate::kReplace
                                                                     : DictionaryUpdate::kMerge);
      if (g.ok()) ToProto(**g, response);
      return g.status();
    });
  }

  grpc::ServerUnaryReactor* DeleteGlossaryDictionary(grpc::CallbackServerContext* ctx,
                                                     const v1::GlossaryEntriesRequest* request,
                                                     v1::DeleteGlossaryResponse*) override {
    return Run(ctx, "Glossaries.DeleteGlossaryDictionary", [&](GlossaryStore& store) {
      return store.DeleteDictionary(request->glossary_id(), request->source_language(),
                                    request->target_language());
    });
  }

  grpc::ServerUnaryReactor* DeleteGlossary(grpc::CallbackServerContext* ctx,
                                           const v1::GlossaryRequest* request,
                                           v1::DeleteGlossaryResponse*) override {
    return Run(ctx, "Glossaries.DeleteGlossary",
               [&](GlossaryStore& store) { return store.Delete(request->glossary_id()); });
  }

 private:
  // Checks the token, runs `work` on this thread (the store's calls are quick: a file write at
  // most) and answers.
  template <typename Work>
  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* ctx, const char* method, Work work) {
    auto* reactor = ctx->DefaultReactor();
    const absl::Time start = absl::Now();
    absl::Status s = Authenticate(*context_, ctx);
    if (s.ok()) s = work(*context_->glossaries);
    const grpc::Status g = ToGrpcStatus(s);
    context_->Record(method, g.error_code(), "", ctx, start, 0);
    reactor->Finish(g);
    return reactor;
  }

  ServiceContext* const context_;
};

}  // namespace

std::unique_ptr<grpc::Service> MakeGlossaryService(ServiceContext* context) {
  return std::make_unique<GlossaryService>(context);
}

}  // namespace transerve
