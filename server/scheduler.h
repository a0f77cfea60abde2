// The scheduler of one model replica: it owns the replica's Translator (which is not
// thread-safe) on one loop thread and turns sentences submitted from many threads into batched
// encoder calls and batched decoder steps (docs/architecture.md section 4).
//
// Continuous mode: between two decoder steps the loop admits queued sentences (in turns by
// request, server/turn_queue.h, encoded together longest first, bounded by max_batch_tokens, by
// max_batch_sequences minus the live ones, for a large request by max_request_live while a small
// one has work (AdmissionPolicy::max_request_live), and by room in the KV cache), runs ONE
// Translator::Step over the live searches (every one, except that a bulk request's sentences
// sit out most steps while a small call has work: kBulkStepEvery), retires finished sentences at
// once and reports progress for the others. Static mode forms a batch the same way but only when
// nothing is live, and decodes it to the end. Outputs are identical in both modes because the
// engine is batch-invariant in ids.
//
// Requests. The jobs of one Submit are one request. Its sentences keep their order among
// themselves; between requests the queue serves turns, so a large document does not hold
// back a later call's sentence behind all of its own. The queue's time budget
// (max_queue_wait) runs per request from its last progress (a sentence of it admitted or
// finished): a request is answered "overloaded" when other callers' work kept it from moving
// for that long, never because its own earlier sentences are still being translated.
//
// KV cache policy. The pool may be bounded (Translator::KvCapacityBlocks; an unbounded pool on
// a device that runs out of memory is bounded by what it held then). A sentence is admitted while
//   blocks in use (real lengths) + headroom of every live sentence + headroom of the new one
// fits the pool, where headroom (Translator::KvHeadroomBlocks) is the most a sentence can
// allocate during the next block's worth of steps. When nothing is live a sentence is always
// admitted, so a sentence never waits forever. If a step still finds the pool full, the most
// recently admitted sentence is PREEMPTED: its search is destroyed (blocks returned) and it goes
// back to the front of the queue, to be re-encoded and restarted from scratch later (no
// admission until some live sentence leaves). Decoding is deterministic, so a restarted sentence
// produces the same output; progress it had already reported is not reported again. Only a
// sentence that does not fit in the pool alone is answered RESOURCE_EXHAUSTED. The oldest live
// sentence is never preempted, so the loop always makes progress. These decisions are the pure
// functions of server/admission_plan.h.
//
// Deadlines and cancellation are checked for queued and live sentences before admission and
// between steps; such a sentence leaves (its search destroyed, blocks returned) and is answered
// DEADLINE_EXCEEDED / CANCELLED. Every accepted job gets exactly one on_done.
//
// A lost device (Translator::device_status()) ends the replica's work for good: every live and
// queued sentence is answered UNAVAILABLE with the reason, Submit refuses with it from then on,
// and failure() reports it (the server turns its health NOT_SERVING).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "model/translator/translator.h"
#include "server/admission_plan.h"
#include "server/small_call_signal.h"
#include "server/turn_queue.h"

