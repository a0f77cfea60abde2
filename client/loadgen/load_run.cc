#include "client/loadgen/load_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/loadgen/grpc_sender.h"

namespace transerve {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Clock::duration ToClock(absl::Duration d) {
  return std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(d));
}

// What one call carries from its send to its answer.
struct CallState {
  CallRecord record;
  std::unique_ptr<SentCall> transport;  // the protocol's state of the call
  Clock::time_point scheduled;          // latency origin: when the call was due, not when it left
  Clock::time_point sent;               // when it left (its deadline counts from here)
  bool measured = false;                // scheduled inside the window
};

class Runner {
 public:
  Runner(RequestSender* sender, const LoadOptions& options)
      : options_(options), sender_(sender), rng_(options.seed) {}

  LoadReport Run() {
    start_ = Clock::now();
    window_start_ = start_ + ToClock(options_.warmup);
    window_end_ = window_start_ + ToClock(options_.duration);
    last_measured_answer_ = window_start_;
    std::thread progress;
    if (options_.on_progress) progress = std::thread([this] { ReportProgress(); });

    if (options_.mode == LoadOptions::Mode::kClosedLoop) {
      for (int i = 0; i < options_.concurrency; ++i) Send(Clock::now());
      while (Clock::now() < window_end_) {
        std::this_thread::sleep_until(std::min(window_end_, Clock::now() + kReapEvery));
        Reap();
      }
    } else {
      SendPoissonArrivals();
    }
    stopping_.store(true);
    Drain();
    std::this_thread::sleep_for(kReapEvery);  // the last callbacks return meanwhile
    Reap();
    Reap();

    {
      std::lock_guard<std::mutex> lock(done_mu_);
      finished_ = true;
    }
    done_cv_.notify_all();
    if (progress.joinable()) progress.join();

    std::lock_guard<std::mutex> lock(mu_);
    report_.mode = options_.mode == LoadOptions::Mode::kClosedLoop ? "closed" : "open";
    report_.concurrency =
        options_.mode == LoadOptions::Mode::kClosedLoop ? options_.concurrency : 0;
    report_.rate = options_.mode == LoadOptions::Mode::kOpenLoop ? options_.rate : 0;
    report_.stream = options_.stream;
    report_.seconds = std::max(absl::ToDoubleSeconds(options_.duration),
                               SecondsBetween(window_start_, last_measured_answer_));
    return report_;
  }

 private:
  // Open loop: exponential gaps; a late sender does not move the schedule.
  void SendPoissonArrivals() {
    std::exponential_distribution<double> gap(options_.rate);
    std::mt19937_64 rng(options_.seed ^ 0x9e3779b97f4a7c15ULL);
    Clock::time_point due = start_;
    Clock::time_point last_reap = start_;
    while (true) {
      due += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
      if (due >= window_end_) break;
      std::this_thread::sleep_until(due);
      if (due - last_reap >= kReapEvery) {
        Reap();
        last_reap = due;
      }
      if (in_flight_.load() >= options_.max_outstanding) {
        if (due >= window_start_) {
          std::lock_guard<std::mutex> lock(mu_);
          ++report_.skipped;
        }
        continue;
      }
      Send(due);
    }
  }

  // Waits for the calls still in flight, cancels what is left after drain_timeout.
  void Drain() {
    std::unique_lock<std::mutex> lock(calls_mu_);
    const auto give_up = Clock::now() + ToClock(options_.drain_timeout);
    if (all_answered_.wait_until(lock, give_up, [this] { return calls_.empty(); })) return;
    // Cancelled outside the lock (an answer may arrive meanwhile); the copies keep every
    // call alive until it has been told.
    std::vector<std::shared_ptr<CallState>> late;
    for (const auto& [raw, call] : calls_) late.push_back(call);
    lock.unlock();
    for (const auto& call : late) call->transport->Cancel();
    late.clear();
    lock.lock();
    all_answered_.wait(lock, [this] { return calls_.empty(); });
  }

