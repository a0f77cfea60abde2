#include "server/scheduler.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/core/logging.h"

namespace transerve {

struct Scheduler::Flow {
  TurnQueue<std::unique_ptr<Entry>>::Flow turns;
  bool small = false;             // IsSmallRequest
  int64_t queued = 0;             // sentences
  int64_t live_rows = 0;          // its live sentences' beams
  int64_t rows_per_sentence = 1;  // its sentences' beams (one set of options per request)
  int64_t in_view = 0;            // Admit's count of its rows in the plan's view
  // Submit, or the latest admission or finish of one of its sentences: the queue's time budget
  // runs from here while none of its sentences is decoding.
  absl::Time last_progress;
};

struct Scheduler::Entry {
  SentenceJob job;
  std::shared_ptr<Flow> flow;  // shared by the jobs of one Submit
  absl::Time submitted;
  int64_t queued_at_step = 0;  // the loop's step count when it took the entry
  // Steps whose progress was already reported before a preemption: the restarted search
  // replays them (same ids, decoding is deterministic), so they are not reported again.
  int reported_steps = 0;
  bool first_token_seen = false;
  bool queue_wait_seen = false;  // a preempted entry's wait counts once, at first admission
};

struct Scheduler::Active {
  std::unique_ptr<Entry> entry;
  std::unique_ptr<SentenceSearch> search;
  int steps = 0;
  bool in_step = false;  // in the step just run (bulk sentences may sit one out)
};

namespace {

// Answers a job exactly once: the callback is moved out before it runs.
void Answer(SentenceJob& job, absl::StatusOr<SearchResult> result) {
  auto on_done = std::move(job.on_done);
  job.on_done = nullptr;
  if (on_done) on_done(std::move(result));
}

// Why a job must leave now, or OK. The deadline is checked first: a job past its deadline is
// answered DEADLINE_EXCEEDED even if its caller also went away.
absl::Status LeaveReason(const SentenceJob& job, absl::Time now) {
  if (now >= job.deadline) {
    return absl::DeadlineExceededError("deadline exceeded before the translation finished");
  }
  if (job.cancelled && job.cancelled()) return absl::CancelledError("cancelled by the caller");
  return absl::OkStatus();
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

// The decoder rows a sentence takes while live: one per beam.
int64_t RowsOf(const SentenceJob& job) { return std::max(1, job.options.beam_size); }

}  // namespace

// A job's callbacks behind one lock, shared by the loop and by Shutdown when it answers for a
// stuck loop: on_done runs at most once, and after it progress is dropped and cancelled() is
// true, so a caller that has its answer (whose RPC may be gone) is never called again.
class Scheduler::JobGuard {
 public:
  explicit JobGuard(SentenceJob& job)
      : on_done_(std::move(job.on_done)),
        on_progress_(std::move(job.on_progress)),
        cancelled_(std::move(job.cancelled)) {}

  // False if the job was answered already.
  bool Answer(absl::StatusOr<SearchResult> result) {
    absl::MutexLock lock(&mu_);
    if (answered_) return false;
    answered_ = true;
    on_progress_ = nullptr;
    cancelled_ = nullptr;
    auto on_done = std::move(on_done_);
    on_done_ = nullptr;
    on_done(std::move(result));
    return true;
  }
  void Progress(const std::vector<int32_t>& ids) {
    absl::MutexLock lock(&mu_);
    if (!answered_ && on_progress_) on_progress_(ids);
  }
  bool Cancelled() {
    absl::MutexLock lock(&mu_);
    return answered_ || (cancelled_ && cancelled_());
  }