namespace transerve {

struct SchedulerOptions {
  AdmissionPolicy admission;  // how many queued sentences join the batch, and when
  // Queued sentences; Submit beyond it -> RESOURCE_EXHAUSTED.
  int max_queue = 1024;
  // The queue's time budget: a sentence still waiting for admission this long after its
  // request last made progress (Submit, or a sentence of it admitted or finished) is answered
  // RESOURCE_EXHAUSTED (the server is overloaded), so under overload an accepted request's wait
  // stays bounded and a caller hears "busy" in time to retry elsewhere instead of at its
  // deadline. A preempted sentence, already admitted once, is exempt.
  absl::Duration max_queue_wait = absl::InfiniteDuration();
  // Test hook (fault injection, never set in production): called on the loop thread before
  // each decoder step with its number (1, 2, ...); it may sleep or block, as a hung device would.
  std::function<void(int64_t step)> before_step_for_test = nullptr;
  // Shared by the replicas of one model (ReplicaSet); empty: this scheduler's own.
  std::shared_ptr<SmallCallSignal> small_calls;
};

// While a small request has work anywhere in the model, a bulk request's live sentences (a
// large request with more rows still queued than max_request_live) join at most one decoder
// step in kBulkStepEvery; where they are all a replica has, it waits a step's time instead of
// each step it leaves out. Small calls then decode almost alone and on every core, and the bulk
// request still gets about a quarter of the engine, so it never starves.
inline constexpr int kBulkStepEvery = 4;

// One sentence to translate. Callbacks run on the scheduler thread and must not block.
struct SentenceJob {
  std::vector<int32_t> source_ids;  // tokenized, EOS included, already validated
  DecodingOptions options;          // already validated by Translator::ValidateOptions
  absl::Time deadline = absl::InfiniteFuture();
  std::function<bool()> cancelled;  // may be empty; polled between steps
  // May be empty; called after each step that added tokens.
  std::function<void(const std::vector<int32_t>& partial_ids)> on_progress;
  // Exactly once per job: the result, DEADLINE_EXCEEDED, CANCELLED, UNAVAILABLE (shut down, or
  // the device lost), RESOURCE_EXHAUSTED (the sentence alone does not fit in the KV cache or
  // the device's memory), INTERNAL (a device call failed).
  std::function<void(absl::StatusOr<SearchResult>)> on_done;
};

class Scheduler {
 public:
  // Starts the loop thread. `translator` must outlive the scheduler and is used by nobody else
  // while the scheduler runs.
  Scheduler(Translator* translator, SchedulerOptions options);
  ~Scheduler();  // Shutdown(absl::ZeroDuration()) if still running
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // All-or-nothing: either every job is queued, or none is and the status says why
  // (RESOURCE_EXHAUSTED when the queue would overflow, UNAVAILABLE when draining or once the
  // device is lost, INVALID_ARGUMENT for a job without on_done). May be called from callbacks.
  absl::Status Submit(std::vector<SentenceJob> jobs);

  // Stops admitting new work (Submit -> UNAVAILABLE), lets in-flight and queued sentences
  // finish up to `timeout`, then the loop answers what is left with UNAVAILABLE and ends; it
  // gets `step_grace` more to leave the engine call it may be in. OK once the loop has ended
  // (joined). Otherwise the loop is stuck in the engine: every job not answered yet is answered
  // UNAVAILABLE from this thread, the loop thread is abandoned (detached), and the error says
  // where it is stuck and for how long. A stuck loop still uses this scheduler and its
  // translator: neither may be destroyed after that (the owner leaks both and ends the
  // process). Must not be called from a job's callback (it would wait for itself).
  absl::Status Shutdown(absl::Duration timeout, absl::Duration step_grace = absl::Seconds(2));

  struct Stats {
    int64_t queued = 0;
    int64_t active_sequences = 0;
    int64_t active_rows = 0;
    int64_t kv_cache_bytes = 0;
    int64_t steps = 0;
    int64_t batches_admitted = 0;
    int64_t preemptions = 0;  // sentences sent back to the queue because the KV cache was full
  };
  Stats stats() const;  // thread-safe snapshot (for metrics gauges)
  // OK, or why this replica can translate nothing any more (its device was lost). Thread-safe.
  absl::Status failure() const;

  // Optional observer hooks for metrics, called on the scheduler thread.
  struct Observer {
    virtual ~Observer() = default;
    // One encoder batch: its size, its padding share and how long the encoder (with the
    // cross-attention keys/values) took.
    virtual void OnBatch(int /*sequences*/, int /*source_tokens*/, double /*padding_ratio*/,
                         double /*seconds*/) {}
    virtual void OnStep(int /*rows*/, double /*seconds*/) {}
    virtual void OnQueueWait(double /*seconds*/) {}
    virtual void OnFirstToken(double /*seconds*/) {}
  };
  void SetObserver(Observer* observer);  // before the first Submit

