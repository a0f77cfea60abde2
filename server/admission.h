// What a translation call must pass before anything is queued (token, model, request limits,
// deadline), and the queueing of an admitted request's sentences.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/pivot_leg.h"
#include "server/request_validation.h"
#include "server/service_context.h"
#include "transerve/v1/translator.pb.h"

namespace grpc {
class CallbackServerContext;
}  // namespace grpc

namespace transerve {

// UNAUTHENTICATED unless the call carries one of the configured bearer tokens (if any).
absl::Status Authenticate(const ServiceContext& context, const grpc::CallbackServerContext* ctx);

// An admitted request, kept by its reactor for as long as the call runs.
struct Admission {
  ModelLease lease;              // holds the model's version until the call is answered
  ServedModel* model = nullptr;  // lease.get()
  PreparedRequest prepared;      // options, the texts as documents, their segments' ids, ...
  absl::Time deadline = absl::InfiniteFuture();
  // With source_language "auto": what the detector said ("" when it could not tell).
  std::string detected_language;
  float detected_confidence = 0;
  // Set where no model translates the pair: `model` translates into pivot->language (`prepared`
  // is made for it) and pivot->model from there into the target.
  std::optional<PivotLeg> pivot;

  // The model whose output the caller gets, and the two whose ids the answer holds.
  const Translator& target_translator() const {
    return pivot ? *pivot->model->translator : *model->translator;
  }
  TranslationSides sides() const { return {*model->translator, target_translator()}; }
  // What the answer and the metrics call the model: its name, or "first+second" for a pivot.
  std::string name() const;
  // The response's pivot message (nothing set for one model).
  void FillPivot(v1::Pivot* out) const;
};

// Token, model (UNAVAILABLE while the server starts; by name or by language pair, detecting the
// source language for "auto"; where no model translates the pair, two through the server's
// pivot language, detecting an unnamed source; NOT_FOUND if none), the model's version (and a
// pivot's second model's, each waiting for its load when
// it is not loaded: repository errors such as RESOURCE_EXHAUSTED), request limits (segmenting
// and tokenizing), deadline. `done` gets the result exactly once: at once on this gRPC thread
// when the model is loaded, else from the repository's loader or housekeeping thread once the
// load is over, the deadline passes or `cancelled` says so. `model_name` is set before the wait,
// so a rejected request is still counted under it. A call that reaches us while draining is
// served: gRPC accepted it before its shutdown closed the door, and refusing it now would fail
// it where a balancer cannot retry (the scheduler refuses once it is shut down).
void Admit(ServiceContext& context, const grpc::CallbackServerContext* ctx,
           const v1::TranslateRequest& request, std::string* model_name,
           std::function<bool()> cancelled, std::function<void(absl::StatusOr<Admission>)> done);

// Queues one job per segment of an admitted request (through both legs of a pivot), then
// answers its empty segments (Translator::IsEmptySource) with the empty translation without
// queueing them. `on_done(i,
// result)` and, when set, `on_progress(i, ids)` receive the sentence's index. An error (the queue
// is full) means nothing was queued and no callback will run.
absl::Status StartSentences(
    const Admission& admitted, std::function<bool()> cancelled,
    const std::function<void(size_t, absl::StatusOr<SearchResult>)>& on_done,
    const std::function<void(size_t, const std::vector<int32_t>&)>& on_progress);

}  // namespace transerve