 private:
  absl::Mutex mu_;
  bool answered_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void(absl::StatusOr<SearchResult>)> on_done_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::vector<int32_t>&)> on_progress_ ABSL_GUARDED_BY(mu_);
  std::function<bool()> cancelled_ ABSL_GUARDED_BY(mu_);
};

Scheduler::Scheduler(Translator* translator, SchedulerOptions options)
    : translator_(translator),
      options_(options),
      small_calls_(options.small_calls != nullptr ? options.small_calls
                                                  : std::make_shared<SmallCallSignal>()) {
  // Started last: every member the loop touches exists by now.
  thread_ = std::thread([this] { Loop(); });
}

Scheduler::~Scheduler() {
  if (const absl::Status s = Shutdown(absl::ZeroDuration()); !s.ok()) {
    // The loop thread still uses this object: destroying it would be a use after free.
    Log().critical("scheduler destroyed while its loop is stuck: {}", std::string(s.message()));
    std::abort();
  }
}

void Scheduler::SetObserver(Observer* observer) { observer_.store(observer); }

absl::Status Scheduler::Submit(std::vector<SentenceJob> jobs) {
  for (const SentenceJob& job : jobs) {
    if (!job.on_done) return absl::InvalidArgumentError("every job needs an on_done callback");
  }
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  if (draining_) return absl::UnavailableError("the server is shutting down");
  if (!failure_.ok()) return failure_;
  const int64_t queued = static_cast<int64_t>(incoming_.size()) + backlog_size_;
  if (queued + static_cast<int64_t>(jobs.size()) > options_.max_queue) {
    return absl::ResourceExhaustedError(absl::StrCat("the queue is full (", queued, " of ",
                                                     options_.max_queue, " sentences queued, ",
                                                     jobs.size(), " more asked)"));
  }
  auto flow = std::make_shared<Flow>();
  int64_t rows = 0;
  for (const SentenceJob& job : jobs) rows += RowsOf(job);
  flow->small = IsSmallRequest(options_.admission, rows);
  if (!jobs.empty()) flow->rows_per_sentence = RowsOf(jobs.front());
  flow->last_progress = now;
  for (SentenceJob& job : jobs) {
    // The loop sees only guarded callbacks, so that Shutdown can answer for a stuck loop.
    const bool has_progress = static_cast<bool>(job.on_progress);
    const bool has_cancelled = static_cast<bool>(job.cancelled);
    auto guard = std::make_shared<JobGuard>(job);
    job.on_done = [this, guard](absl::StatusOr<SearchResult> result) {
      if (guard->Answer(std::move(result))) Forget(guard.get());
    };
    if (has_progress) {
      job.on_progress = [guard](const std::vector<int32_t>& ids) { guard->Progress(ids); };
    }
    if (has_cancelled) job.cancelled = [guard] { return guard->Cancelled(); };
    unanswered_.emplace(guard.get(), guard);
    auto entry = std::make_unique<Entry>();
    entry->job = std::move(job);
    entry->flow = flow;
    entry->submitted = now;
    incoming_.push_back(std::move(entry));
  }
  stats_.queued = queued + static_cast<int64_t>(jobs.size());
  return absl::OkStatus();
}

absl::Status Scheduler::Shutdown(absl::Duration timeout, absl::Duration step_grace) {
  absl::Time give_up;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time deadline = absl::Now() + timeout;
    // A second call may only shorten the drain.
    if (!draining_ || deadline < drain_deadline_) drain_deadline_ = deadline;
    draining_ = true;
    give_up = drain_deadline_ + step_grace;
  }
  absl::MutexLock join_lock(&join_mu_);
  if (!abandoned_.ok()) return abandoned_;
  if (!thread_.joinable() || thread_.get_id() == std::this_thread::get_id()) {
    return absl::OkStatus();
  }
  bool ended = false;
  std::vector<std::shared_ptr<JobGuard>> left;
  std::string where;
  {
    absl::MutexLock lock(&mu_);
    ended = mu_.AwaitWithDeadline(absl::Condition(this, &Scheduler::LoopEnded), give_up);
    if (!ended) {
      auto since = [](absl::Time t) {
        return absl::FormatDuration(absl::Trunc(absl::Now() - t, absl::Milliseconds(1)));
      };
      where = step_started_ == absl::InfiniteFuture()
                  ? absl::StrCat("the loop is stuck outside a decoder step (an encoder call?), ",
                                 since(drain_deadline_), " past the drain deadline")
                  : absl::StrCat("decoder step ", step_number_, " has been running for ",
                                 since(step_started_));
      for (auto& [key, guard] : unanswered_) left.push_back(std::move(guard));
      unanswered_.clear();
    }
  }
  if (ended) {
    thread_.join();
    return absl::OkStatus();
  }
  // The loop may never return: it keeps this object (and so its translator) for good.
  thread_.detach();
  const absl::Status answer = absl::UnavailableError(
      "shut down before the translation finished (the decoder did not return in time)");
  for (auto& guard : left) guard->Answer(answer);
  abandoned_ = absl::DeadlineExceededError(
      absl::StrCat(where, "; its thread is abandoned and its ", left.size(),
                   " unanswered sentences were answered UNAVAILABLE"));
  return abandoned_;
}

