// Static against continuous batching under the same closed-loop concurrent load of sentences
// with mixed source and output lengths, on the scheduler the server uses (no gRPC in the loop,
// so the comparison is the batching policy alone). Prints a table and writes JSON.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "model/ops/blas_kernel.h"
#include "server/scheduler.h"

ABSL_FLAG(std::string, model_dir, "", "Marian checkpoint (e.g. the engine benchmark's model)");
ABSL_FLAG(int, concurrency, 32, "Clients, each with one sentence in flight");
ABSL_FLAG(int, requests, 256, "Sentences per mode");
ABSL_FLAG(int, min_output, 4, "Shortest forced output length");
ABSL_FLAG(int, max_output, 96, "Longest forced output length");
ABSL_FLAG(int, max_batch_sequences, 32, "Scheduler bound on live sentences");
ABSL_FLAG(std::string, json, "", "Write results here");

namespace transerve {
namespace {

using Clock = std::chrono::steady_clock;

struct Work {
  std::vector<int32_t> source;
  int output_length;
};

// The same mixed workload for both modes: short and long sources and outputs interleaved.
std::vector<Work> MakeWork(const Translator& t, int count) {
  std::mt19937 rng(99);
  const SpecialTokens& sp = t.special_tokens();
  std::uniform_int_distribution<int32_t> token(
      1, static_cast<int32_t>(t.model().config.vocab_size - 1));
  std::uniform_int_distribution<int> source_length(4, 60);
  std::uniform_int_distribution<int> output_length(absl::GetFlag(FLAGS_min_output),
                                                   absl::GetFlag(FLAGS_max_output));
  std::vector<Work> work;
  for (int i = 0; i < count; ++i) {
    Work w;
    const int n = source_length(rng);
    while (static_cast<int>(w.source.size()) + 1 < n) {
      const int32_t id = token(rng);
      if (id != sp.pad && id != sp.eos) w.source.push_back(id);
    }
    w.source.push_back(sp.eos);
    w.output_length = output_length(rng);
    work.push_back(std::move(w));
  }
  return work;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

nlohmann::json RunMode(Translator* t, BatchingMode mode, const std::vector<Work>& work) {
  SchedulerOptions options;
  options.mode = mode;
  options.max_batch_sequences = absl::GetFlag(FLAGS_max_batch_sequences);
  Scheduler scheduler(t, options);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> tokens{0};
  std::vector<std::vector<double>> latencies(absl::GetFlag(FLAGS_concurrency));
  const auto start = Clock::now();
  std::vector<std::thread> clients;
  for (size_t c = 0; c < latencies.size(); ++c) {
    clients.emplace_back([&, c] {
      for (size_t i = next++; i < work.size(); i = next++) {
        std::promise<absl::StatusOr<SearchResult>> done;
        SentenceJob job;
        job.source_ids = work[i].source;
        job.options.beam_size = 1;
        job.options.min_length = job.options.max_length = work[i].output_length;
        job.on_done = [&done](absl::StatusOr<SearchResult> r) { done.set_value(std::move(r)); };
        const auto sent = Clock::now();
        std::vector<SentenceJob> jobs;
        jobs.push_back(std::move(job));
        if (!scheduler.Submit(std::move(jobs)).ok()) continue;
        auto result = done.get_future().get();
        latencies[c].push_back(std::chrono::duration<double>(Clock::now() - sent).count());
        if (result.ok()) tokens += static_cast<int64_t>(result->hypotheses[0].ids.size());
      }
    });
  }
  for (auto& c : clients) c.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  scheduler.Shutdown(absl::Seconds(1));
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  return {{"mode", mode == BatchingMode::kStatic ? "static" : "continuous"},
          {"sentences", all.size()},
          {"seconds", seconds},
          {"target_tokens_per_second", tokens / seconds},
          {"sentences_per_second", all.size() / seconds},
          {"latency_seconds",
           {{"p50", Percentile(all, 0.5)},
            {"p90", Percentile(all, 0.9)},
            {"p99", Percentile(all, 0.99)},
            {"max", Percentile(all, 1.0)}}}};
}

int Run() {
  TranslatorOptions topts;
  topts.model_dir = absl::GetFlag(FLAGS_model_dir);
  topts.device = "cpu";
  topts.with_tokenizer = false;
  auto translator = Translator::Create(topts);
  if (!translator.ok()) {
    std::fprintf(stderr, "%s\n", translator.status().ToString().c_str());
    return 1;
  }
  const auto work = MakeWork(**translator, absl::GetFlag(FLAGS_requests));
  nlohmann::json results = nlohmann::json::array();
  std::printf("%-11s %12s %12s %8s %8s %8s\n", "mode", "target tok/s", "sentences/s", "p50 s",
              "p90 s", "p99 s");
  // Interleaved twice so both modes see the same machine weather.
  for (int round = 0; round < 2; ++round) {
    for (BatchingMode mode : {BatchingMode::kStatic, BatchingMode::kContinuous}) {
      nlohmann::json r = RunMode(translator->get(), mode, work);
      r["round"] = round;
      std::printf(
          "%-11s %12.1f %12.2f %8.3f %8.3f %8.3f\n", r["mode"].get<std::string>().c_str(),
          r["target_tokens_per_second"].get<double>(), r["sentences_per_second"].get<double>(),
          r["latency_seconds"]["p50"].get<double>(), r["latency_seconds"]["p90"].get<double>(),
          r["latency_seconds"]["p99"].get<double>());
      results.push_back(r);
    }
  }
  const std::string path = absl::GetFlag(FLAGS_json);
  if (!path.empty()) {
    std::ofstream(path) << nlohmann::json{{"concurrency", absl::GetFlag(FLAGS_concurrency)},
                                          {"results", results}}
                               .dump(2)
                        << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace transerve

int main(int argc, char** argv) {
  transerve::EnsureFastBlasKernel(argv);
  absl::ParseCommandLine(argc, argv);
  return transerve::Run();
}
