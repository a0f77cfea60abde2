#include "server/models/model_repository.h"

#include <malloc.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "model/core/logging.h"
#include "model/tokenizer/m2m100_tokenizer.h"
#include "model/translator/model_directory.h"
#include "server/replica_set.h"

namespace transerve {
namespace {

constexpr absl::Duration kHousekeepingTick = absl::Milliseconds(20);

}  // namespace

// A call (or an admin Load) waiting for a model's version.
struct ModelRepository::Waiter {
  absl::Time arrived;
  absl::Time deadline;
  std::function<bool()> cancelled;  // may be empty
  AcquireDone done;
};

struct ModelRepository::Entry {
  uint64_t id = 0;  // tells a re-added model from the one that was removed
  std::string name;
  std::string dir;
  bool pinned = false;
  FilesFingerprint fingerprint;  // of the files the serving version (or the listing) came from
  FilesFingerprint pending;      // a change seen once, acted on when the next scan agrees
  ModelLanguages languages;
  v1::ModelInfo listed;  // what ListModels says while it is not loaded
  std::unique_ptr<ServedModel> current;
  bool loading = false;                 // a first load is queued or running
  bool reloading = false;               // a new version is loading beside `current`
  FilesFingerprint failed_fingerprint;  // these files failed to load: not retried on demand
  std::vector<Waiter> waiters;
  std::vector<std::function<void(absl::Status)>> reload_waiters;
  std::string last_error;
  int64_t versions = 0, loads = 0, failed_loads = 0, unloads = 0;
  double load_seconds = 0;
  absl::Time last_used = absl::InfinitePast();
  prometheus::Gauge* last_use_gauge = nullptr;
  int64_t known_bytes = 0;      // the last loaded version's, until the files change
  int64_t estimated_bytes = 0;  // from the checkpoint's header (EstimateLoadedBytes)
};

struct ModelRepository::LoadJob {
  uint64_t entry_id = 0;
  std::string name;
  std::string dir;
  std::string pair;
  FilesFingerprint fingerprint;
  bool reload = false;
  bool pinned = false;
};

namespace {

// What ListModels and routing know of a model that is not loaded: its files' word.
void ReadListing(const std::string& name, const std::string& dir, const std::string& pair,
                 ModelLanguages* languages, v1::ModelInfo* info) {
  info->Clear();
  info->set_name(name);
  auto config = ReadModelConfig(dir);
  if (config.ok()) info->set_architecture(ArchitectureOf(*config));
  *languages = ModelLanguages();
  // A Marian vocabulary also names a multilingual model's targets, an M2M-100 / NLLB-200
  // tokenizer both sides' languages; a model whose tokenizer loads only with it (CTranslate2,
  // Argos) is listed with the pair its files name.
  const bool m2m = config.ok() && config->architecture == MarianConfig::Architecture::kM2m100;
  auto tokenizer = m2m ? LoadM2m100Tokenizer(dir) : MarianTokenizer::Load(dir);
  const std::vector<std::string> ct2_codes = Ct2LanguageCodes(dir);
  auto l = tokenizer.ok()       ? ReadModelLanguages(dir, pair, **tokenizer)
           : !ct2_codes.empty() ? ReadModelLanguages(dir, pair, LanguageCodeTable(ct2_codes))
                                : ReadModelLanguages(dir, pair);
  if (l.ok()) *languages = *std::move(l);
  info->set_source_language(languages->source);
  info->set_target_language(languages->target);
  for (const std::string& t : languages->targets()) info->add_target_languages(t);
  for (const auto& [source, token] : languages->tokens.sources) info->add_source_languages(source);
  info->set_loaded(false);
}

}  // namespace

ModelLease& ModelLease::operator=(ModelLease&& other) noexcept {
  if (this != &other) {
    Release();
    repository_ = std::exchange(other.repository_, nullptr);
    model_ = std::exchange(other.model_, nullptr);
  }
  return *this;
}

void ModelLease::Release() {
  if (model_ != nullptr) repository_->ReleaseLease(model_);
  model_ = nullptr;
  repository_ = nullptr;
}

ModelRepository::ModelRepository(ModelRepositoryOptions options, ServerMetrics& metrics,
                                 LoadedObserver observer)
    : options_(std::move(options)),
      server_metrics_(metrics),
      metrics_(*metrics.registry()),
      observer_(std::move(observer)) {
  metrics_.SetRepository(0, options_.budget.bytes);
}

void ModelRepository::Notify(const std::string& model, bool loaded) {
  if (observer_ && notify_.load()) observer_(model, loaded);
}

ModelRepository::~ModelRepository() {
  notify_.store(false);  // what the observer reaches (the server's health) may be gone already
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    draining_ = true;
    wake_.SignalAll();
  }
  for (std::thread& t : loaders_) t.join();  // each finishes the load it runs, then stops
  if (housekeeping_.joinable()) housekeeping_.join();
  Deferred deferred;
  std::vector<std::unique_ptr<ServedModel>> versions;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [name, e] : entries_) {
      FailWaitersLocked(*e, absl::UnavailableError("the server is shutting down"));
      if (e->current) versions.push_back(std::move(e->current));
    }
    for (auto& v : leaving_) versions.push_back(std::move(v));
    leaving_.clear();
    TakeDeferredLocked(&deferred);
  }
  for (auto& f : deferred) f();
  versions.clear();  // each scheduler stops before its translator goes
}

