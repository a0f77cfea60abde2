// The server's Prometheus metrics (docs/architecture.md section 5): names prefixed transerve_,
// durations in seconds, counters ending in _total. One registry per server; each model gets a
// Scheduler::Observer that feeds its batch, step, queue-wait and first-token histograms.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/scheduler.h"

namespace prometheus {
class Registry;
class Exposer;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace transerve {

class ServerMetrics {
 public:
  class ModelMetrics;

  ServerMetrics();
  ~ServerMetrics();

  // Serves /metrics on `address` ("0.0.0.0:9464"). Returns the bound port, or -1 on failure.
  int Expose(const std::string& address);

  // Registers a model version: its info and KV-capacity gauges (capacity 0 = unbounded) and the
  // observer to hand to its scheduler. Versions of one model share its series; the observer
  // must outlive the scheduler it observes.
  std::unique_ptr<ModelMetrics> AddModel(const std::string& model, const std::string& device,
                                         const std::string& dtype, const std::string& architecture,
                                         int64_t kv_cache_capacity_bytes, int replicas = 1);

  // One finished RPC; `protocol` is the front end it came through ("grpc", "http").
  void RecordRequest(const std::string& method, const std::string& code, const std::string& model,
                     const std::string& protocol, double seconds);
  // The text exposition of every metric (what /metrics serves).
  std::string Text() const;
  // Translate and TranslateStream calls recorded so far, by status name, all models together.
  std::map<std::string, int64_t> TranslationsByCode() const;

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  class ModelMetrics : public Scheduler::Observer {
   public:
    void OnBatch(int sequences, int source_tokens, double padding_ratio, double seconds) override;
    void OnStep(int rows, double seconds) override;
    void OnQueueWait(double seconds) override;
    void OnFirstToken(double seconds) override;
    // Per request: tokens in and out.
    void AddTokens(int64_t source_tokens, int64_t generated_tokens);
    // From the scheduler's stats (called periodically).
    void SetStats(const Scheduler::Stats& stats);

   private:
    friend class ServerMetrics;
    prometheus::Histogram* batch_sequences_ = nullptr;
    prometheus::Histogram* batch_tokens_ = nullptr;
    prometheus::Histogram* padding_ratio_ = nullptr;
    prometheus::Histogram* encode_seconds_ = nullptr;
    prometheus::Histogram* step_seconds_ = nullptr;
    prometheus::Histogram* step_rows_ = nullptr;
    prometheus::Histogram* queue_wait_ = nullptr;
    prometheus::Histogram* first_token_ = nullptr;
    prometheus::Counter* source_tokens_ = nullptr;
    prometheus::Counter* generated_tokens_ = nullptr;
    prometheus::Counter* steps_ = nullptr;
    prometheus::Counter* batches_ = nullptr;
    prometheus::Counter* preemptions_ = nullptr;
    prometheus::Gauge* active_sequences_ = nullptr;
    prometheus::Gauge* active_rows_ = nullptr;
    prometheus::Gauge* queue_depth_ = nullptr;
    prometheus::Gauge* kv_cache_bytes_ = nullptr;
    absl::Mutex stats_mu_;  // SetStats runs on the refresher thread and on scrapes
    double last_steps_ = 0;
    double last_batches_ = 0;
    double last_preemptions_ = 0;
  };

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
  prometheus::Family<prometheus::Histogram>* duration_ = nullptr;
  struct Families;
  std::unique_ptr<Families> families_;
};

}  // namespace transerve