void Scheduler::Forget(const JobGuard* guard) {
  absl::MutexLock lock(&mu_);
  unanswered_.erase(guard);
}

Scheduler::Stats Scheduler::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::Status Scheduler::failure() const {
  absl::MutexLock lock(&mu_);
  return failure_;
}

bool Scheduler::HasIncomingOrDraining() const { return !incoming_.empty() || draining_; }

void Scheduler::Loop() {
  while (true) {
    bool draining;
    absl::Time drain_deadline;
    {
      absl::MutexLock lock(&mu_);
      if (live_.empty() && backlog_.empty()) {
        // Idle: sleep until work arrives or a shutdown starts, never spin.
        mu_.Await(absl::Condition(this, &Scheduler::HasIncomingOrDraining));
      }
      for (auto& entry : incoming_) {
        entry->queued_at_step = steps_;
        Flow& flow = *entry->flow;
        CountFlow(flow, 1, 0);
        backlog_.Push(flow.turns, std::move(entry));
      }
      incoming_.clear();
      backlog_size_ = static_cast<int64_t>(backlog_.size());
      draining = draining_;
      drain_deadline = drain_deadline_;
    }
    absl::Time now = absl::Now();
    if (draining && now >= drain_deadline) {
      AnswerEverything(absl::UnavailableError("shut down before the translation finished"));
      break;
    }
    if (draining && live_.empty() && backlog_.empty()) break;

    AnswerLeavers(now);
    if (options_.admission.mode == BatchingMode::kContinuous || live_.empty()) {
      Admit(now);
      PublishStats();  // the queue just shrank: Submit may use the room during the step
    }
    if (!live_.empty() && !StepOnce()) {
      // Only bulk work, and a small call runs on another replica: make room for it for about
      // a step's time (a Submit wakes the loop at once).
      const absl::Duration pause = std::clamp(absl::Seconds(last_step_seconds_),
                                              absl::Microseconds(200), absl::Milliseconds(20));
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(this, &Scheduler::HasIncomingOrDraining), pause);
    }
    if (!translator_->device_status().ok()) FailForGood(translator_->device_status());
    PublishStats();
  }
  PublishStats();
  absl::MutexLock lock(&mu_);
  loop_ended_ = true;
}

absl::Status Scheduler::RunStep() {
  const int64_t number = steps_ + 1;
  {
    absl::MutexLock lock(&mu_);
    step_started_ = absl::Now();
    step_number_ = number;
  }
  if (options_.before_step_for_test) options_.before_step_for_test(number);
  absl::Status status = translator_->Step(step_searches_);
  absl::MutexLock lock(&mu_);
  step_started_ = absl::InfiniteFuture();
  return status;
}

void Scheduler::AnswerLeavers(absl::Time now) {
  // Queued jobs: answered without ever being encoded (past their deadline, cancelled, or past
  // the queue's time budget).
  for (auto it = backlog_.begin(); it != backlog_.end();) {
    const Entry& queued = *it->second;
    absl::Status reason = LeaveReason(queued.job, now);
    // A request with a sentence decoding is making progress however long that sentence takes
    // (under a sanitizer one sentence can outlast the budget): its queued ones wait for it.
    if (reason.ok() && !queued.queue_wait_seen && queued.flow->live_rows == 0 &&
        now - queued.flow->last_progress > options_.max_queue_wait) {
      reason = absl::ResourceExhaustedError(absl::StrCat(
          "overloaded: the request waited ", absl::FormatDuration(now - queued.flow->last_progress),
          " in the queue without progress (budget ", absl::FormatDuration(options_.max_queue_wait),
          ")"));
    }
    if (reason.ok()) {
      ++it;
      continue;
    }
    std::unique_ptr<Entry> entry = std::move(it->second);
    it = backlog_.Erase(it);
    CountFlow(*entry->flow, -1, 0);
    Answer(entry->job, std::move(reason));
  }
  // Live ones: the search is destroyed first, so its KV blocks are back in the pool by the
  // time the caller hears about it.
  for (size_t i = 0; i < live_.size();) {
    absl::Status reason = LeaveReason(live_[i].entry->job, now);
    if (reason.ok()) {
      ++i;
      continue;
    }
    Retire(i, std::move(reason));
  }
}

