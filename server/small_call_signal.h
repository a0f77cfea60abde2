// What a model's replicas tell each other about small requests (IsSmallRequest,
// server/admission_plan.h): how many have work, queued or live, on any replica, and when the
// last of them ended. With it every replica holds a large request to its live share while small
// calls are about anywhere in the model, not only on the replica they landed on, and a replica
// busy with a bulk request alone makes room for a small call that another replica runs
// (docs/server.md, "Large documents"). One per model; a lone scheduler has its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace transerve {

class SmallCallSignal {
 public:
  // A small request's work began (+1) or ended (-1) on some replica. The clock is read only
  // when the last one ends (this runs for every small request, twice).
  void Change(int64_t delta) {
    if (with_work_.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
      last_end_nanos_.store(absl::ToUnixNanos(absl::Now()), std::memory_order_release);
    }
  }
  // A small request has work now somewhere in the model.
  bool Any() const { return with_work_.load(std::memory_order_acquire) > 0; }
  // One has work now, or the last one ended within `memory`.
  bool About(absl::Time now, absl::Duration memory) const {
    if (Any()) return true;
    const int64_t ended = last_end_nanos_.load(std::memory_order_acquire);
    return ended != kNever && now - absl::FromUnixNanos(ended) <= memory;
  }

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
  std::atomic<int64_t> with_work_{0};
  std::atomic<int64_t> last_end_nanos_{kNever};
};

}  // namespace transerve
