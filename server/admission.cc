#include "server/admission.h"

#include <grpcpp/server_context.h>

#include <chrono>
#include <string_view>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/auth.h"
#include "server/model_routing.h"
#include "text/language_code.h"
#include "text/language_detector.h"

namespace transerve {
namespace {

absl::Time DeadlineOf(const grpc::CallbackServerContext* ctx) {
  const auto tp = ctx->deadline();
  if (tp == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(tp);
}

// The canonical code of a request's language field; "" when the field is empty.
absl::StatusOr<std::string> LanguageField(const char* field, const std::string& value) {
  if (value.empty()) return std::string();
  std::string code = text::CanonicalLanguage(value);
  if (code.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " '", absl::CHexEscape(value.substr(0, 32)),
                     "' is not a language code (ISO 639-1 or 639-3, e.g. \"de\" or \"deu\")"));
  }
  return code;
}

// The texts the detector looks at: all of them, up to a bound (detection needs far less).
std::string DetectionSample(const v1::TranslateRequest& request) {
  constexpr size_t kMaxBytes = 16 << 10;
  std::string sample;
  for (const std::string& t : request.texts()) {
    if (sample.size() >= kMaxBytes) break;
    sample.append(t, 0, kMaxBytes - sample.size());
    sample += '\n';
  }
  return sample;
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

namespace {

// What is known of a request before its model's version is at hand.
struct Routed {
  std::string model;
  std::string source;          // canonical, as named or detected; "" = not known
  std::string target;          // canonical; "" = the model's own
  std::string second_model;    // a pivot's second leg; "" for one model
  std::string pivot_language;  // the language between the legs
  bool detection_ran = false;
  std::string detected_language;
  float detected_confidence = 0;
  absl::Time deadline = absl::InfiniteFuture();
};

// Runs the language detector on the request's texts into `routed`; its answer, or "" when it
// cannot tell.
std::string DetectSource(const v1::TranslateRequest& request, Routed* routed) {
  routed->detection_ran = true;
  const bool html = request.document().format() == v1::DocumentOptions::FORMAT_HTML;
  const auto found = text::DetectLanguages(DetectionSample(request), html, 1);
  if (found.empty()) return "";
  routed->detected_language = found.front().code;
  routed->detected_confidence = found.front().confidence;
  return found.front().code;
}

// A source for model `name` (languages `l`) that needs one: the request's, else the detector's.
absl::Status EnsureSource(const std::string& name, const ModelLanguages& l,
                          const v1::TranslateRequest& request, Routed* routed) {
  if (!l.NeedsSource() || !routed->source.empty()) return absl::OkStatus();
  if (!routed->detection_ran) routed->source = DetectSource(request, routed);
  if (routed->source.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", name,
                     "' needs the source language and the detector could not tell it: name it in "
                     "source_language"));
  }
  if (!l.ServesSource(routed->source)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the text looks like '", routed->source, "', which model '", name,
                     "' does not read: name the source language in source_language"));
  }
  return absl::OkStatus();
}

// A pair no model translates (`direct` is RouteRequest's NOT_FOUND), through the server's
// pivot language: the source is detected when the request names none. `direct`, with why no
// pivot serves either, when none does.
absl::StatusOr<PivotRoute> PivotOf(const ServiceContext& context,
                                   const v1::TranslateRequest& request,
                                   const std::vector<RoutableModel>& models,
                                   const absl::Status& direct, LanguageRequest* languages,
                                   Routed* routed) {
  const std::string& via = context.config.pivot_language;
  if (!absl::IsNotFound(direct) || via.empty() || !languages->model.empty() ||
      languages->target.empty()) {
    return direct;
  }
  if (languages->source.empty() && !routed->detection_ran) {
    languages->source = DetectSource(request, routed);
  }
  auto pivot = RoutePivot(models, *languages, via);
  if (!pivot.ok()) {
    return absl::NotFoundError(
        absl::StrCat(direct.message(), "; nor through '", via, "': ", pivot.status().message()));
  }
  return pivot;
}

