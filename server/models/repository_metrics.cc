#include "server/models/repository_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace transerve {
namespace {

prometheus::Histogram::BucketBoundaries LoadBuckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

}  // namespace

RepositoryMetrics::RepositoryMetrics(prometheus::Registry& registry)
    : loaded_(&prometheus::BuildGauge()
                   .Name("transerve_model_loaded")
                   .Help("1 while the model is loaded, else 0")
                   .Register(registry)),
      loads_(&prometheus::BuildCounter()
                  .Name("transerve_model_loads_total")
                  .Help("Model loads (and reloads), by result: ok or error")
                  .Register(registry)),
      unloads_(&prometheus::BuildCounter()
                    .Name("transerve_model_unloads_total")
                    .Help("Model versions unloaded, by reason: budget, admin, reload, removed")
                    .Register(registry)),
      load_seconds_(&prometheus::BuildHistogram()
                         .Name("transerve_model_load_seconds")
                         .Help("Time to load a model version, warm-up included")
                         .Register(registry)),
      resident_(&prometheus::BuildGauge()
                     .Name("transerve_model_resident_bytes")
                     .Help("Bytes the serving version holds: weights and KV cache bound")
                     .Register(registry)),
      last_use_(&prometheus::BuildGauge()
                     .Name("transerve_model_last_use_timestamp_seconds")
                     .Help("When a call last used the model, Unix seconds")
                     .Register(registry)),
      repository_resident_(&prometheus::BuildGauge()
                                .Name("transerve_model_repository_resident_bytes")
                                .Help("Bytes the repository's (not pinned) models hold, versions "
                                      "on their way out included")
                                .Register(registry)
                                .Add({})),
      repository_budget_(&prometheus::BuildGauge()
                              .Name("transerve_model_repository_budget_bytes")
                              .Help("--model_memory_mb in bytes; 0 = unbounded")
                              .Register(registry)
                              .Add({})),
      loads_in_flight_(&prometheus::BuildGauge()
                            .Name("transerve_model_repository_loads_in_flight")
                            .Help("Model loads running now, at most --model_load_threads")
                            .Register(registry)
                            .Add({})) {}

void RepositoryMetrics::Loaded(const std::string& model, double seconds, int64_t resident_bytes) {
  const prometheus::Labels l{{"model", model}};
  loaded_->Add(l).Set(1);
  loads_->Add({{"model", model}, {"result", "ok"}}).Increment();
  loads_->Add({{"model", model}, {"result", "error"}});  // present at 0
  load_seconds_->Add(l, LoadBuckets()).Observe(seconds);
  resident_->Add(l).Set(static_cast<double>(resident_bytes));
}

void RepositoryMetrics::LoadFailed(const std::string& model) {
  loads_->Add({{"model", model}, {"result", "error"}}).Increment();
  loaded_->Add({{"model", model}});  // present (0 when it never loaded)
}

void RepositoryMetrics::Unloaded(const std::string& model, const char* reason, bool none_left) {
  unloads_->Add({{"model", model}, {"reason", reason}}).Increment();
  if (none_left) {
    loaded_->Add({{"model", model}}).Set(0);
    resident_->Add({{"model", model}}).Set(0);
  }
}

prometheus::Gauge* RepositoryMetrics::LastUse(const std::string& model) {
  return &last_use_->Add({{"model", model}});
}

void RepositoryMetrics::Used(prometheus::Gauge* last_use, absl::Time when) {
  last_use->Set(static_cast<double>(absl::ToUnixMicros(when)) / 1e6);
}

void RepositoryMetrics::SetRepository(int64_t resident_bytes, int64_t budget_bytes) {
  repository_resident_->Set(static_cast<double>(resident_bytes));
  repository_budget_->Set(static_cast<double>(budget_bytes));
}

void RepositoryMetrics::SetLoadsInFlight(int loads) {
  loads_in_flight_->Set(static_cast<double>(loads));
}

}  // namespace transerve