absl::Status ModelRepository::AddPinned(const std::string& name, const std::string& dir) {
  std::string pair;
  if (auto it = options_.model_languages.find(name); it != options_.model_languages.end()) {
    pair = it->second;
  }
  const absl::Time start = absl::Now();
  auto loaded = LoadServedModel(name, dir, pair, options_.load, server_metrics_);
  if (!loaded.ok()) return loaded.status();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  absl::MutexLock lock(&mu_);
  if (entries_.contains(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("two models are named '", name, "': names must be unique"));
  }
  auto e = std::make_unique<Entry>();
  e->id = next_entry_id_++;
  e->name = name;
  e->dir = dir;
  e->pinned = true;
  e->last_use_gauge = metrics_.LastUse(name);
  e->fingerprint = FingerprintOf(dir);
  (*loaded)->version = e->versions = 1;
  (*loaded)->pinned = true;
  e->loads = 1;
  e->load_seconds = seconds;
  e->known_bytes = (*loaded)->resident_bytes;
  e->languages = (*loaded)->languages;
  e->listed = (*loaded)->info;
  metrics_.Loaded(name, seconds, (*loaded)->resident_bytes);
  e->current = *std::move(loaded);
  entries_.emplace(name, std::move(e));
  pinned_order_.push_back(name);
  return absl::OkStatus();
}

absl::Status ModelRepository::Start(const std::vector<std::string>& preload) {
  if (!options_.root.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(options_.root, ec)) {
      return absl::NotFoundError(
          absl::StrCat("--model_repository '", options_.root, "' is not a directory"));
    }
  }
  Rescan(/*reload_all=*/false);  // the first scan adds what it finds at once
  {
    absl::MutexLock lock(&mu_);
    if (entries_.empty()) {
      return absl::NotFoundError(
          options_.root.empty()
              ? std::string("no model: give --model_dir or --model_repository")
              : absl::StrCat("no model directory in --model_repository '", options_.root,
                             "' (each model is a subdirectory with config.json and "
                             "model.safetensors or pytorch_model.bin, a CTranslate2 directory, "
                             "an Argos Translate package or a .argosmodel file)"));
    }
    if (!options_.default_model.empty()) {
      if (FindLocked(options_.default_model) == nullptr) {
        return absl::NotFoundError(
            absl::StrCat("--default_model '", options_.default_model, "' is not a served model"));
      }
      default_name_ = options_.default_model;
    } else {
      default_name_ = pinned_order_.empty() ? entries_.begin()->first : pinned_order_.front();
    }
    for (const std::string& name : preload) {
      if (FindLocked(name) == nullptr) return NotFoundLocked(name);
    }
    RebuildRoutableLocked();
    next_scan_ = absl::Now() + options_.poll_interval;
  }
  for (int i = 0; i < std::max(1, options_.load_threads); ++i) {
    loaders_.emplace_back([this] { LoaderLoop(); });
  }
  housekeeping_ = std::thread([this] { HousekeepingLoop(); });
  for (const std::string& name : preload) {
    absl::Notification done;
    absl::Status status;
    Load(name, [&](absl::StatusOr<v1::ModelStatus> s) {
      status = s.status();
      done.Notify();
    });
    done.WaitForNotification();
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::shared_ptr<const std::vector<RoutableModel>> ModelRepository::Routable() const {
  absl::MutexLock lock(&mu_);
  return routable_;
}

ModelRepository::Entry* ModelRepository::FindLocked(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.get();
}

absl::Status ModelRepository::NotFoundLocked(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& [n, e] : entries_) {
    if (names.size() == 20) {
      names.push_back("...");
      break;
    }
    names.push_back(n);
  }
  return absl::NotFoundError(
      absl::StrCat("no model named '", name, "' (served: ", absl::StrJoin(names, ", "), ")"));
}

