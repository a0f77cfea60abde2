// The models a server serves, by name: the pinned ones of --model_dir (loaded at start, never
// unloaded) and the subdirectories of --model_repository, loaded on demand under a memory budget
// and replaced without dropping a call (docs/model-repository.md).
//
// A call holds the version that serves it through a ModelLease from Acquire until its answer is
// sent; a version with a lease is never freed. A reload loads a new version beside the serving
// one; new calls get the new one, the old one is freed when its last lease goes. Loads run on
// the repository's loader threads (--model_load_threads of them), side by side for different
// models and one at a time for one model (its load and reload never overlap); each load's bytes
// are reserved in the budget from when it is queued until it is served or has failed, so loads
// in flight together never plan past --model_memory_mb. Freeing and waiting calls' deadlines
// run on the housekeeping thread, which also rescans the repository directory. Calls'
// callbacks never run under the lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/model_routing.h"
#include "server/models/model_files.h"
#include "server/models/repository_metrics.h"
#include "server/models/room_plan.h"
#include "server/models/served_model.h"
#include "transerve/v1/admin.pb.h"

namespace transerve {

class ModelRepository;

// A call's hold on the version that serves it (movable; released when destroyed).
class ModelLease {
 public:
  ModelLease() = default;
  ModelLease(ModelLease&& other) noexcept { *this = std::move(other); }
  ModelLease& operator=(ModelLease&& other) noexcept;
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;
  ~ModelLease() { Release(); }

  ServedModel* get() const { return model_; }
  ServedModel* operator->() const { return model_; }
  explicit operator bool() const { return model_ != nullptr; }
  void Release();

 private:
  friend class ModelRepository;
  ModelLease(ModelRepository* repository, ServedModel* model)
      : repository_(repository), model_(model) {}
  ModelRepository* repository_ = nullptr;
  ServedModel* model_ = nullptr;
};

struct ModelRepositoryOptions {
  std::string root;  // --model_repository; "" = none
  absl::Duration poll_interval = absl::Seconds(2);
  RepositoryBudget budget;
  // How long a call may wait for room (loaded models busy) before RESOURCE_EXHAUSTED.
  absl::Duration max_room_wait = absl::InfiniteDuration();
  std::string default_model;                           // "" = first pinned, else first by name
  std::map<std::string, std::string> model_languages;  // name -> "SRC-TGT"
  ModelLoadSettings load;
  // Loads run at once, each of a different model (--model_load_threads); 1 = one at a time.
  int load_threads = 2;
};

class ModelRepository {
 public:
  // Called (never under the repository's lock) when a model becomes loaded or stops being.
  using LoadedObserver = std::function<void(const std::string& model, bool loaded)>;
  using AcquireDone = std::function<void(absl::StatusOr<ModelLease>)>;

  ModelRepository(ModelRepositoryOptions options, ServerMetrics& metrics, LoadedObserver observer);
  ~ModelRepository();  // stops its threads and frees every version (call Drain first)

  // At start, before Start: loads a --model_dir model (pinned). Errors are the load's.
  absl::Status AddPinned(const std::string& name, const std::string& dir);
  // Scans the repository directory, loads `preload` (errors are the loads'), starts the threads.
  absl::Status Start(const std::vector<std::string>& preload);

  // Every model's name and languages for routing, the default first.
  std::shared_ptr<const std::vector<RoutableModel>> Routable() const;
  // The model's serving version, through `done` exactly once: at once when it is loaded, else
  // once it has loaded (on a loader thread), or with the error (NOT_FOUND, RESOURCE_EXHAUSTED
  // when it cannot fit, UNAVAILABLE when it cannot load or while draining, DEADLINE_EXCEEDED,
  // CANCELLED when `cancelled` says so).
  void Acquire(const std::string& name, absl::Time deadline, std::function<bool()> cancelled,
               AcquireDone done);