absl::StatusOr<Routed> RouteOf(ServiceContext& context, const grpc::CallbackServerContext* ctx,
                               const v1::TranslateRequest& request) {
  if (auto s = Authenticate(context, ctx); !s.ok()) return s;
  if (!context.ready.load()) {
    return absl::UnavailableError("the server is still loading its models");
  }
  Routed routed;
  LanguageRequest languages;
  languages.model = request.model();
  auto target = LanguageField("target_language", request.target_language());
  if (!target.ok()) return target.status();
  languages.target = *target;
  if (request.source_language() == "auto") {
    languages.source = DetectSource(request, &routed);
  } else {
    auto source = LanguageField("source_language", request.source_language());
    if (!source.ok()) return source.status();
    languages.source = *source;
  }
  const auto models = context.repository->Routable();
  auto route = RouteRequest(*models, languages);
  if (!route.ok()) {
    auto pivot = PivotOf(context, request, *models, route.status(), &languages, &routed);
    if (!pivot.ok()) return pivot.status();
    routed.model = (*models)[pivot->first.model].name;
    routed.second_model = (*models)[pivot->second.model].name;
    routed.pivot_language = pivot->language;
  } else {
    if (route->needs_source) {
      // The model's sources start with their language's token: one must be named or detected,
      // and may then be served by another model.
      routed.source = languages.source;
      const RoutableModel& m = (*models)[route->model];
      if (auto s = EnsureSource(m.name, m.languages, request, &routed); !s.ok()) return s;
      languages.source = routed.source;
      route = RouteRequest(*models, languages);
      if (!route.ok()) return route.status();
    }
    routed.model = (*models)[route->model].name;
  }
  routed.source = languages.source;
  routed.target = languages.target;
  routed.deadline = DeadlineOf(ctx);
  if (routed.deadline <= absl::Now()) {
    return absl::DeadlineExceededError("deadline already passed");
  }
  return routed;
}

}  // namespace

namespace {

// What answers and metrics call the model: its name, or "first+second" for a pivot.
std::string ModelName(const std::string& first, const std::string& second) {
  return second.empty() ? first : absl::StrCat(first, "+", second);
}

// The terms of the glossary the request names (null when none) for its pair: the source as
// named or detected, else the model's; the target as named, else the model's.
absl::StatusOr<std::shared_ptr<const text::TermTable>> StoredGlossary(
    const ServiceContext& context, const v1::TranslateRequest& request, const Routed& routed,
    const ModelLanguages& served) {
  const std::string& id = request.document().glossary_id();
  if (id.empty()) return nullptr;
  if (context.glossaries == nullptr) return absl::NotFoundError("this server keeps no glossaries");
  const bool named_source = !routed.source.empty() && routed.source != "mul";
  const std::string& source = named_source ? routed.source : served.source;
  const std::string& target = routed.target.empty() ? served.target : routed.target;
  if (source.empty() || source == "mul" || target.empty() || target == "mul") {
    return absl::InvalidArgumentError(
        "a glossary needs the request's language pair: name source_language and "
        "target_language");
  }
  return context.glossaries->TermsFor(id, source, target);
}

// The admission of a routed request once its model (and a pivot's second) is at hand.
absl::StatusOr<Admission> Prepare(ServiceContext& context, const v1::TranslateRequest& request,
                                  Routed routed, ModelLease lease, ModelLease second) {
  Admission admitted;
  admitted.lease = std::move(lease);
  admitted.model = admitted.lease.get();
  // The languages of the version loaded (a listing may not have known them).
  const ModelLanguages& served = admitted.model->languages;
  if (auto s = EnsureSource(routed.model, served, request, &routed); !s.ok()) return s;
  const bool pivot = static_cast<bool>(second);
  auto tokens = served.tokens.Resolve(routed.model, routed.source,
                                      pivot ? routed.pivot_language : routed.target);
  if (!tokens.ok()) return tokens.status();
  admitted.deadline = routed.deadline;
  admitted.detected_language = routed.detected_language;
  admitted.detected_confidence = routed.detected_confidence;
  // Sentence break rules: the source's language as asked or detected, else the model's.
  const std::string& split =
      routed.source.empty() || routed.source == "mul" ? served.source : routed.source;
  auto glossary = StoredGlossary(context, request, routed, served);
  if (!glossary.ok()) return glossary.status();
  auto prepared = PrepareRequest(request, *admitted.model->translator, context.config.limits,
                                 *tokens, split, *std::move(glossary));
  if (!prepared.ok()) return prepared.status();
  admitted.prepared = *std::move(prepared);
  if (pivot) {
    auto leg = PreparePivotLeg(request, context.config.limits, std::move(second),
                               routed.pivot_language, routed.target);
    if (!leg.ok()) return leg.status();
    admitted.pivot = *std::move(leg);
  }
  if (admitted.deadline <= absl::Now()) {
    return absl::DeadlineExceededError("the deadline passed while the model loaded");
  }
  return admitted;
}

}  // namespace