int64_t Scheduler::KvCapacityBlocks() const {
  const int64_t bound = translator_->KvCapacityBlocks();
  return bound > 0 ? bound : learned_capacity_blocks_;  // 0 until the pool has been seen full
}

void Scheduler::Admit(absl::Time now) {
  if (backlog_.empty()) return;
  // Runs between every two decoder steps: the plan sees only the front of the queue it may
  // admit from, however deep the queue (up to --max_queue under overload), less the sentences
  // of requests that hold their share of the batch already. Turns interleave the requests, so
  // every request's next sentence sits near the front; the scan is bounded all the same.
  const size_t readable = std::min(
      backlog_.size(), static_cast<size_t>(std::max(1, options_.admission.max_batch_sequences)));
  const size_t scan_bound = 8 * readable + 256;
  const bool small_about = small_calls_->About(
      now, absl::Seconds(std::max(0.0, options_.admission.small_request_memory_seconds)));
  const int64_t request_limit = RequestLiveLimit(options_.admission, small_about);
  view_scratch_.clear();
  queue_scratch_.clear();
  size_t scanned = 0;
  for (auto it = backlog_.begin();
       it != backlog_.end() && view_scratch_.size() < readable && scanned < scan_bound;
       ++it, ++scanned) {
    const Entry& entry = *it->second;
    Flow& flow = *entry.flow;
    const int64_t rows = RowsOf(entry.job);
    const int64_t held = flow.live_rows + flow.in_view;
    if (held > 0 && held + rows > request_limit) continue;
    flow.in_view += rows;
    view_scratch_.push_back(it);
    queue_scratch_.push_back({.source_tokens = static_cast<int64_t>(entry.job.source_ids.size()),
                              .headroom_blocks = translator_->KvHeadroomBlocks(entry.job.options),
                              .queued_at_step = entry.queued_at_step});
  }
  for (const auto& it : view_scratch_) it->second->flow->in_view = 0;
  if (queue_scratch_.empty()) return;
  live_headroom_scratch_.clear();
  for (const Active& a : live_) {
    live_headroom_scratch_.push_back(translator_->KvHeadroomBlocks(a.entry->job.options));
  }
  const AdmissionPlan plan = PlanAdmission({.queue = queue_scratch_,
                                            .live_headroom_blocks = live_headroom_scratch_,
                                            .blocks_in_use = translator_->kv_pool().blocks_in_use(),
                                            .capacity_blocks = KvCapacityBlocks(),
                                            .steps = steps_,
                                            .kv_pressure = kv_pressure_},
                                           options_.admission);
  if (plan.admit == 0) return;
  std::vector<std::unique_ptr<Entry>> batch;
  batch.reserve(static_cast<size_t>(plan.admit));
  for (int64_t i = 0; i < plan.admit; ++i) batch.push_back(backlog_.Take(view_scratch_[i]));
  EncodeAndStart(std::move(batch), now);
}

