#include "server/translate_reactor.h"

#include <grpcpp/server_context.h>

#include <atomic>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/admission.h"
#include "server/grpc_status.h"
#include "server/raw_messages.h"
#include "server/response_builder.h"

namespace transerve {
namespace {

// Aggregates the segments of one request's texts. Finishes only after every job's on_done, so the
// RPC's context outlives all callbacks.
class TranslateReactor final : public grpc::ServerUnaryReactor {
 public:
  TranslateReactor(ServiceContext* context, grpc::CallbackServerContext* ctx,
                   v1::TranslateRequest request, grpc::ByteBuffer* response)
      : context_(context),
        ctx_(ctx),
        request_(std::move(request)),
        response_(response),
        start_(absl::Now()) {
    context_->Enter();
    Begin();
  }
  void OnCancel() override { cancelled_.store(true); }
  void OnDone() override {
    context_->Leave();
    delete this;
  }

 private:
  // Its model may have to load first: Admitted runs once it is at hand (or the call failed).
  void Begin() {
    Admit(
        *context_, ctx_, request_, &model_name_, [this] { return cancelled_.load(); },
        [this](absl::StatusOr<Admission> admission) { Admitted(std::move(admission)); });
  }

  void Admitted(absl::StatusOr<Admission> admission) {
    if (!admission.ok()) return Fail(admission.status());
    admitted_ = *std::move(admission);
    const size_t n = admitted_.prepared.sources.size();
    results_.resize(n);
    remaining_ = n;
    if (n == 0) return Complete();  // every text is empty or layout only
    auto s = StartSentences(
        admitted_, [this] { return cancelled_.load() || aborted_.load(); },
        [this](size_t i, absl::StatusOr<SearchResult> r) { OnSentence(i, std::move(r)); }, {});
    if (!s.ok()) return Fail(s);
  }

  void OnSentence(size_t i, absl::StatusOr<SearchResult> r) {
    bool last = false;
    {
      absl::MutexLock lock(&mu_);
      if (r.ok()) {
        results_[i] = *std::move(r);
      } else if (status_.ok()) {
        status_ = SentenceError(r.status(), admitted_.deadline);
        aborted_.store(true);  // the other sentences of this request leave at the next step
      }
      last = --remaining_ == 0;
    }
    if (last) Complete();
  }

  void Complete() {
    if (!status_.ok()) return Fail(status_);
    v1::TranslateResponse response;
    int64_t generated = 0;
    const PreparedRequest& prepared = admitted_.prepared;
    for (size_t i = 0; i < prepared.texts.size(); ++i) {
      const std::span<const SearchResult> of_text(results_.data() + prepared.texts[i].first,
                                                  prepared.texts[i].count());
      FillDocumentTranslation(admitted_.sides(), prepared, i, of_text, response.add_translations(),
                              &generated);
    }
    response.set_model(admitted_.name());
    response.set_detected_language(admitted_.detected_language);
    response.set_detected_language_confidence(admitted_.detected_confidence);
    if (admitted_.pivot) admitted_.FillPivot(response.mutable_pivot());
    *response_ = SerializeMessage(response);
    // A pivot's legs count their own tokens, each under its model.
    if (!admitted_.pivot) {
      admitted_.model->metrics->AddTokens(admitted_.prepared.source_tokens, generated);
    }
    FinishWith(grpc::Status::OK);
  }

  void Fail(const absl::Status& s) { FinishWith(ToGrpcStatus(s)); }

  // Metrics are recorded before the status leaves, so a caller that got its answer sees it
  // counted.
  void FinishWith(const grpc::Status& g) {
    context_->Record("Translate", g.error_code(), model_name_, ctx_, start_, request_.texts_size());
    Finish(g);
  }

  ServiceContext* const context_;
  grpc::CallbackServerContext* const ctx_;
  const v1::TranslateRequest request_;
  grpc::ByteBuffer* const response_;
  const absl::Time start_;
  std::string model_name_ = "";
  Admission admitted_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> aborted_{false};
  absl::Mutex mu_;
  std::vector<SearchResult> results_;
  size_t remaining_ = 0;
  absl::Status status_;
};

}  // namespace

grpc::ServerUnaryReactor* StartTranslate(ServiceContext* context, grpc::CallbackServerContext* ctx,
                                         v1::TranslateRequest request, grpc::ByteBuffer* response) {
  return new TranslateReactor(context, ctx, std::move(request), response);
}

}  // namespace transerve
