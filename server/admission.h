// What a translation call must pass before anything is queued (token, model, request limits,
// deadline), and the queueing of an admitted request's sentences.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
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
  ServedModel* model = nullptr;
  PreparedRequest prepared;  // options, the texts as documents, their segments' ids, ...
  absl::Time deadline = absl::InfiniteFuture();
  // With source_language "auto": what the detector said ("" when it could not tell).
  std::string detected_language;
  float detected_confidence = 0;
};

// Token, model (UNAVAILABLE while loading; by name or by language pair, detecting the source
// language for "auto"; NOT_FOUND if none), request limits (segmenting and tokenizing on this
// gRPC thread), deadline. `model_name` is set as soon as the model is known, so a rejected
// request is still counted under it. A call that reaches us while draining is served: gRPC
// accepted it before its shutdown closed the door, and refusing it now would fail it where a
// balancer cannot retry (the scheduler refuses once it is shut down).
absl::StatusOr<Admission> Admit(ServiceContext& context, const grpc::CallbackServerContext* ctx,
                                const v1::TranslateRequest& request, std::string* model_name);

// Queues one job per segment of an admitted request, then answers its empty segments
// (Translator::IsEmptySource) with the empty translation without queueing them. `on_done(i,
// result)` and, when set, `on_progress(i, ids)` receive the sentence's index. An error (the queue
// is full) means nothing was queued and no callback will run.
absl::Status StartSentences(
    const Admission& admitted, std::function<bool()> cancelled,
    const std::function<void(size_t, absl::StatusOr<SearchResult>)>& on_done,
    const std::function<void(size_t, const std::vector<int32_t>&)>& on_progress);

}  // namespace transerve
