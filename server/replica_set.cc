#include "server/replica_set.h"

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace transerve {

std::vector<size_t> SpreadOverReplicas(std::span<const int64_t> loads, size_t jobs) {
  std::vector<int64_t> load(loads.begin(), loads.end());
  std::vector<size_t> where(jobs, 0);
  if (load.empty()) return where;
  for (size_t j = 0; j < jobs; ++j) {
    const size_t least =
        static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    where[j] = least;
    ++load[least];
  }
  return where;
}

int ReplicasFor(int asked, Device device, int engine_threads) {
  if (asked > 0) return asked;
  if (device != Device::kCpu) return 1;
  return std::clamp(engine_threads, 1, kMaxAutoReplicas);
}

absl::StatusOr<std::unique_ptr<ReplicaSet>> ReplicaSet::Create(Translator* primary, int replicas,
                                                               const SchedulerOptions& options) {
  if (replicas < 1) {
    return absl::InvalidArgumentError(absl::StrCat("replicas must be at least 1, not ", replicas));
  }
  std::unique_ptr<ReplicaSet> set(new ReplicaSet());
  set->max_queue_ = options.max_queue;
  for (int r = 1; r < replicas; ++r) {
    auto replica = primary->CreateReplica();
    if (!replica.ok()) {
      return absl::Status(replica.status().code(), absl::StrCat("replica ", r + 1, " of ", replicas,
                                                                ": ", replica.status().message()));
    }
    set->replicas_.push_back(*std::move(replica));
  }
  // One signal for the model: a small call on any replica holds bulk work back on all.
  SchedulerOptions shared = options;
  if (shared.small_calls == nullptr) shared.small_calls = std::make_shared<SmallCallSignal>();
  set->schedulers_.push_back(std::make_unique<Scheduler>(primary, shared));
  for (auto& replica : set->replicas_) {
    set->schedulers_.push_back(std::make_unique<Scheduler>(replica.get(), shared));
  }
  return set;
}

ReplicaSet::~ReplicaSet() {
  // Side by side, so a set whose loops are all busy stops in one step's time, not N.
  if (schedulers_.size() > 1) static_cast<void>(Shutdown(absl::ZeroDuration()));
  schedulers_.clear();
}

absl::Status ReplicaSet::Submit(std::vector<SentenceJob> jobs) {
  if (schedulers_.size() == 1) return schedulers_[0]->Submit(std::move(jobs));
  for (const SentenceJob& job : jobs) {
    if (!job.on_done) return absl::InvalidArgumentError("every job needs an on_done callback");
  }
  absl::MutexLock lock(&submit_mu_);
  std::vector<int64_t> loads;
  int64_t queued = 0;
  for (const auto& scheduler : schedulers_) {
    if (absl::Status failure = scheduler->failure(); !failure.ok()) return failure;
    const Scheduler::Stats s = scheduler->stats();
    loads.push_back(s.queued + s.active_sequences);
    queued += s.queued;
  }
  if (queued + static_cast<int64_t>(jobs.size()) > max_queue_) {
    return absl::ResourceExhaustedError(absl::StrCat("the queue is full (", queued, " of ",
                                                     max_queue_, " sentences queued, ", jobs.size(),
                                                     " more asked)"));
  }
  const std::vector<size_t> where = SpreadOverReplicas(loads, jobs.size());
  std::vector<std::vector<SentenceJob>> shares(schedulers_.size());
  for (size_t j = 0; j < jobs.size(); ++j) shares[where[j]].push_back(std::move(jobs[j]));
  bool some_queued = false;
  for (size_t r = 0; r < shares.size(); ++r) {
    if (shares[r].empty()) continue;
    // Kept to answer this share if its replica refuses after others took theirs.
    std::vector<std::function<void(absl::StatusOr<SearchResult>)>> answers;
    if (some_queued) {
      for (const SentenceJob& job : shares[r]) answers.push_back(job.on_done);
    }
    absl::Status s = schedulers_[r]->Submit(std::move(shares[r]));
    if (s.ok()) {
      some_queued = true;
      continue;
    }
    if (!some_queued) return s;  // nothing queued anywhere yet: refuse the whole request
    for (auto& answer : answers) answer(s);
  }
  return absl::OkStatus();
}

absl::Status ReplicaSet::Shutdown(absl::Duration timeout, absl::Duration step_grace) {
  if (schedulers_.size() == 1) return schedulers_[0]->Shutdown(timeout, step_grace);
  std::vector<absl::Status> stopped(schedulers_.size());
  std::vector<std::thread> stoppers;
  for (size_t r = 0; r < schedulers_.size(); ++r) {
    stoppers.emplace_back([&, r] { stopped[r] = schedulers_[r]->Shutdown(timeout, step_grace); });
  }
  for (std::thread& t : stoppers) t.join();
  for (size_t r = 0; r < stopped.size(); ++r) {
    if (!stopped[r].ok()) {
      return absl::Status(stopped[r].code(),
                          absl::StrCat("replica ", r + 1, ": ", stopped[r].message()));
    }
  }
  return absl::OkStatus();
}

Scheduler::Stats ReplicaSet::stats() const {
  Scheduler::Stats sum;
  for (const auto& scheduler : schedulers_) {
    const Scheduler::Stats s = scheduler->stats();
    sum.queued += s.queued;
    sum.active_sequences += s.active_sequences;
    sum.active_rows += s.active_rows;
    sum.kv_cache_bytes += s.kv_cache_bytes;
    sum.steps += s.steps;
    sum.batches_admitted += s.batches_admitted;
    sum.preemptions += s.preemptions;
  }
  return sum;
}

absl::Status ReplicaSet::failure() const {
  for (const auto& scheduler : schedulers_) {
    if (absl::Status failure = scheduler->failure(); !failure.ok()) return failure;
  }
  return absl::OkStatus();
}

void ReplicaSet::SetObserver(Scheduler::Observer* observer) {
  for (auto& scheduler : schedulers_) scheduler->SetObserver(observer);
}

}  // namespace transerve