void ModelRepository::RebuildRoutableLocked() {
  auto routable = std::make_shared<std::vector<RoutableModel>>();
  auto add = [&](const Entry& e) { routable->push_back({e.name, e.languages}); };
  if (const Entry* d = FindLocked(default_name_)) add(*d);
  for (const std::string& name : pinned_order_) {
    if (name != default_name_) add(*FindLocked(name));
  }
  for (const auto& [name, e] : entries_) {
    if (!e->pinned && name != default_name_) add(*e);
  }
  if (routable->empty()) return;  // every model removed: keep routing to what was there
  routable_ = std::move(routable);
}

void ModelRepository::Acquire(const std::string& name, absl::Time deadline,
                              std::function<bool()> cancelled, AcquireDone done) {
  absl::StatusOr<ModelLease> answer = absl::UnknownError("unanswered");
  {
    absl::MutexLock lock(&mu_);
    Entry* e = FindLocked(name);
    if (draining_) {
      answer = absl::UnavailableError("the server is shutting down");
    } else if (e == nullptr) {
      answer = NotFoundLocked(name);
    } else if (e->current) {
      ++e->current->leases;
      e->last_used = absl::Now();
      RepositoryMetrics::Used(e->last_use_gauge, e->last_used);
      answer = ModelLease(this, e->current.get());
    } else if (!e->loading && !e->failed_fingerprint.empty() &&
               e->failed_fingerprint == e->fingerprint) {
      answer = absl::UnavailableError(
          absl::StrCat("model '", name, "' cannot be loaded: ", e->last_error,
                       " (it is tried again when its files change or on an admin LoadModel)"));
    } else {
      e->waiters.push_back({absl::Now(), deadline, std::move(cancelled), std::move(done)});
      PlanLocked();
      wake_.SignalAll();
      return;
    }
  }
  done(std::move(answer));
}

void ModelRepository::ReleaseLease(ServedModel* model) {
  absl::MutexLock lock(&mu_);
  // A leaving version's last lease frees it (and makes room): the housekeeping thread does that.
  if (--model->leases == 0 && model->leaving) wake_.SignalAll();
}

int64_t ModelRepository::NeededBytesLocked(const Entry& e) const {
  if (e.known_bytes > 0) return e.known_bytes;
  // Before its first load: the weights' estimate and one KV cache bound per replica, as many as
  // the CPU would give it (the most of any device), so that a load in flight never reserves
  // less than it will hold (ResidentBytesOf).
  const auto it = options_.load.model_replicas.find(e.name);
  const int asked = it != options_.load.model_replicas.end() ? it->second : options_.load.replicas;
  const int threads = options_.load.num_threads > 0
                          ? options_.load.num_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int replicas = ReplicasFor(asked, Device::kCpu, threads);
  return e.estimated_bytes + std::max<int64_t>(options_.load.kv_cache_bytes, 0) * replicas;
}

RepositoryHoldings ModelRepository::HoldingsLocked() const {
  RepositoryHoldings h;
  for (const auto& [name, e] : entries_) {
    if (e->pinned) continue;
    if (e->current) {
      h.bytes += e->current->resident_bytes;
      ++h.models;
    }
    if (e->loading) {
      h.bytes += NeededBytesLocked(*e);
      ++h.models;
    }
    if (e->reloading) h.bytes += NeededBytesLocked(*e);  // beside the old: the stated overhead
  }
  for (const auto& v : leaving_) {
    if (v->pinned) continue;
    h.bytes += v->resident_bytes;
    h.leaving_bytes += v->resident_bytes;
    ++h.models;
    ++h.leaving_models;
  }
  h.bytes += freeing_bytes_;
  h.leaving_bytes += freeing_bytes_;
  h.models += freeing_models_;
  h.leaving_models += freeing_models_;
  return h;
}

