#include "server/stream_reactor.h"

#include <grpcpp/server_context.h>

#include <algorithm>
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

// Streams each text's output in order as its segments complete: plain text sentence by sentence
// with the layout before each (greedy: the sentence next in line also as its tokens come, since
// the best hypothesis only grows), HTML as one final chunk. One write in flight at a time.
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
  // What one text has sent so far.
  struct TextState {
    size_t next = 0;           // its next segment to send
    bool prefix_sent = false;  // the layout before `next` went out with a partial
    std::string partial;       // `next`'s text sent so far
    std::vector<SearchResult> results;
    std::vector<std::optional<text::AlignedTranslation>> restored;
  };

  // Its model may have to load first: Admitted runs once it is at hand (or the call failed).
  void Begin() {
    Admit(
        *context_, ctx_, request_, &model_name_, [this] { return cancelled_.load(); },
        [this](absl::StatusOr<Admission> admission) { Admitted(std::move(admission)); });
  }

  void Admitted(absl::StatusOr<Admission> admission) {
    if (!admission.ok()) return FailNow(admission.status());
    admitted_ = *std::move(admission);
    const PreparedRequest& prepared = admitted_.prepared;
    const bool partials = prepared.options.beam_size == 1;
    const size_t n = prepared.sources.size();
    owner_.resize(n);
    {
      absl::MutexLock lock(&mu_);
      texts_.resize(prepared.texts.size());
      for (size_t k = 0; k < prepared.texts.size(); ++k) {
        const size_t count = prepared.texts[k].count();
        texts_[k].results.resize(count);
        texts_[k].restored.resize(count);
        for (size_t s = 0; s < count; ++s) owner_[prepared.texts[k].first + s] = {k, s};
        if (count == 0) SendReadyLocked(k);  // empty or layout only: answered at once
      }
      // One more than the sentences: Begin's own hold, so that the call cannot end (and this
      // reactor go) while Begin still runs, however fast the sentences come back.
      remaining_ = n + 1;
    }
    if (n > 0) {
      std::function<void(size_t, const std::vector<int32_t>&)> progress;
      if (partials)
        progress = [this](size_t i, const std::vector<int32_t>& ids) { OnProgress(i, ids); };
      auto s = StartSentences(
          admitted_, [this] { return cancelled_.load() || aborted_.load(); },
          [this](size_t i, absl::StatusOr<SearchResult> r) { OnSentence(i, std::move(r)); },
          progress);
      if (!s.ok()) {
        // Nothing was queued and no callback runs: the empty texts' answers are never sent.
        {
          absl::MutexLock lock(&mu_);
          queue_.clear();
          to_start_ = nullptr;
          writing_ = false;
        }
        return FailNow(s);
      }
    }
    // Begin lets go: the empty texts' answers go out (unless a sentence's callback already
    // started the writes), and the call ends here if everything is already done.
    const grpc::ByteBuffer* start = nullptr;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      --remaining_;
      start = TakePendingWriteLocked();
      finish = ShouldFinishLocked();
    }
    if (start != nullptr) StartWrite(start);
    if (finish) DoFinish();
  }

  const text::Document& DocumentOf(size_t k) const { return admitted_.prepared.texts[k].document; }

  void OnProgress(size_t i, const std::vector<int32_t>& ids) {
    const auto [k, seg] = owner_[i];
    const text::Document& doc = DocumentOf(k);
    // Only plain text, only the segment next in line, and only when its text is final as it
    // grows (protected spans are put back at the end).
    if (!doc.streams_by_segment() || doc.needs_alignment(seg)) return;
    // An unknown token the model replaces from the source waits for the sentence's alignment.
    const Translator& translator = admitted_.target_translator();
    if (admitted_.prepared.options.replace_unknowns &&
        std::find(ids.begin(), ids.end(), translator.tokenizer().unk_id()) != ids.end()) {
      return;
    }
    std::string text = translator.Detokenize(ids);
    v1::TranslateStreamResponse msg;
    {
      absl::MutexLock lock(&mu_);
      if (aborted_.load()) return;
      TextState& state = texts_[k];
      if (state.next != seg) return;
      std::string& sent = state.partial;
      if (text.size() <= sent.size() || !absl::StartsWith(text, sent)) return;
      std::string delta = state.prefix_sent ? "" : doc.Prefix(seg);
      delta += text.substr(sent.size());
      state.prefix_sent = true;
      FillChunk(k, std::move(delta), &msg);
      sent = std::move(text);
    }
    Enqueue(msg);
  }

  void OnSentence(size_t i, absl::StatusOr<SearchResult> r) {
    const auto [k, seg] = owner_[i];
    std::optional<text::AlignedTranslation> restored;
    if (r.ok()) {
      restored = RestoredBest(admitted_.sides(), admitted_.prepared, k, i, *r);
    }
    bool finish = false;
    const grpc::ByteBuffer* start = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (!r.ok() && status_.ok()) {
        status_ = SentenceError(r.status(), admitted_.deadline);
        aborted_.store(true);
      }
      if (r.ok() && status_.ok()) {
        texts_[k].results[seg] = *std::move(r);
        texts_[k].restored[seg] = std::move(restored);
        SendReadyLocked(k);
      }
      --remaining_;
      start = TakePendingWriteLocked();
      finish = ShouldFinishLocked();
    }
    // Nothing of this reactor is touched past here unless this thread started a write (the
    // call cannot end before it completes) or is the one to finish: another thread's write
    // may otherwise complete and end the call at once.
    if (start != nullptr) StartWrite(start);
    if (finish) DoFinish();
  }

  // Sends text k's segments that are ready in order, and the text's final chunk once all are.
  void SendReadyLocked(size_t k) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    TextState& state = texts_[k];
    const text::Document& doc = DocumentOf(k);
    const size_t count = state.restored.size();
    const size_t first = admitted_.prepared.texts[k].first;
    while (state.next < count && state.restored[state.next].has_value()) {
      const size_t seg = state.next++;
      if (!doc.streams_by_segment()) continue;
      const std::string& final_text = state.restored[seg]->target;
      std::string delta = state.prefix_sent ? "" : doc.Prefix(seg);
      if (absl::StartsWith(final_text, state.partial)) {
        delta += final_text.substr(state.partial.size());
      } else {
        Log().warn(
            "stream: partial text of a sentence of text {} is not a prefix of its final text", k);
        delta += final_text;
      }
      state.prefix_sent = false;
      state.partial.clear();
      v1::TranslateStreamResponse msg;
      FillSentence(admitted_.sides(), admitted_.prepared, first + seg, state.results[seg],
                   *state.restored[seg], msg.mutable_sentence());
      if (state.next == count) {
        FinishText(k, std::move(delta), &msg);
      } else {
        FillChunk(k, std::move(delta), &msg);
      }
      EnqueueLocked(msg);
    }
    if (state.next == count && (count == 0 || !doc.streams_by_segment())) {
      v1::TranslateStreamResponse msg;
      // HTML (or nothing to translate): the whole text in this one chunk.
      FinishText(k, std::string(), &msg);
      msg.set_text_delta(msg.translation().text());
      EnqueueLocked(msg);
    }
  }

  void FillChunk(size_t k, std::string delta, v1::TranslateStreamResponse* msg) {
    msg->set_index(static_cast<int32_t>(k));
    msg->set_text_delta(std::move(delta));
    msg->set_model(admitted_.name());
    msg->set_detected_language(admitted_.detected_language);
    msg->set_detected_language_confidence(admitted_.detected_confidence);
    if (admitted_.pivot) admitted_.FillPivot(msg->mutable_pivot());
  }

  // The text's last chunk: the layout after its last segment, and the whole translation.
  void FinishText(size_t k, std::string delta, v1::TranslateStreamResponse* msg)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (DocumentOf(k).streams_by_segment()) delta += DocumentOf(k).Suffix();
    FillChunk(k, std::move(delta), msg);
    msg->set_done(true);
    int64_t generated = 0;
    std::vector<text::AlignedTranslation> restored;
    for (auto& r : texts_[k].restored) restored.push_back(std::move(*r));
    FillDocumentTranslation(admitted_.sides(), admitted_.prepared, k, texts_[k].results,
                            msg->mutable_translation(), &generated, std::move(restored));
    generated_.fetch_add(generated);
  }

  void Enqueue(const v1::TranslateStreamResponse& msg) {
    const grpc::ByteBuffer* start = nullptr;
    {
      absl::MutexLock lock(&mu_);
      EnqueueLocked(msg);
      start = TakePendingWriteLocked();
    }
    if (start != nullptr) StartWrite(start);
  }
  void EnqueueLocked(const v1::TranslateStreamResponse& msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    queue_.push_back(SerializeMessage(msg));
    if (!writing_) {
      writing_ = true;
      to_start_ = &queue_.front();
    }
  }
  // The write to start, if the queue was idle; taken in the same critical section that queued
  // it, so that only the thread that will start it can know of it.
  const grpc::ByteBuffer* TakePendingWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const grpc::ByteBuffer* m = nullptr;
    std::swap(m, to_start_);
    return m;
  }
  const grpc::ByteBuffer* TakePendingWrite() {
    absl::MutexLock lock(&mu_);
    return TakePendingWriteLocked();
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
    // A pivot's legs count their own tokens, each under its model.
    if (s.ok() && !admitted_.pivot) {
      admitted_.model->metrics->AddTokens(admitted_.prepared.source_tokens, generated_.load());
    }
    FailNow(s);
  }
  void FailNow(const absl::Status& s) {
    grpc::Status g = ToGrpcStatus(s);
    context_->Record("TranslateStream", g.error_code(), model_name_, ctx_, start_,
                     request_.texts_size());
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
  std::vector<std::pair<size_t, size_t>> owner_;  // per source: its text and segment
  std::vector<TextState> texts_ ABSL_GUARDED_BY(mu_);
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