  void FillRequest(v1::TranslateRequest* request) {
    request->set_model(options_.model);
    *request->mutable_options() = options_.decoding;
    std::lock_guard<std::mutex> lock(input_mu_);
    const size_t n = options_.texts.size();
    for (int k = 0; k < options_.sentences_per_request; ++k) {
      const size_t i = options_.random_order ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_)
                                             : next_text_++ % n;
      request->add_texts(options_.texts[i]);
    }
  }

  void Send(Clock::time_point scheduled) {
    auto call = std::make_shared<CallState>();
    call->scheduled = scheduled;
    call->sent = Clock::now();
    call->measured = scheduled >= window_start_ && scheduled < window_end_;
    FillRequest(&call->record.request);
    call->transport = sender_->NewCall(&call->record);
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      calls_.emplace(call.get(), call);
    }
    in_flight_.fetch_add(1);
    sent_.fetch_add(1);
    if (call->measured) {
      std::lock_guard<std::mutex> lock(mu_);
      ++report_.sent;
    }
    // The callback holds no ownership: a call's state must not be destroyed inside the
    // protocol's own completion (see Reap).
    CallState* raw = call.get();
    raw->transport->Start([this, raw](const absl::Status& status) { Finish(raw, status); });
  }

  void Finish(CallState* call, const absl::Status& status) {
    const Clock::time_point now = Clock::now();
    if (status.ok()) {
      ok_.fetch_add(1);
    } else {
      errors_.fetch_add(1);
    }
    if (call->measured) {
      std::lock_guard<std::mutex> lock(mu_);
      last_measured_answer_ = std::max(last_measured_answer_, now);
      report_.answer_any_status.Record(SecondsBetween(call->sent, now));
      if (options_.keep_calls) {
        report_.calls.push_back(
            {.due_seconds = SecondsBetween(window_start_, call->scheduled),
             .latency_seconds = SecondsBetween(call->scheduled, now),
             .status = status.ok() ? "OK" : absl::StatusCodeToString(status.code())});
      }
      if (status.ok()) {
        ++report_.ok;
        report_.latency.Record(SecondsBetween(call->scheduled, now));
        if (call->record.first_chunk_seen) {
          report_.first_chunk.Record(SecondsBetween(call->scheduled, call->record.first_chunk));
        }
        report_.sentences += call->record.sentences;
        report_.source_tokens += call->record.source_tokens;
        report_.target_tokens += call->record.target_tokens;
      } else {
        ++report_.errors[absl::StatusCodeToString(status.code())];
      }
    }
    // Closed loop: the answer frees the slot for the next call.
    const bool again =
        options_.mode == LoadOptions::Mode::kClosedLoop && !stopping_.load() && now < window_end_;
    if (again) Send(now);
    in_flight_.fetch_sub(1);
    std::lock_guard<std::mutex> lock(calls_mu_);
    auto it = calls_.find(call);
    finished_calls_.push_back(std::move(it->second));
    calls_.erase(it);
    if (calls_.empty()) all_answered_.notify_all();
  }

  void ReportProgress() {
    std::unique_lock<std::mutex> lock(done_mu_);
    int64_t last_done = 0;
    Clock::time_point last = Clock::now();
    while (!done_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return finished_; })) {
      const Clock::time_point now = Clock::now();
      LoadProgress p;
      p.elapsed_seconds = SecondsBetween(start_, now);
      p.measuring = now >= window_start_;
      p.sent = sent_.load();
      p.ok = ok_.load();
      p.errors = errors_.load();
      const int64_t done = p.ok + p.errors;
      p.completions_per_second =
          static_cast<double>(done - last_done) / std::max(1e-9, SecondsBetween(last, now));
      last_done = done;
      last = now;
      options_.on_progress(p);
    }
  }

  const LoadOptions options_;
  RequestSender* sender_;

  Clock::time_point start_, window_start_, window_end_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> in_flight_{0}, sent_{0}, ok_{0}, errors_{0};

  std::mutex input_mu_;
  std::mt19937_64 rng_;
  size_t next_text_ = 0;

  std::mutex mu_;  // report_, last_measured_answer_
  LoadReport report_;
  Clock::time_point last_measured_answer_;

  // Calls in flight (for the drain), and answered calls waiting to be destroyed. A call's
  // protocol state is destroyed by Reap on this runner's own threads, never inside the
  // protocol's completion of that call (destroying a gRPC context there unreferences the call
  // twice; an HTTP worker is still inside the call's Run), and only after a full reaping
  // period, by when the sender has long returned from the callback.
  static constexpr Clock::duration kReapEvery = std::chrono::milliseconds(500);
  void Reap() {
    std::vector<std::shared_ptr<CallState>> dead;
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      dead.swap(aging_calls_);
      aging_calls_.swap(finished_calls_);
    }
  }
  std::mutex calls_mu_;
  std::unordered_map<CallState*, std::shared_ptr<CallState>> calls_;
  std::vector<std::shared_ptr<CallState>> finished_calls_;
  std::vector<std::shared_ptr<CallState>> aging_calls_;
  std::condition_variable all_answered_;

  std::mutex done_mu_;  // the progress thread's stop signal
  std::condition_variable done_cv_;
  bool finished_ = false;
};

}  // namespace

