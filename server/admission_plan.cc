#include "server/admission_plan.h"

#include <algorithm>

namespace transerve {

AdmissionPlan PlanAdmission(const AdmissionState& state, const AdmissionPolicy& policy) {
  const int64_t queued = static_cast<int64_t>(state.queue.size());
  const int64_t live = static_cast<int64_t>(state.live_headroom_blocks.size());
  if (queued == 0) return {};
  if (live > 0 && policy.mode == BatchingMode::kStatic) {
    return {.stop = AdmissionStop::kStaticBatchRunning};
  }
  if (live > 0 && state.kv_pressure) return {.stop = AdmissionStop::kKvPressure};

  // At least one live sentence whatever the policy says, or nothing would ever run.
  const int64_t room = std::max<int64_t>(0, std::max(1, policy.max_batch_sequences) - live);
  if (live > 0) {
    // Wait for a group worth an encoder call, unless the oldest has waited long enough.
    const int64_t group =
        std::min<int64_t>(std::max(1, policy.admission_group), policy.max_batch_sequences);
    const bool group_ready = std::min(room, queued) >= group;
    const bool waited = state.steps - state.queue.front().queued_at_step >=
                        static_cast<int64_t>(policy.max_admission_wait_steps);
    if (!group_ready && !waited) return {.stop = AdmissionStop::kWaitingForGroup};
  }

  int64_t kv_committed = state.blocks_in_use;
  for (int64_t headroom : state.live_headroom_blocks) kv_committed += headroom;
  AdmissionPlan plan;
  int64_t tokens = 0;
  for (const QueuedSentence& next : state.queue) {
    if (plan.admit == room) {
      plan.stop = AdmissionStop::kSequences;
      break;
    }
    const bool first = plan.admit == 0 && live == 0;  // always admissible: no starvation
    if (!first) {
      // A sentence longer than max_batch_tokens is admitted as a batch of its own.
      if (plan.admit > 0 && tokens + next.source_tokens > policy.max_batch_tokens) {
        plan.stop = AdmissionStop::kTokens;
        break;
      }
      if (state.capacity_blocks > 0 &&
          kv_committed + next.headroom_blocks > state.capacity_blocks) {
        plan.stop = AdmissionStop::kKvCache;
        break;
      }
    }
    tokens += next.source_tokens;
    kv_committed += next.headroom_blocks;
    ++plan.admit;
  }
  return plan;
}

bool IsSmallRequest(const AdmissionPolicy& policy, int64_t rows) {
  return policy.max_request_live > 0 && rows <= policy.max_request_live;
}

int64_t RequestLiveLimit(const AdmissionPolicy& policy, bool small_requests_about) {
  const int64_t batch = std::max(1, policy.max_batch_sequences);
  if (!small_requests_about || policy.max_request_live <= 0) return batch;
  return std::min<int64_t>(policy.max_request_live, batch);
}

bool IsBulkRequest(const AdmissionPolicy& policy, bool small, int64_t queued_rows) {
  return policy.max_request_live > 0 && !small && queued_rows > policy.max_request_live;
}

std::optional<size_t> PlanPreemption(size_t live_sentences) {
  if (live_sentences < 2) return std::nullopt;
  return live_sentences - 1;
}

}  // namespace transerve