void ModelRepository::PlanLocked() {
  if (draining_) return;
  std::vector<Entry*> wanting;
  for (auto& [name, e] : entries_) {
    if (!e->current && !e->loading && !e->waiters.empty()) wanting.push_back(e.get());
  }
  std::sort(wanting.begin(), wanting.end(), [](const Entry* a, const Entry* b) {
    return a->waiters.front().arrived < b->waiters.front().arrived;
  });
  for (Entry* e : wanting) {
    if (e->pinned) {  // a pinned model leaves only to be replaced: load it at once
      StartLoadLocked(*e, /*reload=*/false);
      continue;
    }
    std::vector<EvictionCandidate> candidates;
    for (auto& [name, other] : entries_) {
      if (other->pinned || !other->current || other.get() == e) continue;
      candidates.push_back(
          {name, other->current->resident_bytes, other->last_used, other->current->leases > 0});
    }
    const RoomPlan plan =
        PlanRoom(std::move(candidates), HoldingsLocked(), NeededBytesLocked(*e), options_.budget);
    if (plan.verdict == RoomPlan::Verdict::kNever) {
      FailWaitersLocked(*e, absl::ResourceExhaustedError(absl::StrCat(
                                "model '", e->name, "' cannot be loaded: ", plan.reason)));
      continue;
    }
    for (const std::string& victim : plan.unload) UnloadLocked(*FindLocked(victim), "budget");
    for (const std::string& victim : plan.drain) UnloadLocked(*FindLocked(victim), "budget");
    if (plan.verdict == RoomPlan::Verdict::kWait) break;  // first come, first loaded
    StartLoadLocked(*e, /*reload=*/false);
  }
  metrics_.SetRepository(ResidentBytesLocked(), options_.budget.bytes);
}

void ModelRepository::StartLoadLocked(Entry& e, bool reload) {
  LoadJob job;
  job.entry_id = e.id;
  job.name = e.name;
  job.dir = e.dir;
  if (auto it = options_.model_languages.find(e.name); it != options_.model_languages.end()) {
    job.pair = it->second;
  }
  job.fingerprint = FingerprintOf(e.dir);
  job.reload = reload;
  job.pinned = e.pinned;
  (reload ? e.reloading : e.loading) = true;
  load_queue_.push_back(std::move(job));
  wake_.SignalAll();
}

void ModelRepository::UnloadLocked(Entry& e, const char* reason) {
  if (!e.current) return;
  Log().info("model '{}' version {} unloaded ({}){}", e.name, e.current->version, reason,
             e.current->leases > 0 ? ": freed once its calls in flight are done" : "");
  RetireLocked(std::move(e.current));
  ++e.unloads;
  metrics_.Unloaded(e.name, reason, /*none_left=*/true);
  deferred_.push_back([this, name = e.name] { Notify(name, false); });
  wake_.SignalAll();
}

void ModelRepository::RetireLocked(std::unique_ptr<ServedModel> version) {
  version->leaving = true;
  leaving_.push_back(std::move(version));
  wake_.SignalAll();
}

int64_t ModelRepository::ResidentBytesLocked() const {
  int64_t resident = 0;
  for (const auto& [name, e] : entries_) {
    if (!e->pinned && e->current) resident += e->current->resident_bytes;
  }
  for (const auto& v : leaving_) {
    if (!v->pinned) resident += v->resident_bytes;
  }
  return resident + freeing_bytes_;
}

void ModelRepository::FailWaitersLocked(Entry& e, const absl::Status& s) {
  for (Waiter& w : e.waiters) {
    deferred_.push_back([done = std::move(w.done), s] { done(s); });
  }
  e.waiters.clear();
  for (auto& r : e.reload_waiters) deferred_.push_back([r = std::move(r), s] { r(s); });
  e.reload_waiters.clear();
}

void ModelRepository::ExpireWaitersLocked(absl::Time now) {
  for (auto& [name, e] : entries_) {
    auto& ws = e->waiters;
    for (auto it = ws.begin(); it != ws.end();) {
      absl::Status s;
      if (it->cancelled && it->cancelled()) {
        s = absl::CancelledError("cancelled while its model was loading");
      } else if (now >= it->deadline) {
        s = absl::DeadlineExceededError(
            absl::StrCat("the deadline passed while model '", name, "' was loading"));
      } else if (!e->loading && now - it->arrived >= options_.max_room_wait) {
        s = absl::ResourceExhaustedError(
            absl::StrCat("model '", name, "' found no room to load within ",
                         absl::FormatDuration(options_.max_room_wait),
                         ": the loaded models are busy (--model_memory_mb / --max_loaded_models)"));
      }
      if (s.ok()) {
        ++it;
        continue;
      }
      deferred_.push_back([done = std::move(it->done), s] { done(s); });
      it = ws.erase(it);
    }
  }
}

void ModelRepository::TakeDeferredLocked(Deferred* out) {
  for (auto& f : deferred_) out->push_back(std::move(f));
  deferred_.clear();
}

