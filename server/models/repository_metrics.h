// The model repository's Prometheus series: per model loaded, loads, unloads, load seconds,
// resident bytes and last use; for the whole repository its resident bytes, budget and loads in
// flight.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace transerve {

class RepositoryMetrics {
 public:
  explicit RepositoryMetrics(prometheus::Registry& registry);

  void Loaded(const std::string& model, double seconds, int64_t resident_bytes);
  void LoadFailed(const std::string& model);
  // `reason`: budget, admin, reload, removed.
  void Unloaded(const std::string& model, const char* reason, bool none_left);
  // The model's last-use gauge, for the request path to set without a label lookup.
  prometheus::Gauge* LastUse(const std::string& model);
  static void Used(prometheus::Gauge* last_use, absl::Time when);
  void SetRepository(int64_t resident_bytes, int64_t budget_bytes);
  // Loads running now (at most --model_load_threads).
  void SetLoadsInFlight(int loads);

 private:
  prometheus::Family<prometheus::Gauge>* loaded_;
  prometheus::Family<prometheus::Counter>* loads_;
  prometheus::Family<prometheus::Counter>* unloads_;
  prometheus::Family<prometheus::Histogram>* load_seconds_;
  prometheus::Family<prometheus::Gauge>* resident_;
  prometheus::Family<prometheus::Gauge>* last_use_;
  prometheus::Gauge* repository_resident_;
  prometheus::Gauge* repository_budget_;
  prometheus::Gauge* loads_in_flight_;
};

}  // namespace transerve
