#include "server/stream_reactor.h"

#include <grpcpp/server_context.h>

#include <atomic>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "model/core/logging.h"
#include "server/admission.h"
#include "server/grpc_status.h"
#include "server/raw_messages.h"
#include "server/response_builder.h"

namespace transerve {
namespace {

// Streams partial text per sentence as tokens are produced (greedy: the best hypothesis only
// grows, so its text does too; beam search sends each sentence's text when it is final, since
// the best beam may change), then each sentence's final result. One write in flight at a time.
class StreamReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  StreamReactor(ServiceContext* context, grpc::CallbackServerContext* ctx,
                v1::TranslateRequest request)
      : context_(context), ctx_(ctx), request_(std::move(request)), start_(absl::Now()) {
    context_->Enter();
    Begin();
  }
  void OnCancel() override { cancelled_.store(true); }
  void OnWriteDone(bool ok) override {
    const grpc::ByteBuffer* next = nullptr;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      queue_.pop_front();
      if (!ok) {
        // The client is gone: stop the work and drop what is queued.
        aborted_.store(true);
        if (status_.ok()) status_ = absl::CancelledError("the stream was closed by the client");
        queue_.clear();
      }
      if (!queue_.empty()) {
        next = &queue_.front();
      } else {
        writing_ = false;
        finish = ShouldFinishLocked();
      }
    }
    if (next != nullptr) StartWrite(next);
    if (finish) DoFinish();
  }
  void OnDone() override {
    context_->Leave();
    delete this;
  }

 private:
  void Begin() {
    auto admission = Admit(*context_, ctx_, request_, &model_name_);
    if (!admission.ok()) return FailNow(admission.status());
    admitted_ = *std::move(admission);
    const bool partials = admitted_.prepared.options.beam_size == 1;
    const size_t n = admitted_.prepared.sources.size();
    sent_.resize(n);
    remaining_ = n;
    std::function<void(size_t, const std::vector<int32_t>&)> progress;
    if (partials)
      progress = [this](size_t i, const std::vector<int32_t>& ids) { OnProgress(i, ids); };
    auto s = StartSentences(
        admitted_, [this] { return cancelled_.load() || aborted_.load(); },
        [this](size_t i, absl::StatusOr<SearchResult> r) { OnSentence(i, std::move(r)); },
        progress);
    if (!s.ok()) return FailNow(s);
  }

  void OnProgress(size_t i, const std::vector<int32_t>& ids) {
    std::string text = admitted_.model->translator->Detokenize(ids);
    v1::TranslateStreamResponse msg;
    {
      absl::MutexLock lock(&mu_);
      if (aborted_.load()) return;
      std::string& sent = sent_[i];
      if (text.size() <= sent.size() || !absl::StartsWith(text, sent)) return;
      msg.set_index(static_cast<int32_t>(i));
      msg.set_text_delta(text.substr(sent.size()));
      msg.set_model(admitted_.model->name);
      sent = std::move(text);
    }
    Enqueue(msg);
  }

  void OnSentence(size_t i, absl::StatusOr<SearchResult> r) {
    std::optional<v1::TranslateStreamResponse> msg;
    bool finish = false;
    if (r.ok()) {
      v1::TranslateStreamResponse m;
      int64_t generated = 0;
      FillTranslation(*admitted_.model->translator, admitted_.prepared.sources[i], *r,
                      admitted_.prepared.return_scores, admitted_.prepared.options.num_hypotheses,
                      m.mutable_translation(), &generated);
      m.set_index(static_cast<int32_t>(i));
      m.set_done(true);
      m.set_model(admitted_.model->name);
      generated_.fetch_add(generated);
      msg = std::move(m);
    }
    {
      absl::MutexLock lock(&mu_);
      if (!r.ok() && status_.ok()) {
        status_ = SentenceError(r.status(), admitted_.deadline);
        aborted_.store(true);
      }
      if (msg.has_value()) {
        const std::string& final_text = msg->translation().text();
        if (absl::StartsWith(final_text, sent_[i])) {
          msg->set_text_delta(final_text.substr(sent_[i].size()));
        } else {
          Log().warn("stream: partial text of sentence {} is not a prefix of its final text", i);
          msg->set_text_delta(final_text);
        }
      }
      --remaining_;
      if (msg.has_value() && status_.ok()) {
        EnqueueLocked(*msg);
      }
      finish = ShouldFinishLocked();
    }
    StartPendingWrite();
    if (finish) DoFinish();
  }

  void Enqueue(const v1::TranslateStreamResponse& msg) {
    {
      absl::MutexLock lock(&mu_);
      EnqueueLocked(msg);
    }
    StartPendingWrite();
  }
  void EnqueueLocked(const v1::TranslateStreamResponse& msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    queue_.push_back(SerializeMessage(msg));
    if (!writing_) {
      writing_ = true;
      to_start_ = &queue_.front();
    }
  }
  void StartPendingWrite() {
    const grpc::ByteBuffer* m = nullptr;
    {
      absl::MutexLock lock(&mu_);
      std::swap(m, to_start_);
    }
    if (m != nullptr) StartWrite(m);
  }
  bool ShouldFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || remaining_ > 0 || writing_) return false;
    finished_ = true;
    return true;
  }
  void DoFinish() {
    absl::Status s;
    {
      absl::MutexLock lock(&mu_);
      s = status_;
    }
    if (s.ok())
      admitted_.model->metrics->AddTokens(admitted_.prepared.source_tokens, generated_.load());
    FailNow(s);
  }
  void FailNow(const absl::Status& s) {
    grpc::Status g = ToGrpcStatus(s);
    context_->Record("TranslateStream", g.error_code(), model_name_, start_, request_.texts_size());
    Finish(g);
  }

  ServiceContext* const context_;
  grpc::CallbackServerContext* const ctx_;
  const v1::TranslateRequest request_;
  const absl::Time start_;
  std::string model_name_ = "";
  Admission admitted_;
  std::atomic<int64_t> generated_{0};
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> aborted_{false};
  absl::Mutex mu_;
  std::deque<grpc::ByteBuffer> queue_ ABSL_GUARDED_BY(mu_);  // serialized; the front in flight
  const grpc::ByteBuffer* to_start_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> sent_ ABSL_GUARDED_BY(mu_);
  size_t remaining_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* StartTranslateStream(ServiceContext* context,
                                                                 grpc::CallbackServerContext* ctx,
                                                                 v1::TranslateRequest request) {
  return new StreamReactor(context, ctx, std::move(request));
}

}  // namespace transerve