bool ModelRepository::TakeLoadLocked(LoadJob* job) {
  for (auto it = load_queue_.begin(); it != load_queue_.end();) {
    Entry* e = FindLocked(it->name);
    if (e != nullptr && e->id != it->entry_id) e = nullptr;  // removed, then added again
    bool* wanted = e == nullptr ? nullptr : it->reload ? &e->reloading : &e->loading;
    // Nobody waits for it: its model is gone, another load of it served first (a reload
    // finished while it was unloaded and wanted again), or the drain stops loads.
    if (wanted == nullptr || !*wanted || draining_) {
      if (wanted != nullptr && draining_) *wanted = false;
      it = load_queue_.erase(it);
      continue;
    }
    if (loads_running_.contains(it->name)) {  // one load of a model at a time
      ++it;
      continue;
    }
    *job = std::move(*it);
    load_queue_.erase(it);
    loads_running_.insert(job->name);
    metrics_.SetLoadsInFlight(static_cast<int>(loads_running_.size()));
    return true;
  }
  return false;
}

void ModelRepository::LoaderLoop() {
  while (true) {
    LoadJob job;
    int running = 0;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && !TakeLoadLocked(&job)) wake_.Wait(&mu_);
      if (stopping_) return;
      running = static_cast<int>(loads_running_.size());
    }
    Log().info("model '{}': {} from {} ({} of {} loaders busy)", job.name,
               job.reload ? "loading a new version" : "loading", job.dir, running,
               std::max(1, options_.load_threads));
    const absl::Time start = absl::Now();
    ModelLoadSettings settings = options_.load;
    auto loaded = LoadServedModel(job.name, job.dir, job.pair, settings, server_metrics_);
    FinishLoad(std::move(job), std::move(loaded), absl::Now() - start);
  }
}

void ModelRepository::FinishLoad(LoadJob job, absl::StatusOr<std::unique_ptr<ServedModel>> loaded,
                                 absl::Duration took) {
  Deferred deferred;
  {
    absl::MutexLock lock(&mu_);
    loads_running_.erase(job.name);  // its model's next queued load may start (signalled below)
    metrics_.SetLoadsInFlight(static_cast<int>(loads_running_.size()));
    Entry* e = FindLocked(job.name);
    if (e != nullptr && e->id != job.entry_id) e = nullptr;  // removed, then added again
    if (!loaded.ok()) {
      const std::string why(loaded.status().message());
      Log().error(
          "model '{}': {} failed{}: {}", job.name, job.reload ? "reload" : "load",
          job.reload && e != nullptr && e->current ? " (the old version keeps serving)" : "", why);
      metrics_.LoadFailed(job.name);
      if (e != nullptr) {
        ++e->failed_loads;
        e->last_error = why;
        if (job.reload) {
          e->reloading = false;
          for (auto& r : e->reload_waiters) {
            deferred_.push_back([r = std::move(r), s = loaded.status()] { r(s); });
          }
          e->reload_waiters.clear();
        } else {
          e->loading = false;
          e->failed_fingerprint = job.fingerprint;
          e->fingerprint = job.fingerprint;
          FailWaitersLocked(*e, absl::UnavailableError(absl::StrCat("model '", job.name,
                                                                    "' cannot be loaded: ", why)));
        }
      }
    } else {
      std::unique_ptr<ServedModel> v = *std::move(loaded);
      v->pinned = job.pinned;
      if (e == nullptr || draining_) {
        RetireLocked(std::move(v));  // nobody wants it any more
      } else {
        v->version = ++e->versions;
        ++e->loads;
        e->load_seconds = absl::ToDoubleSeconds(took);
        e->known_bytes = v->resident_bytes;
        e->last_error.clear();
        e->failed_fingerprint.clear();
        e->fingerprint = job.fingerprint;
        e->pending.clear();
        e->languages = v->languages;
        e->listed = v->info;
        e->listed.set_loaded(false);
        metrics_.Loaded(e->name, e->load_seconds, v->resident_bytes);
        if (e->current) {
          Log().info("model '{}': version {} serves; version {} finishes its calls and goes",
                     e->name, v->version, e->current->version);
          RetireLocked(std::move(e->current));
          ++e->unloads;
          metrics_.Unloaded(e->name, "reload", /*none_left=*/false);
        } else {
          deferred_.push_back([this, name = e->name] { Notify(name, true); });
        }
        e->current = std::move(v);
        e->loading = false;
        e->reloading = false;
        RebuildRoutableLocked();
        const absl::Time now = absl::Now();
        for (Waiter& w : e->waiters) {
          ++e->current->leases;
          deferred_.push_back([this, done = std::move(w.done), model = e->current.get()] {
            done(ModelLease(this, model));
          });
        }
        if (!e->waiters.empty()) {
          e->last_used = now;
          RepositoryMetrics::Used(e->last_use_gauge, now);
        }
        e->waiters.clear();
        for (auto& r : e->reload_waiters) deferred_.push_back([r = std::move(r)] { r({}); });
        e->reload_waiters.clear();
      }
    }
    PlanLocked();
    wake_.SignalAll();
    TakeDeferredLocked(&deferred);
  }
  for (auto& f : deferred) f();
}

