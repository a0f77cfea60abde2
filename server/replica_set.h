// A model's engine instances: N translators over one loaded model (Translator::CreateReplica:
// the weights shared, each with its own KV cache and scratch), each owned by a Scheduler loop of
// its own, fed through one Submit. This is CTranslate2's inter_threads: on the CPU the replicas'
// loops share the engine's thread pool, which runs a call inline once as many calls are open as
// it has threads, so with every replica busy they are N independent workers, and a replica
// alone still gets every core (docs/server.md, "Replicas").
//
// A request's sentences are spread over the replicas, each sentence to the one with the least
// work (queued + live sentences) at that moment; a sentence stays on its replica from start to
// end, so its tokens stream in order, and a request's sentences are answered by sentence index
// whichever replica ran them. Stats are summed; the first replica's failure is the set's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "model/translator/translator.h"
#include "server/scheduler.h"

namespace transerve {

// Which replica each of `jobs` sentences goes to: each in turn to the replica with the least
// `load` (the load counting the sentences given so far; ties to the lowest index).
std::vector<size_t> SpreadOverReplicas(std::span<const int64_t> loads, size_t jobs);

// How many replicas a model gets when the operator does not say (`asked` 0): on the CPU one
// per engine thread, at most kMaxAutoReplicas; on a GPU one (a second stream on the same
// device buys little for its memory). `asked` > 0 is taken as it is.
int ReplicasFor(int asked, Device device, int engine_threads);
inline constexpr int kMaxAutoReplicas = 4;

class ReplicaSet {
 public:
  // `primary` (the model's first translator, kept by the caller and outliving the set) plus
  // `replicas - 1` more made from it, a scheduler each. RESOURCE_EXHAUSTED when a replica
  // cannot be made (no device stream).
  static absl::StatusOr<std::unique_ptr<ReplicaSet>> Create(Translator* primary, int replicas,
                                                            const SchedulerOptions& options);
  ~ReplicaSet();  // schedulers first (Shutdown(0) if still running), then the replicas
  ReplicaSet(const ReplicaSet&) = delete;
  ReplicaSet& operator=(const ReplicaSet&) = delete;

  // Scheduler::Submit's contract over the set: all or nothing (RESOURCE_EXHAUSTED when the
  // model's queue, max_queue over every replica, cannot take them all). A replica that fails
  // between the check and its own Submit (its device lost) answers its share through on_done.
  absl::Status Submit(std::vector<SentenceJob> jobs);
  // Every replica's Scheduler::Shutdown side by side; the first error (a stuck loop).
  absl::Status Shutdown(absl::Duration timeout, absl::Duration step_grace = absl::Seconds(2));
  Scheduler::Stats stats() const;
  absl::Status failure() const;
  void SetObserver(Scheduler::Observer* observer);  // shared by the replicas (thread-safe)
  int size() const { return static_cast<int>(schedulers_.size()); }

 private:
  ReplicaSet() = default;

  int max_queue_ = 0;
  absl::Mutex submit_mu_;  // one spreading decision at a time, so loads stay true
  std::vector<std::unique_ptr<Translator>> replicas_;   // the second and later translators
  std::vector<std::unique_ptr<Scheduler>> schedulers_;  // declared after: destroyed first
};

}  // namespace transerve