void Scheduler::EncodeAndStart(std::vector<std::unique_ptr<Entry>> batch, absl::Time now) {
  // Longest first: similar lengths side by side (what a padded encoder wants; the packed CPU
  // encoder does not care, the padding ratio is reported either way).
  std::stable_sort(batch.begin(), batch.end(), [](const auto& a, const auto& b) {
    return a->job.source_ids.size() > b->job.source_ids.size();
  });
  std::vector<std::vector<int32_t>> sources;
  sources.reserve(batch.size());
  int64_t tokens = 0;
  for (const auto& entry : batch) {
    sources.push_back(entry->job.source_ids);
    tokens += static_cast<int64_t>(entry->job.source_ids.size());
  }
  const absl::Time encode_start = absl::Now();
  auto encoded = translator_->Encode(sources);
  std::vector<absl::StatusOr<std::shared_ptr<const CrossKv>>> per_source;
  if (encoded.ok()) {
    for (auto& kv : *encoded) per_source.emplace_back(std::move(kv));
  } else {
    // One bad source must not fail its neighbours: encode each alone to find the culprit.
    for (const auto& source : sources) {
      auto one = translator_->Encode(std::span(&source, 1));
      if (one.ok()) {
        per_source.emplace_back(std::move((*one)[0]));
      } else {
        per_source.emplace_back(one.status());
      }
    }
  }
  ++batches_admitted_;
  Observer* observer = observer_.load();
  if (observer != nullptr) {
    const double longest = static_cast<double>(sources.front().size());
    const double padded = longest * static_cast<double>(sources.size());
    observer->OnBatch(static_cast<int>(sources.size()), static_cast<int>(tokens),
                      padded > 0 ? 1.0 - static_cast<double>(tokens) / padded : 0.0,
                      Seconds(absl::Now() - encode_start));
  }
  const absl::Time admitted = absl::Now();
  for (size_t i = 0; i < batch.size(); ++i) {
    std::unique_ptr<Entry>& entry = batch[i];
    Flow& flow = *entry->flow;
    if (!per_source[i].ok()) {
      CountFlow(flow, -1, 0);
      Answer(entry->job, per_source[i].status());
      continue;
    }
    CountFlow(flow, -1, RowsOf(entry->job));
    flow.last_progress = admitted;
    if (!entry->queue_wait_seen) {
      entry->queue_wait_seen = true;
      if (observer != nullptr) observer->OnQueueWait(Seconds(now - entry->submitted));
    }
    Active active;
    active.search = translator_->StartSearch(*std::move(per_source[i]), entry->job.options,
                                             entry->job.source_ids);
    active.entry = std::move(entry);
    live_.push_back(std::move(active));
  }
}

void Scheduler::Preempt(size_t index) {
  Active preempted = std::move(live_[index]);
  live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(index));
  preempted.search.reset();  // blocks back to the pool now
  preempted.entry->reported_steps = std::max(preempted.entry->reported_steps, preempted.steps);
  CountFlow(*preempted.entry->flow, 1, -RowsOf(preempted.entry->job));
  backlog_.PushFront(std::move(preempted.entry));
  kv_pressure_ = true;
  ++preemptions_;
}

