// How the load generator's calls travel: one RequestSender per protocol (grpc_sender.h,
// http_sender.h), so the load loop (load_run.h) is the same whatever the wire.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

// One call's request and what its answer brought, filled in by the sender.
struct CallRecord {
  v1::TranslateRequest request;   // model, options, texts; the auth token and deadline are the
                                  // sender's
  bool first_chunk_seen = false;  // streaming: when the first message arrived
  std::chrono::steady_clock::time_point first_chunk;
  int64_t sentences = 0;  // translations in the answer
  int64_t source_tokens = 0;
  int64_t target_tokens = 0;

  void Count(const v1::Translation& t) {
    ++sentences;
    source_tokens += t.source_token_count();
    target_tokens += t.target_token_count();
  }
};

// One call over some protocol. Its owner destroys it only after `done` has returned, and never
// from inside `done`.
class SentCall {
 public:
  virtual ~SentCall() = default;
  // Sends the call; `done` runs exactly once, on any thread, with the call's status (gRPC's
  // codes whatever the protocol).
  virtual void Start(std::function<void(const absl::Status&)> done) = 0;
  // From any thread, before or after Start: the call ends soon, CANCELLED unless it had already
  // ended.
  virtual void Cancel() = 0;
};

class RequestSender {
 public:
  virtual ~RequestSender() = default;
  // OK once the server can be reached; UNAVAILABLE after `timeout`.
  virtual absl::Status WaitUntilReachable(absl::Duration timeout) = 0;
  // A call that fills `record` (which outlives it).
  virtual std::unique_ptr<SentCall> NewCall(CallRecord* record) = 0;
};

}  // namespace transerve