  // Translator.ListModels: every model, the default first.
  std::vector<v1::ModelInfo> ModelInfos() const;
  // Admin.
  v1::AdminListModelsResponse Status() const;
  // Load and Reload answer through `done` once the load is over (on a loader thread), or at
  // once; Unload at once.
  using StatusDone = std::function<void(absl::StatusOr<v1::ModelStatus>)>;
  void Load(const std::string& name, StatusDone done);
  absl::StatusOr<v1::ModelStatus> Unload(const std::string& name);
  void Reload(const std::string& name, StatusDone done);
  // SIGHUP: rescan now and reload every loaded repository model.
  void ReloadAll();

  // Calls `fn` on every serving version (not those on their way out), under the lock: `fn`
  // must only read (the gauges' refresh).
  void ForEachServing(const std::function<void(ServedModel&)>& fn) const;
  // The drain: no more loads (waiting calls are answered UNAVAILABLE); shuts down every
  // version's scheduler, side by side, within `timeout` (+ `step_grace`). The errors of those
  // whose decoder is stuck, by model name.
  std::vector<std::pair<std::string, absl::Status>> Drain(absl::Duration timeout,
                                                          absl::Duration step_grace);

 private:
  friend class ModelLease;
  struct Entry;
  struct Waiter;
  struct LoadJob;

  void ReleaseLease(ServedModel* model);
  void Notify(const std::string& model, bool loaded);
  void LoaderLoop();
  // The first queued load that may start now (its model has no load running), dropping those
  // nobody waits for any more; false when none.
  bool TakeLoadLocked(LoadJob* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HousekeepingLoop();
  void Rescan(bool reload_all) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the loads that waiting calls (or admin calls) need and fit; makes room for them.
  void PlanLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartLoadLocked(Entry& e, bool reload) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops new calls on the serving version; it is freed once its last lease goes.
  void UnloadLocked(Entry& e, const char* reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves a version out of service, to be freed by the housekeeping thread after its last lease.
  void RetireLocked(std::unique_ptr<ServedModel> version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the repository's (not pinned) versions hold, those on their way out included.
  int64_t ResidentBytesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireWaitersLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailWaitersLocked(Entry& e, const absl::Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Entry* FindLocked(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status NotFoundLocked(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLoad(LoadJob job, absl::StatusOr<std::unique_ptr<ServedModel>> loaded,
                  absl::Duration took);
  void RebuildRoutableLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::ModelStatus StatusLocked(const Entry& e) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RepositoryHoldings HoldingsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t NeededBytesLocked(const Entry& e) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs callbacks collected under the lock, after it is released.
  using Deferred = std::vector<std::function<void()>>;
  void TakeDeferredLocked(Deferred* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ModelRepositoryOptions options_;
  ServerMetrics& server_metrics_;
  RepositoryMetrics metrics_;
  const LoadedObserver observer_;
  std::atomic<bool> notify_{true};
  UnpackedArchives archives_;  // the repository's .argosmodel files, unpacked

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::string default_name_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const std::vector<RoutableModel>> routable_ ABSL_GUARDED_BY(mu_);
  // Versions no longer serving, freed once their last lease is gone.
  std::vector<std::unique_ptr<ServedModel>> leaving_ ABSL_GUARDED_BY(mu_);
  // Versions out of `leaving_` that the housekeeping thread is freeing: still held until then,
  // so no load is planned into memory not given back yet.
  int64_t freeing_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int freeing_models_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> pinned_order_ ABSL_GUARDED_BY(mu_);
  uint64_t next_entry_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::Time next_scan_ ABSL_GUARDED_BY(mu_);
  bool scanned_once_ ABSL_GUARDED_BY(mu_) = false;
  // New directories seen by one scan, added when the next one agrees on their files.
  std::map<std::string, FilesFingerprint> pending_new_ ABSL_GUARDED_BY(mu_);
  absl::CondVar wake_;  // the loader and housekeeping threads wait on it
  std::deque<LoadJob> load_queue_ ABSL_GUARDED_BY(mu_);
  // The models whose load runs now: one load of a model at a time, whatever its kind (a load
  // and a reload, or a removed model's load and its re-added namesake's).
  std::set<std::string> loads_running_ ABSL_GUARDED_BY(mu_);
  Deferred deferred_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool rescan_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool reload_all_requested_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> loaders_;
  std::thread housekeeping_;
};

}  // namespace transerve