void ModelRepository::HousekeepingLoop() {
  while (true) {
    Deferred deferred;
    std::vector<std::unique_ptr<ServedModel>> freed;
    bool scan = false, reload_all = false;
    {
      absl::MutexLock lock(&mu_);
      wake_.WaitWithTimeout(&mu_, kHousekeepingTick);
      if (stopping_) return;
      const absl::Time now = absl::Now();
      ExpireWaitersLocked(now);
      if (!draining_) {
        for (auto it = leaving_.begin(); it != leaving_.end();) {
          if ((*it)->leases == 0) {
            if (!(*it)->pinned) {
              freeing_bytes_ += (*it)->resident_bytes;
              ++freeing_models_;
            }
            freed.push_back(std::move(*it));
            it = leaving_.erase(it);
          } else {
            ++it;
          }
        }
      }
      if (!options_.root.empty() && !draining_ && (now >= next_scan_ || rescan_requested_)) {
        scan = true;
        reload_all = reload_all_requested_;
        rescan_requested_ = reload_all_requested_ = false;
        next_scan_ = now + options_.poll_interval;
      }
      TakeDeferredLocked(&deferred);
    }
    for (auto& f : deferred) f();
    if (!freed.empty()) {
      int64_t bytes = 0;
      int models = 0;
      for (auto& v : freed) {
        Log().debug("model '{}' version {} freed", v->name, v->version);
        if (!v->pinned) {
          bytes += v->resident_bytes;
          ++models;
        }
        v.reset();  // its scheduler (idle: no lease) stops, then its weights go
      }
      malloc_trim(0);  // give the pages back, so the budget is what the process holds
      absl::MutexLock lock(&mu_);
      freeing_bytes_ -= bytes;
      freeing_models_ -= models;
      PlanLocked();  // room was made
      TakeDeferredLocked(&deferred);
    }
    if (scan) Rescan(reload_all);
    deferred.clear();
    {
      absl::MutexLock lock(&mu_);
      TakeDeferredLocked(&deferred);
    }
    for (auto& f : deferred) f();
  }
}

