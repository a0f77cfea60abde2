// One load-test run against a transerve server: closed loop (a fixed number of calls in
// flight) or open loop (Poisson arrivals at a fixed rate, latency measured from each call's
// scheduled send time, so a slow server cannot hide its queue: no coordinated omission).
// The calls go through a RequestSender (gRPC or HTTP); the caller's thread only schedules.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/loadgen/latency_histogram.h"
#include "client/loadgen/request_sender.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

struct LoadProgress {
  double elapsed_seconds = 0;  // since the run started (warm-up included)
  bool measuring = false;      // past the warm-up
  int64_t sent = 0;
  int64_t ok = 0;
  int64_t errors = 0;
  double completions_per_second = 0;  // over the last report interval
};

struct LoadOptions {
  enum class Mode { kClosedLoop, kOpenLoop };
  Mode mode = Mode::kClosedLoop;
  int concurrency = 1;                           // closed loop: calls in flight
  double rate = 1;                               // open loop: requests per second, exponential gaps
  absl::Duration warmup = absl::ZeroDuration();  // sent and answered, not counted
  absl::Duration duration = absl::Seconds(10);   // the measured window
  // After the window: how long calls still in flight may take before they are cancelled
  // (they then count as CANCELLED).
  absl::Duration drain_timeout = absl::Seconds(30);
  absl::Duration connect_timeout = absl::Seconds(5);

  std::vector<std::string> texts;  // the input, one sentence each
  bool random_order = false;       // else in order, wrapping around
  uint64_t seed = 1;
  int sentences_per_request = 1;
  std::string model;
  v1::DecodingOptions decoding;
  absl::Duration deadline = absl::ZeroDuration();  // per call; zero: none
  bool stream = false;                             // TranslateStream; time to first chunk too
  std::string auth_token;                          // sent as "authorization: Bearer ..."
  // Open loop: calls in flight beyond this are not sent but counted as skipped, so a dead
  // slow server cannot exhaust the client's memory.
  int64_t max_outstanding = 100000;
  // Keep every measured call in LoadReport::calls (a timeline for tails: when they happen and
  // what was running then), not only the histograms.
  bool keep_calls = false;

  // Called about once a second from a helper thread, when set.
  std::function<void(const LoadProgress&)> on_progress;
};

struct LoadReport {
  std::string mode;  // "closed" or "open"
  int concurrency = 0;
  double rate = 0;
  bool stream = false;
  double seconds = 0;  // the measured window, stretched to its last answer
  int64_t sent = 0;    // calls sent inside the window
  int64_t ok = 0;
  int64_t skipped = 0;                    // open loop: not sent (max_outstanding)
  std::map<std::string, int64_t> errors;  // by gRPC status name
  int64_t sentences = 0;                  // translated, in OK answers
  int64_t source_tokens = 0;
  int64_t target_tokens = 0;
  LatencyHistogram latency;      // OK calls, from scheduled send to final answer
  LatencyHistogram first_chunk;  // streaming: to the first chunk
  // Every call, whatever its status, from when it left to its answer: what a deadline bounds.
  LatencyHistogram answer_any_status;
  // With LoadOptions::keep_calls: every measured call in the order answered.
  struct Call {
    double due_seconds = 0;      // when it was due, from the window's start
    double latency_seconds = 0;  // from when it was due to its answer
    std::string status;          // "OK" or the gRPC status name
  };
  std::vector<Call> calls;
};

// Runs one load test through `sender` (whatever protocol it speaks). UNAVAILABLE when the
// server cannot be reached within connect_timeout; INVALID_ARGUMENT for unusable options.
// `stream`, `auth_token` and `deadline` are the sender's to apply.
absl::StatusOr<LoadReport> RunLoad(RequestSender& sender, const LoadOptions& options);

// The same over gRPC `channels` (calls go round-robin; several channels make several
// connections).
absl::StatusOr<LoadReport> RunLoad(const std::vector<std::shared_ptr<grpc::Channel>>& channels,
                                   const LoadOptions& options);

// The report as JSON: ok, errors, requests_per_second, target_tokens_per_second,
// latency_seconds {min, mean, p50, p90, p99, p999, max} and the rest of the report; with kept
// calls, "calls": [[due_seconds, latency_seconds, status], ...].
nlohmann::json ReportJson(const LoadReport& report);
// A human-readable multi-line summary.
std::string ReportText(const LoadReport& report);

}  // namespace transerve