absl::StatusOr<LoadReport> RunLoad(RequestSender& sender, const LoadOptions& options) {
  if (options.texts.empty()) return absl::InvalidArgumentError("the input has no sentences");
  if (options.sentences_per_request < 1) {
    return absl::InvalidArgumentError("sentences_per_request must be at least 1");
  }
  if (options.mode == LoadOptions::Mode::kClosedLoop && options.concurrency < 1) {
    return absl::InvalidArgumentError("concurrency must be at least 1");
  }
  if (options.mode == LoadOptions::Mode::kOpenLoop && !(options.rate > 0)) {
    return absl::InvalidArgumentError("rate must be positive");
  }
  if (options.duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("duration must be positive");
  }
  if (absl::Status reachable = sender.WaitUntilReachable(options.connect_timeout);
      !reachable.ok()) {
    return reachable;
  }
  Runner runner(&sender, options);
  return runner.Run();
}

absl::StatusOr<LoadReport> RunLoad(const std::vector<std::shared_ptr<grpc::Channel>>& channels,
                                   const LoadOptions& options) {
  if (channels.empty()) return absl::InvalidArgumentError("no channel to send on");
  GrpcSender sender(
      channels,
      {.stream = options.stream, .auth_token = options.auth_token, .deadline = options.deadline});
  return RunLoad(sender, options);
}

nlohmann::json ReportJson(const LoadReport& r) {
  auto latency = [](const LatencyHistogram& h) {
    return nlohmann::json{{"count", h.count()},         {"min", h.min()},
                          {"mean", h.mean()},           {"p50", h.Percentile(50)},
                          {"p90", h.Percentile(90)},    {"p99", h.Percentile(99)},
                          {"p999", h.Percentile(99.9)}, {"max", h.max()}};
  };
  const double s = std::max(1e-9, r.seconds);
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& [code, n] : r.errors) errors[code] = n;
  nlohmann::json j{{"mode", r.mode},
                   {"stream", r.stream},
                   {"duration_seconds", r.seconds},
                   {"sent", r.sent},
                   {"ok", r.ok},
                   {"skipped", r.skipped},
                   {"errors", errors},
                   {"requests_per_second", static_cast<double>(r.ok) / s},
                   {"sentences_per_second", static_cast<double>(r.sentences) / s},
                   {"source_tokens_per_second", static_cast<double>(r.source_tokens) / s},
                   {"target_tokens_per_second", static_cast<double>(r.target_tokens) / s},
                   {"latency_seconds", latency(r.latency)},
                   {"answer_any_status_seconds", latency(r.answer_any_status)}};
  if (r.mode == "closed") {
    j["concurrency"] = r.concurrency;
  } else {
    j["rate"] = r.rate;
  }
  if (r.stream) j["time_to_first_chunk_seconds"] = latency(r.first_chunk);
  if (!r.calls.empty()) {
    nlohmann::json calls = nlohmann::json::array();
    for (const LoadReport::Call& c : r.calls) {
      calls.push_back({c.due_seconds, c.latency_seconds, c.status});
    }
    j["calls"] = std::move(calls);
  }
  return j;
}

std::string ReportText(const LoadReport& r) {
  const nlohmann::json j = ReportJson(r);
  int64_t errors = 0;
  for (const auto& [code, n] : r.errors) errors += n;
  std::string out = absl::StrFormat(
      "%s loop, %s: %.1f s measured, %d sent, %d ok, %d errors%s\n", r.mode,
      r.mode == "closed" ? absl::StrCat("concurrency ", r.concurrency)
                         : absl::StrFormat("%.2f requests/s", r.rate),
      r.seconds, r.sent, r.ok, errors,
      r.skipped > 0 ? absl::StrCat(", ", r.skipped, " skipped (too many in flight)") : "");
  absl::StrAppendFormat(
      &out,
      "throughput: %.2f requests/s, %.2f sentences/s, %.1f source tokens/s, "
      "%.1f target tokens/s\n",
      j["requests_per_second"].get<double>(), j["sentences_per_second"].get<double>(),
      j["source_tokens_per_second"].get<double>(), j["target_tokens_per_second"].get<double>());
  auto line = [&](const char* name, const LatencyHistogram& h) {
    absl::StrAppendFormat(&out,
                          "%s (ms): min %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
                          name, h.min() * 1e3, h.Percentile(50) * 1e3, h.Percentile(90) * 1e3,
                          h.Percentile(99) * 1e3, h.Percentile(99.9) * 1e3, h.max() * 1e3);
  };
  line("latency", r.latency);
  if (r.stream) line("first chunk", r.first_chunk);
  if (errors > 0) line("every answer, from its send", r.answer_any_status);
  for (const auto& [code, n] : r.errors) absl::StrAppendFormat(&out, "error %s: %d\n", code, n);
  return out;
}

}  // namespace transerve