void ModelRepository::Rescan(bool reload_all) {
  // The file system is read without the lock; only its result is applied under it.
  std::vector<RepositoryEntry> found;
  if (!options_.root.empty()) found = ScanRepository(options_.root, &archives_);
  struct Listing {
    std::string dir;
    ModelLanguages languages;
    v1::ModelInfo info;
    int64_t estimated_bytes = 0;
  };
  std::map<std::string, Listing> listings;  // for new or changed models
  {
    absl::MutexLock lock(&mu_);
    for (const RepositoryEntry& f : found) {
      const Entry* e = FindLocked(f.name);
      if (e != nullptr && e->pinned) continue;
      if (e == nullptr || e->fingerprint != f.fingerprint) listings[f.name].dir = f.dir;
    }
  }
  for (auto& [name, l] : listings) {
    std::string pair;
    if (auto it = options_.model_languages.find(name); it != options_.model_languages.end()) {
      pair = it->second;
    }
    ReadListing(name, l.dir, pair, &l.languages, &l.info);
    l.estimated_bytes = EstimateWeightBytes(l.dir);
  }
  Deferred deferred;
  {
    absl::MutexLock lock(&mu_);
    const bool first = !scanned_once_;
    scanned_once_ = true;
    bool changed = false;
    std::map<std::string, const RepositoryEntry*> present;
    for (const RepositoryEntry& f : found) present[f.name] = &f;
    // Removed: new calls are refused at once; calls in flight finish on their version.
    for (auto it = entries_.begin(); it != entries_.end();) {
      Entry& e = *it->second;
      if (e.pinned || present.contains(e.name)) {
        ++it;
        continue;
      }
      Log().info("model '{}': its directory is gone from the repository", e.name);
      FailWaitersLocked(e, absl::NotFoundError(absl::StrCat("model '", e.name,
                                                            "' was removed from the repository")));
      UnloadLocked(e, "removed");
      it = entries_.erase(it);
      changed = true;
    }
    for (const RepositoryEntry& f : found) {
      Entry* e = FindLocked(f.name);
      if (e != nullptr && e->pinned) continue;
      auto listing = listings.find(f.name);
      if (e == nullptr) {
        // A new directory is added once two scans agree on its files (a copy in progress is
        // not a model yet), or at once by the first scan.
        if (!first && pending_new_[f.name] != f.fingerprint) {
          pending_new_[f.name] = f.fingerprint;
          continue;
        }
        pending_new_.erase(f.name);
        auto added = std::make_unique<Entry>();
        added->id = next_entry_id_++;
        added->name = f.name;
        added->dir = f.dir;
        added->fingerprint = f.fingerprint;
        added->last_use_gauge = metrics_.LastUse(f.name);
        if (listing != listings.end()) {
          added->languages = listing->second.languages;
          added->listed = listing->second.info;
          added->estimated_bytes = listing->second.estimated_bytes;
        }
        Log().info("model '{}' found in the repository ({}), languages {}-{}", f.name, f.dir,
                   added->languages.source.empty() ? "?" : added->languages.source,
                   added->languages.target.empty() ? "?" : added->languages.target);
        entries_.emplace(f.name, std::move(added));
        // Its health name exists (NOT_SERVING) from now on, not only once it has loaded.
        deferred_.push_back([this, name = f.name] { Notify(name, false); });
        changed = true;
        continue;
      }
      const bool files_changed = f.fingerprint != e->fingerprint;
      if (files_changed && e->pending != f.fingerprint) {
        e->pending = f.fingerprint;  // acted on when the next scan sees the same files
        continue;
      }
      if (files_changed) {
        e->dir = f.dir;  // an archive's new version is unpacked into a new folder
        e->pending.clear();
        e->known_bytes = 0;
        e->failed_fingerprint.clear();
        if (listing != listings.end()) e->estimated_bytes = listing->second.estimated_bytes;
        if (listing != listings.end() && !e->current) {
          e->languages = listing->second.languages;
          e->listed = listing->second.info;
          changed = true;
        }
      }
      if ((files_changed || reload_all) && e->current && !e->reloading) {
        Log().info("model '{}': {}, reloading", e->name,
                   files_changed ? "its files changed" : "SIGHUP");
        if (files_changed) e->fingerprint = f.fingerprint;
        StartLoadLocked(*e, /*reload=*/true);
      } else if (files_changed && !e->current) {
        e->fingerprint = f.fingerprint;
      }
    }
    for (auto it = pending_new_.begin(); it != pending_new_.end();) {
      it = present.contains(it->first) ? std::next(it) : pending_new_.erase(it);
    }
    if (changed) RebuildRoutableLocked();
    PlanLocked();
    TakeDeferredLocked(&deferred);
  }
  for (auto& f : deferred) f();
}

void ModelRepository::ReloadAll() {
  absl::MutexLock lock(&mu_);
  rescan_requested_ = reload_all_requested_ = true;
  wake_.SignalAll();
}

std::vector<v1::ModelInfo> ModelRepository::ModelInfos() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::ModelInfo> infos;
  if (routable_ == nullptr) return infos;
  for (const RoutableModel& r : *routable_) {
    const Entry* e = FindLocked(r.name);
    if (e == nullptr) continue;
    v1::ModelInfo& info = infos.emplace_back(e->current ? e->current->info : e->listed);
    info.set_is_default(infos.size() == 1);
  }
  return infos;
}

void ModelRepository::ForEachServing(const std::function<void(ServedModel&)>& fn) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [name, e] : entries_) {
    if (e->current) fn(*e->current);
  }
}

v1::ModelStatus ModelRepository::StatusLocked(const Entry& e) const {
  v1::ModelStatus s;
  s.set_name(e.name);
  s.set_directory(e.dir);
  if (e.current) {
    s.set_state(v1::ModelStatus::LOADED);
  } else if (e.loading) {
    s.set_state(v1::ModelStatus::LOADING);
  } else if (!e.failed_fingerprint.empty()) {
    s.set_state(v1::ModelStatus::FAILED);
  } else {
    s.set_state(v1::ModelStatus::UNLOADED);
  }
  s.set_pinned(e.pinned);
  s.set_resident_bytes(e.current ? e.current->resident_bytes : 0);
  s.set_version(e.versions);
  s.set_loads(e.loads);
  s.set_failed_loads(e.failed_loads);
  s.set_unloads(e.unloads);
  s.set_load_seconds(e.load_seconds);
  s.set_last_used_unix_ms(e.last_used == absl::InfinitePast() ? 0
                                                              : absl::ToUnixMillis(e.last_used));
  int in_flight = e.current ? e.current->leases : 0;
  for (const auto& v : leaving_) {
    if (v->name == e.name) in_flight += v->leases;
  }
  s.set_in_flight(in_flight);
  s.set_last_error(e.last_error);
  s.set_source_language(e.languages.source);
  s.set_target_language(e.languages.target);
  s.set_reloading(e.reloading);
  return s;
}

