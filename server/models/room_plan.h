// Which models to unload so that another one fits the repository's budget: a pure function of
// what is loaded, unit-tested without a server (model_repository.cc acts on its answer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace transerve {

struct RepositoryBudget {
  int64_t bytes = 0;   // 0 = unbounded
  int max_models = 0;  // 0 = unbounded
};

// A loaded model that may be unloaded (not pinned, not already on its way out).
struct EvictionCandidate {
  std::string name;
  int64_t bytes = 0;
  absl::Time last_used;
  bool busy = false;  // a call holds it (queued or running)
};

// What is held now: every version in memory or being loaded, and what of it is already on its
// way out (drained or unloaded versions not yet freed).
struct RepositoryHoldings {
  int64_t bytes = 0;
  int models = 0;
  int64_t leaving_bytes = 0;
  int leaving_models = 0;
};

struct RoomPlan {
  enum class Verdict {
    kFits,   // load now
    kWait,   // unload `unload`, stop new calls on `drain`, and plan again once memory is freed
    kNever,  // it cannot fit even alone: `reason` says why
  };
  Verdict verdict = Verdict::kFits;
  std::vector<std::string> unload;  // idle: unload at once
  std::vector<std::string> drain;   // busy: new calls wait for a reload; unload once idle
  std::string reason;
};

// Room for a model of `needed` bytes. Idle candidates go first, least recently used first; busy
// ones are drained only when the idle ones are not enough. Nothing is unloaded when what is
// already leaving makes room.
RoomPlan PlanRoom(std::vector<EvictionCandidate> candidates, const RepositoryHoldings& held,
                  int64_t needed, const RepositoryBudget& budget);

}  // namespace transerve
