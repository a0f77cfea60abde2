#include "server/admission.h"

#include <grpcpp/server_context.h>

#include <chrono>
#include <string_view>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/auth.h"

namespace transerve {
namespace {

absl::Time DeadlineOf(const grpc::CallbackServerContext* ctx) {
  const auto tp = ctx->deadline();
  if (tp == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(tp);
}

absl::StatusOr<ServedModel*> Resolve(ServiceContext& context, const std::string& name) {
  if (!context.ready.load())
    return absl::UnavailableError("the server is still loading its models");
  if (name.empty()) return context.models.front().get();
  for (auto& m : context.models) {
    if (m->name == name) return m.get();
  }
  std::vector<std::string> names;
  for (auto& m : context.models) names.push_back(m->name);
  // The name is the caller's: escaped and cut, so an error never carries a megabyte back.
  constexpr size_t kShown = 64;
  const std::string shown =
      absl::StrCat(absl::CHexEscape(name.substr(0, kShown)), name.size() > kShown ? "..." : "");
  return absl::NotFoundError(absl::StrCat("unknown model '", shown,
                                          "'; this server serves: ", absl::StrJoin(names, ", ")));
}

}  // namespace

absl::Status Authenticate(const ServiceContext& context, const grpc::CallbackServerContext* ctx) {
  if (context.config.auth_tokens.empty()) return absl::OkStatus();
  const auto& md = ctx->client_metadata();
  const auto it = md.find("authorization");
  const std::string_view presented =
      it == md.end() ? std::string_view() : std::string_view(it->second.data(), it->second.size());
  if (!BearerTokenAccepted(presented, context.config.auth_tokens)) {
    return absl::UnauthenticatedError("missing or wrong bearer token (authorization metadata)");
  }
  return absl::OkStatus();
}

absl::StatusOr<Admission> Admit(ServiceContext& context, const grpc::CallbackServerContext* ctx,
                                const v1::TranslateRequest& request, std::string* model_name) {
  if (auto s = Authenticate(context, ctx); !s.ok()) return s;
  auto model = Resolve(context, request.model());
  if (!model.ok()) return model.status();
  *model_name = (*model)->name;
  auto prepared = PrepareRequest(request, *(*model)->translator, context.config.limits);
  if (!prepared.ok()) return prepared.status();
  const absl::Time deadline = DeadlineOf(ctx);
  if (deadline <= absl::Now()) return absl::DeadlineExceededError("deadline already passed");
  return Admission{*model, *std::move(prepared), deadline};
}

absl::Status StartSentences(
    const Admission& admitted, std::function<bool()> cancelled,
    const std::function<void(size_t, absl::StatusOr<SearchResult>)>& on_done,
    const std::function<void(size_t, const std::vector<int32_t>&)>& on_progress) {
  const Translator& translator = *admitted.model->translator;
  const PreparedRequest& prepared = admitted.prepared;
  std::vector<SentenceJob> jobs;
  std::vector<size_t> empty;
  for (size_t i = 0; i < prepared.sources.size(); ++i) {
    if (translator.IsEmptySource(prepared.sources[i])) {
      empty.push_back(i);
      continue;
    }
    SentenceJob& job = jobs.emplace_back();
    job.source_ids = prepared.sources[i];  // the answer needs them too (counts, alignments)
    job.options = prepared.options;
    job.deadline = admitted.deadline;
    job.cancelled = cancelled;
    if (on_progress) {
      job.on_progress = [on_progress, i](const std::vector<int32_t>& ids) { on_progress(i, ids); };
    }
    job.on_done = [on_done, i](absl::StatusOr<SearchResult> r) { on_done(i, std::move(r)); };
  }
  if (!jobs.empty()) {
    if (auto s = admitted.model->scheduler->Submit(std::move(jobs)); !s.ok()) return s;
  }
  for (size_t i : empty) on_done(i, translator.EmptySourceResult(prepared.options));
  return absl::OkStatus();
}

}  // namespace transerve