std::string Admission::name() const {
  return ModelName(model->name, pivot ? pivot->model->name : "");
}

void Admission::FillPivot(v1::Pivot* out) const {
  if (!pivot) return;
  out->set_language(pivot->language);
  out->set_first_model(model->name);
  out->set_second_model(pivot->model->name);
}

void Admit(ServiceContext& context, const grpc::CallbackServerContext* ctx,
           const v1::TranslateRequest& request, std::string* model_name,
           std::function<bool()> cancelled, std::function<void(absl::StatusOr<Admission>)> done) {
  auto routed = RouteOf(context, ctx, request);
  if (!routed.ok()) return done(routed.status());
  *model_name = ModelName(routed->model, routed->second_model);
  const std::string model = routed->model;
  const absl::Time deadline = routed->deadline;
  context.repository->Acquire(
      model, deadline, cancelled,
      [&context, &request, routed = *std::move(routed), cancelled,
       done = std::move(done)](absl::StatusOr<ModelLease> lease) mutable {
        if (!lease.ok()) return done(lease.status());
        if (routed.second_model.empty()) {
          return done(Prepare(context, request, std::move(routed), *std::move(lease), {}));
        }
        // A pivot: the second leg's model once the first's is held (both serve every segment).
        auto first = std::make_shared<ModelLease>(*std::move(lease));
        const std::string second = routed.second_model;
        const absl::Time deadline = routed.deadline;
        context.repository->Acquire(
            second, deadline, std::move(cancelled),
            [&context, &request, routed = std::move(routed), first,
             done = std::move(done)](absl::StatusOr<ModelLease> lease) mutable {
              if (!lease.ok()) return done(lease.status());
              done(Prepare(context, request, std::move(routed), std::move(*first),
                           *std::move(lease)));
            });
      });
}

absl::Status StartSentences(
    const Admission& admitted, std::function<bool()> cancelled,
    const std::function<void(size_t, absl::StatusOr<SearchResult>)>& on_done,
    const std::function<void(size_t, const std::vector<int32_t>&)>& on_progress) {
  const Translator& translator = *admitted.model->translator;
  const PreparedRequest& prepared = admitted.prepared;
  const PivotLeg* pivot = admitted.pivot ? &*admitted.pivot : nullptr;
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
    // Markup and protected spans go back where the alignment says, asked for or not.
    job.options.return_alignment = prepared.options.return_alignment || prepared.needs_alignment[i];
    job.deadline = admitted.deadline;
    job.cancelled = cancelled;
    if (on_progress) {
      job.on_progress = [on_progress, i](const std::vector<int32_t>& ids) { on_progress(i, ids); };
    }
    job.on_done = [on_done, i](absl::StatusOr<SearchResult> r) { on_done(i, std::move(r)); };
    if (pivot != nullptr) {
      MakePivotJob(*admitted.model, *pivot, admitted.prepared.model_text(i), &job);
    }
  }
  if (!jobs.empty()) {
    if (auto s = admitted.model->scheduler->Submit(std::move(jobs)); !s.ok()) return s;
  }
  // In the ids of the model that makes the output.
  for (size_t i : empty) {
    on_done(i, pivot != nullptr ? pivot->model->translator->EmptySourceResult(pivot->options)
                                : translator.EmptySourceResult(prepared.options));
  }
  return absl::OkStatus();
}

}  // namespace transerve