v1::AdminListModelsResponse ModelRepository::Status() const {
  absl::MutexLock lock(&mu_);
  v1::AdminListModelsResponse r;
  int loaded = 0;
  for (const auto& [name, e] : entries_) {
    *r.add_models() = StatusLocked(*e);
    if (!e->pinned && e->current) ++loaded;
  }
  r.set_memory_budget_bytes(options_.budget.bytes);
  r.set_resident_bytes(ResidentBytesLocked());
  r.set_max_loaded_models(options_.budget.max_models);
  r.set_loaded_models(loaded);
  return r;
}

void ModelRepository::Load(const std::string& name, StatusDone done) {
  {
    absl::MutexLock lock(&mu_);
    Entry* e = FindLocked(name);
    if (e != nullptr && !e->current) e->failed_fingerprint.clear();  // an operator's retry
  }
  Acquire(name, absl::InfiniteFuture(), nullptr,
          [this, name, done = std::move(done)](absl::StatusOr<ModelLease> lease) {
            if (!lease.ok()) return done(lease.status());
            lease->Release();
            absl::MutexLock lock(&mu_);
            const Entry* e = FindLocked(name);
            if (e == nullptr) return done(NotFoundLocked(name));
            done(StatusLocked(*e));
          });
}

absl::StatusOr<v1::ModelStatus> ModelRepository::Unload(const std::string& name) {
  Deferred deferred;
  absl::StatusOr<v1::ModelStatus> result;
  {
    absl::MutexLock lock(&mu_);
    Entry* e = FindLocked(name);
    if (e == nullptr) return NotFoundLocked(name);
    if (e->pinned) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model '", name, "' comes from --model_dir: it stays loaded (it can be reloaded)"));
    }
    UnloadLocked(*e, "admin");
    result = StatusLocked(*e);
    TakeDeferredLocked(&deferred);
  }
  for (auto& f : deferred) f();
  return result;
}

void ModelRepository::Reload(const std::string& name, StatusDone done) {
  absl::StatusOr<v1::ModelStatus> now;
  {
    absl::MutexLock lock(&mu_);
    Entry* e = FindLocked(name);
    if (draining_) {
      now = absl::UnavailableError("the server is shutting down");
    } else if (e == nullptr) {
      now = NotFoundLocked(name);
    } else if (!e->current) {
      // Nothing serves to be replaced: the next load reads the files as they are then.
      e->known_bytes = 0;
      e->failed_fingerprint.clear();
      now = StatusLocked(*e);
    } else {
      e->reload_waiters.push_back([this, name, done](absl::Status s) {
        if (!s.ok()) return done(s);
        absl::MutexLock lock(&mu_);
        const Entry* e = FindLocked(name);
        if (e == nullptr) return done(NotFoundLocked(name));
        done(StatusLocked(*e));
      });
      if (!e->reloading) StartLoadLocked(*e, /*reload=*/true);
      return;
    }
  }
  done(std::move(now));
}

std::vector<std::pair<std::string, absl::Status>> ModelRepository::Drain(
    absl::Duration timeout, absl::Duration step_grace) {
  std::vector<std::pair<std::string, ReplicaSet*>> schedulers;
  Deferred deferred;
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    for (auto& [name, e] : entries_) {
      FailWaitersLocked(*e, absl::UnavailableError("the server is shutting down"));
      if (e->current) schedulers.emplace_back(name, e->current->scheduler.get());
    }
    for (auto& v : leaving_) schedulers.emplace_back(v->name, v->scheduler.get());
    TakeDeferredLocked(&deferred);
  }
  for (auto& f : deferred) f();
  std::vector<absl::Status> stopped(schedulers.size());
  std::vector<std::thread> stoppers;
  for (size_t i = 0; i < schedulers.size(); ++i) {
    stoppers.emplace_back(
        [&, i] { stopped[i] = schedulers[i].second->Shutdown(timeout, step_grace); });
  }
  for (std::thread& t : stoppers) t.join();
  std::vector<std::pair<std::string, absl::Status>> stuck;
  for (size_t i = 0; i < schedulers.size(); ++i) {
    if (!stopped[i].ok()) stuck.emplace_back(schedulers[i].first, stopped[i]);
  }
  return stuck;
}

}  // namespace transerve