 private:
  struct Flow;     // one request (one Submit): its turn, its counts, its last progress
  struct Entry;    // a job with its bookkeeping
  struct Active;   // an admitted entry with its search
  class JobGuard;  // a job's callbacks, answered once, shared by the loop and Shutdown

  void Loop();
  // Loop thread: one Translator::Step over step_searches_, timed for a stuck-step report.
  absl::Status RunStep();
  void Forget(const JobGuard* guard);
  bool LoopEnded() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return loop_ended_; }
  // Loop-thread helpers.
  bool HasIncomingOrDraining() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void AnswerLeavers(absl::Time now);
  void Admit(absl::Time now);
  void EncodeAndStart(std::vector<std::unique_ptr<Entry>> batch, absl::Time now);
  // False when every live sentence sat this step out (bulk work while a small call is about):
  // nothing was stepped, and the loop waits about a step's time.
  bool StepOnce();
  void Preempt(size_t index);
  // A request's counts moved: queued sentences and live rows (small_calls_ follows).
  void CountFlow(Flow& flow, int64_t queued, int64_t live_rows);
  // A live sentence leaves for good: its search is destroyed first (KV blocks back to the pool),
  // then its job is answered with `result`.
  void Retire(size_t index, absl::StatusOr<SearchResult> result);
  void AnswerEverything(const absl::Status& status);
  // After a lost device: records it for Submit and failure(), answers everything waiting.
  void FailForGood(const absl::Status& status);
  void PublishStats();
  // The pool's bound, or the one learned when an unbounded pool's device ran out of memory.
  int64_t KvCapacityBlocks() const;

  Translator* const translator_;
  const SchedulerOptions options_;
  std::atomic<Observer*> observer_{nullptr};

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Entry>> incoming_ ABSL_GUARDED_BY(mu_);
  int64_t backlog_size_ ABSL_GUARDED_BY(mu_) = 0;  // the loop's backlog_, as last published
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time drain_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  Stats stats_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  // Every accepted job not answered yet, so that Shutdown can answer them if the loop is stuck.
  std::unordered_map<const JobGuard*, std::shared_ptr<JobGuard>> unanswered_ ABSL_GUARDED_BY(mu_);
  // The decoder step running now (InfiniteFuture: none) and its number.
  absl::Time step_started_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  int64_t step_number_ ABSL_GUARDED_BY(mu_) = 0;
  bool loop_ended_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex join_mu_;  // serializes concurrent Shutdown calls around the join
  std::thread thread_;
  absl::Status abandoned_ ABSL_GUARDED_BY(join_mu_);  // why the loop thread was detached

  // Owned by the loop thread: queued entries (in turns by request; preempted ones go back to
  // the front) and live searches in admission order.
  TurnQueue<std::unique_ptr<Entry>> backlog_;
  // IsSmallRequest requests with a sentence queued or live, over the model's every replica.
  std::shared_ptr<SmallCallSignal> small_calls_;
  int bulk_sat_out_ = 0;          // steps in a row that bulk sentences sat out
  double last_step_seconds_ = 0;  // the latest decoder step's time (a sat-out step's wait)
  std::vector<TurnQueue<std::unique_ptr<Entry>>::iterator> view_scratch_;  // Admit's view
  std::vector<Active> live_;
  std::vector<SentenceSearch*> step_searches_;
  std::vector<DecoderRow> row_scratch_;
  std::vector<QueuedSentence> queue_scratch_;  // Admit's view of the front of backlog_
  std::vector<int64_t> live_headroom_scratch_;
  bool kv_pressure_ = false;  // a preemption happened; admit nothing until a sentence leaves
  int64_t learned_capacity_blocks_ = 0;
  int64_t active_rows_ = 0;
  int64_t steps_ = 0;
  int64_t batches_admitted_ = 0;
  int64_t preemptions_ = 0;
};

}  // namespace transerve
