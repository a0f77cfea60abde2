#include "server/models/room_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace transerve {
namespace {

std::string Megabytes(int64_t bytes) {
  return absl::StrCat(static_cast<double>(bytes * 10 / (1 << 20)) / 10, " MB");
}

}  // namespace

RoomPlan PlanRoom(std::vector<EvictionCandidate> candidates, const RepositoryHoldings& held,
                  int64_t needed, const RepositoryBudget& budget) {
  RoomPlan plan;
  if (budget.bytes > 0 && needed > budget.bytes) {
    plan.verdict = RoomPlan::Verdict::kNever;
    plan.reason = absl::StrCat("it needs ", Megabytes(needed), ", more than the whole budget of ",
                               Megabytes(budget.bytes), " (--model_memory_mb)");
    return plan;
  }
  // What must still go beyond what is already leaving.
  int64_t excess_bytes =
      budget.bytes > 0 ? held.bytes - held.leaving_bytes + needed - budget.bytes : 0;
  int excess_models =
      budget.max_models > 0 ? held.models - held.leaving_models + 1 - budget.max_models : 0;
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const EvictionCandidate& a, const EvictionCandidate& b) {
                     if (a.busy != b.busy) return !a.busy;
                     return a.last_used < b.last_used;
                   });
  for (const EvictionCandidate& c : candidates) {
    if (excess_bytes <= 0 && excess_models <= 0) break;
    (c.busy ? plan.drain : plan.unload).push_back(c.name);
    excess_bytes -= c.bytes;
    excess_models -= 1;
  }
  // It fits now only when nothing has to leave first: what leaves is freed by another thread,
  // and the plan is made again then.
  const bool fits_now = (budget.bytes <= 0 || held.bytes + needed <= budget.bytes) &&
                        (budget.max_models <= 0 || held.models + 1 <= budget.max_models);
  if (!fits_now) plan.verdict = RoomPlan::Verdict::kWait;
  return plan;
}

}  // namespace transerve