bool Scheduler::StepOnce() {
  // Bulk sentences sit out while a small call is about, at most kBulkStepEvery - 1 steps in a
  // row.
  const bool hold_bulk = bulk_sat_out_ < kBulkStepEvery - 1 && small_calls_->Any();
  bool sat_out = false;
  while (!live_.empty()) {
    step_searches_.clear();
    row_scratch_.clear();
    sat_out = false;
    for (Active& a : live_) {
      const Flow& flow = *a.entry->flow;
      a.in_step = !(hold_bulk && IsBulkRequest(options_.admission, flow.small,
                                               flow.queued * flow.rows_per_sentence));
      if (!a.in_step) {
        sat_out = true;
        continue;
      }
      step_searches_.push_back(a.search.get());
      a.search->CollectRows(&row_scratch_);
    }
    if (step_searches_.empty()) {
      ++bulk_sat_out_;  // a step's time of waiting counts as a step sat out
      return false;
    }
    const absl::Time start = absl::Now();
    const absl::Status status = RunStep();
    if (status.ok()) {
      active_rows_ = static_cast<int64_t>(row_scratch_.size());
      ++steps_;
      last_step_seconds_ = Seconds(absl::Now() - start);
      if (Observer* observer = observer_.load(); observer != nullptr) {
        observer->OnStep(static_cast<int>(row_scratch_.size()), last_step_seconds_);
      }
      bulk_sat_out_ = sat_out ? bulk_sat_out_ + 1 : 0;
      break;
    }
    if (status.code() != absl::StatusCode::kResourceExhausted) {
      // A failed device call: answer the live sentences rather than retry a step that cannot
      // succeed; queued ones never touched the failed state and carry on.
      // (A lost device is answered by the loop, with everything queued: FailForGood.)
      if (status.code() == absl::StatusCode::kUnavailable) return true;
      Log().error("scheduler: decoder step failed: {}", status.ToString());
      const absl::Status answer = absl::InternalError(status.message());
      while (!live_.empty()) Retire(0, answer);
      return true;
    }
    // The KV pool is full, or the device out of memory: either way fewer sentences fit, and
    // now we know how many KV blocks do even if the pool is unbounded.
    learned_capacity_blocks_ = translator_->kv_pool().blocks_allocated();
    if (const std::optional<size_t> victim = PlanPreemption(live_.size())) {
      Preempt(*victim);
      continue;
    }
    Retire(0, absl::ResourceExhaustedError(
                  absl::StrCat(status.message(), ", even with nothing else running")));
    return true;
  }

  const absl::Time now = absl::Now();
  Observer* observer = observer_.load();
  for (size_t i = 0; i < live_.size();) {
    Active& a = live_[i];
    if (!a.in_step) {
      ++i;
      continue;
    }
    ++a.steps;
    Entry& entry = *a.entry;
    if (!entry.first_token_seen) {
      entry.first_token_seen = true;
      if (observer != nullptr) observer->OnFirstToken(Seconds(now - entry.submitted));
    }
    if (a.search->done()) {
      Retire(i, a.search->TakeResult());
      continue;
    }
    if (entry.job.on_progress && a.steps > entry.reported_steps) {
      entry.job.on_progress(a.search->partial_ids());
    }
    ++i;
  }
  return true;
}

void Scheduler::Retire(size_t index, absl::StatusOr<SearchResult> result) {
  Active leaving = std::move(live_[index]);
  live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(index));
  leaving.search.reset();  // blocks back to the pool before the caller hears
  kv_pressure_ = false;
  Flow& flow = *leaving.entry->flow;
  CountFlow(flow, 0, -RowsOf(leaving.entry->job));
  flow.last_progress = absl::Now();
  Answer(leaving.entry->job, std::move(result));
}

void Scheduler::AnswerEverything(const absl::Status& status) {
  while (!live_.empty()) Retire(0, status);
  while (!backlog_.empty()) {
    std::unique_ptr<Entry> entry = backlog_.Take(backlog_.begin());
    CountFlow(*entry->flow, -1, 0);
    Answer(entry->job, status);
  }
}

void Scheduler::CountFlow(Flow& flow, int64_t queued, int64_t live_rows) {
  const bool had_work = flow.queued + flow.live_rows > 0;
  flow.queued += queued;
  flow.live_rows += live_rows;
  const bool has_work = flow.queued + flow.live_rows > 0;
  if (flow.small && has_work != had_work) {
    small_calls_->Change(has_work ? 1 : -1);
  }
}

void Scheduler::FailForGood(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (failure_.ok()) {
      failure_ = status;
      Log().error("scheduler: this replica stops translating: {}", std::string(status.message()));
    }
  }
  // What Submit accepted before failure_ was set is answered on the next pass.
  AnswerEverything(status);
}

void Scheduler::PublishStats() {
  int64_t rows = 0;
  if (!live_.empty()) rows = active_rows_;
  absl::MutexLock lock(&mu_);
  backlog_size_ = static_cast<int64_t>(backlog_.size());
  stats_.queued = static_cast<int64_t>(incoming_.size()) + backlog_size_;
  stats_.active_sequences = static_cast<int64_t>(live_.size());
  stats_.active_rows = rows;
  stats_.kv_cache_bytes = translator_->kv_pool().bytes_in_use();
  stats_.steps = steps_;
  stats_.batches_admitted = batches_admitted_;
  stats_.preemptions = preemptions_;
}

}  // namespace transerve
