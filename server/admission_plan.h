// The scheduler's admission and preemption decisions as pure functions of plain numbers, so each
// rule (server/scheduler.h, "KV cache policy" and SchedulerOptions) is written once and tested
// without a model. The scheduler gathers the numbers, asks, and applies the answer.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace transerve {

enum class BatchingMode { kContinuous, kStatic };

// The admission side of SchedulerOptions (SchedulerOptions::admission): how many queued
// sentences join the running batch, and when.
struct AdmissionPolicy {
  BatchingMode mode = BatchingMode::kContinuous;
  // Live sentences (a beam-4 sentence counts once; its beams are rows).
  int max_batch_sequences = 64;
  // Source tokens admitted in one encoder batch (a single longer sentence is still admitted
  // alone, so it never starves).
  int max_batch_tokens = 8192;
  // Continuous mode, while sentences are live: queued sentences are admitted once at least
  // this many can go together (room and queue allowing), or once the oldest has waited
  // max_admission_wait_steps decoder steps. An encoder call costs a fixed amount (every encoder
  // weight is read once per call) on top of its tokens, so admitting one sentence per step
  // spends far more on encoding than a group does. 1: admit whatever is queued every step.
  int admission_group = 1;
  int max_admission_wait_steps = 4;
  // Rows, not sentences: a beam-4 sentence is 4 decoder rows. While a small request (one of at
  // most this many rows: an interactive call) has sentences queued or live, or had within the
  // last small_request_memory_seconds, a larger one holds at most this many live rows, and
  // always one sentence (0: no bound). Every live row makes each decoder step slower for
  // everybody in the batch, so a large document must not fill the batch while callers wait on
  // its steps; the memory keeps it from refilling the batch in every short gap between calls,
  // which the next call would then wait on. Alone, or beside other large requests (which share
  // the batch in turns), it may fill it (docs/server.md, "Large documents").
  int max_request_live = 4;
  double small_request_memory_seconds = 1.0;
};

// A sentence waiting in the queue.
struct QueuedSentence {
  int64_t source_tokens = 0;
  int64_t headroom_blocks = 0;  // Translator::KvHeadroomBlocks of its options
  int64_t queued_at_step = 0;   // the decoder step count when the scheduler took it
};

// What the scheduler knows between two decoder steps.
struct AdmissionState {
  // Front (oldest) first. Only its first max(1, max_batch_sequences) entries are ever read (no
  // more can be admitted at once), so a caller with a deep queue passes just those.
  std::span<const QueuedSentence> queue;
  std::span<const int64_t> live_headroom_blocks;  // one per live sentence, admission order
  int64_t blocks_in_use = 0;                      // KV blocks held now (real lengths)
  int64_t capacity_blocks = 0;                    // the pool's bound; 0: unbounded or unknown
  int64_t steps = 0;                              // decoder steps run so far
  bool kv_pressure = false;  // a preemption happened and no live sentence has left since
};

// The rule that ended admission (kNone: the whole queue goes).
enum class AdmissionStop {
  kNone,
  kStaticBatchRunning,  // static mode admits only when nothing is live
  kKvPressure,          // nothing until a live sentence leaves
  kWaitingForGroup,     // too few for an encoder call, and the oldest has not waited enough
  kSequences,           // max_batch_sequences live
  kTokens,              // the next sentence would pass max_batch_tokens
  kKvCache,             // the next sentence's headroom does not fit the pool
};

struct AdmissionPlan {
  int64_t admit = 0;  // how many sentences from the front of the queue to encode now
  AdmissionStop stop = AdmissionStop::kNone;
};

// FIFO: admission stops at the first sentence that does not fit, so a long one is never
// overtaken forever. The first sentence is always admissible when nothing is live (one longer
// than max_batch_tokens, or than the pool's room, then runs alone), so nothing waits forever.
AdmissionPlan PlanAdmission(const AdmissionState& state, const AdmissionPolicy& policy);

// Whether a request of `rows` decoder rows (its sentences' beams) is small
// (AdmissionPolicy::max_request_live).
bool IsSmallRequest(const AdmissionPolicy& policy, int64_t rows);
// The most live rows one large request may hold now: AdmissionPolicy::max_request_live while
// small requests are about (`small_requests_about`: one has work, or had within the policy's
// memory), else max_batch_sequences. (A small request never holds more than the bound anyway.)
int64_t RequestLiveLimit(const AdmissionPolicy& policy, bool small_requests_about);
// Whether a request is bulk, whose live sentences sit out most steps while a small request has
// work (server/scheduler.h, kBulkStepEvery): a large one with more rows still queued than
// max_request_live. Near its end (few queued) it steps freely again.
bool IsBulkRequest(const AdmissionPolicy& policy, bool small, int64_t queued_rows);

// The live sentence (an index in admission order) to send back to the queue when a step finds
// the KV pool full: the newest, so the oldest keep their progress and the loop always moves.
// nullopt when only one is live: it alone does not fit, and is answered RESOURCE_EXHAUSTED.
std::optional<size_t> PlanPreemption(size_t live_sentences);

}  // namespace transerve
