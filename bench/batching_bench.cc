// Static against continuous batching under the same closed-loop concurrent load of sentences
// with mixed source and output lengths, on the scheduler the server uses (no gRPC in the loop,
// so the comparison is the batching policy alone). Prints a table and writes JSON.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <numeric>
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
ABSL_FLAG(std::string, lengths, "uniform",
          "Sentence lengths: 'uniform' (sources 4-60 ids, outputs min_output..max_output) or "
          "'corpus' (log-normal, the shape of the corpus test set; see BENCHMARKS.md)");
ABSL_FLAG(int, min_output, 4, "Shortest forced output length (uniform)");
ABSL_FLAG(int, max_output, 96, "Longest forced output length (uniform)");
ABSL_FLAG(int, max_batch_sequences, 32, "Scheduler bound on live sentences");
ABSL_FLAG(int, admission_group, transerve::AdmissionPolicy{}.admission_group,
          "Continuous mode: sentences admitted together while others are live");
ABSL_FLAG(int, max_admission_wait_steps, transerve::AdmissionPolicy{}.max_admission_wait_steps,
          "Continuous mode: decoder steps the oldest queued sentence may wait for a group");
ABSL_FLAG(int, rounds, 2, "Interleaved static/continuous rounds");
ABSL_FLAG(std::string, json, "", "Write results here");

namespace transerve {
namespace {

using Clock = std::chrono::steady_clock;

struct Work {
  std::vector<int32_t> source;
  int output_length;
};

struct Lengths {
  int source;  // ids, EOS included
  int output;  // forced output length
};

// Log-normal lengths with the shape measured on the corpus test set (tools/corpus, 1,000 pairs,
// our 8k SentencePiece vocabularies): log-length mean 2.47 (source) and 2.55 (target), standard
// deviation 0.60 on both sides; source and target lengths move together.
Lengths CorpusShapedLengths(std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  const double z = normal(rng);
  const double noise = 0.15 * normal(rng);
  auto clamp = [](double v) { return std::clamp(static_cast<int>(std::lround(v)), 2, 200); };
  return {clamp(std::exp(2.47 + 0.60 * z)), clamp(std::exp(2.55 + 0.60 * z + noise))};
}

// The same mixed workload for both modes: short and long sources and outputs interleaved.
std::vector<Work> MakeWork(const Translator& t, int count) {
  std::mt19937 rng(99);
  const SpecialTokens& sp = t.special_tokens();
  std::uniform_int_distribution<int32_t> token(
      1, static_cast<int32_t>(t.model().config.vocab_size - 1));
  std::uniform_int_distribution<int> uniform_source(4, 60);
  std::uniform_int_distribution<int> uniform_output(absl::GetFlag(FLAGS_min_output),
                                                    absl::GetFlag(FLAGS_max_output));
  const bool corpus = absl::GetFlag(FLAGS_lengths) == "corpus";
  std::vector<Work> work;
  for (int i = 0; i < count; ++i) {
    const Lengths lengths =
        corpus ? CorpusShapedLengths(rng) : Lengths{uniform_source(rng), uniform_output(rng)};
    Work w;
    while (static_cast<int>(w.source.size()) + 1 < lengths.source) {
      const int32_t id = token(rng);
      if (id != sp.pad && id != sp.eos) w.source.push_back(id);
    }
    w.source.push_back(sp.eos);
    w.output_length = lengths.output;
    work.push_back(std::move(w));
  }
  return work;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// Decoder step cost against the rows in the step: what decides how much continuous batching can
// win (a step's fixed cost is what a half-empty static batch wastes).
class StepRecorder : public Scheduler::Observer {
 public:
  void OnStep(int rows, double seconds) override { Add(rows, 1, seconds); }
  void OnBatch(int sequences, int, double, double seconds) override {
    ++encoder_batches_;
    encoded_sentences_ += sequences;
    encoder_seconds_ += seconds;
  }
  int64_t encoder_batches() const { return encoder_batches_; }
  int64_t encoded_sentences() const { return encoded_sentences_; }
  double encoder_seconds() const { return encoder_seconds_; }
  double decoder_seconds() const {
    return std::accumulate(seconds_by_rows_.begin(), seconds_by_rows_.end(), 0.0);
  }

  void MergeInto(StepRecorder* total) const {
    for (size_t rows = 0; rows < steps_by_rows_.size(); ++rows) {
      total->Add(static_cast<int>(rows), steps_by_rows_[rows], seconds_by_rows_[rows]);
    }
  }
  int64_t steps() const {
    return std::accumulate(steps_by_rows_.begin(), steps_by_rows_.end(), int64_t{0});
  }
  double MeanRows() const {
    double rows = 0;
    for (size_t r = 0; r < steps_by_rows_.size(); ++r) {
      rows += static_cast<double>(r) * static_cast<double>(steps_by_rows_[r]);
    }
    return steps() > 0 ? rows / static_cast<double>(steps()) : 0.0;
  }
  struct Bucket {
    int64_t steps = 0;
    double mean_rows = 0;
    double mean_seconds = 0;
  };
  // Steps whose row count lies in [lo, hi].
  Bucket Range(int lo, int hi) const {
    Bucket bucket;
    double rows = 0;
    double seconds = 0;
    for (int r = lo; r <= hi && r < static_cast<int>(steps_by_rows_.size()); ++r) {
      bucket.steps += steps_by_rows_[r];
      rows += static_cast<double>(r) * static_cast<double>(steps_by_rows_[r]);
      seconds += seconds_by_rows_[r];
    }
    if (bucket.steps > 0) {
      bucket.mean_rows = rows / static_cast<double>(bucket.steps);
      bucket.mean_seconds = seconds / static_cast<double>(bucket.steps);
    }
    return bucket;
  }

 private:
  void Add(int rows, int64_t steps, double seconds) {
    if (static_cast<size_t>(rows) >= steps_by_rows_.size()) {
      steps_by_rows_.resize(rows + 1);
      seconds_by_rows_.resize(rows + 1);
    }
    steps_by_rows_[rows] += steps;
    seconds_by_rows_[rows] += seconds;
  }

  std::vector<int64_t> steps_by_rows_;
  std::vector<double> seconds_by_rows_;
  int64_t encoder_batches_ = 0;
  int64_t encoded_sentences_ = 0;
  double encoder_seconds_ = 0;
};

nlohmann::json RunMode(Translator* t, BatchingMode mode, const std::vector<Work>& work,
                       StepRecorder* all_steps) {
  StepRecorder steps;
  SchedulerOptions options;
  options.admission.mode = mode;
  options.admission.max_batch_sequences = absl::GetFlag(FLAGS_max_batch_sequences);
  options.admission.admission_group = absl::GetFlag(FLAGS_admission_group);
  options.admission.max_admission_wait_steps = absl::GetFlag(FLAGS_max_admission_wait_steps);
  Scheduler scheduler(t, options);
  scheduler.SetObserver(&steps);
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
  if (const absl::Status stopped = scheduler.Shutdown(absl::Seconds(1)); !stopped.ok()) {
    std::fprintf(stderr, "batching_bench: %s\n", std::string(stopped.message()).c_str());
  }
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  steps.MergeInto(all_steps);
  return {{"mode", mode == BatchingMode::kStatic ? "static" : "continuous"},
          {"sentences", all.size()},
          {"decoder_steps", steps.steps()},
          {"mean_rows_per_step", steps.MeanRows()},
          {"decoder_seconds", steps.decoder_seconds()},
          {"encoder_batches", steps.encoder_batches()},
          {"mean_sentences_per_encoder_batch",
           static_cast<double>(steps.encoded_sentences()) /
               static_cast<double>(std::max<int64_t>(1, steps.encoder_batches()))},
          {"encoder_seconds", steps.encoder_seconds()},
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
  StepRecorder all_steps;
  std::printf("lengths: %s, %zu sentences, %d clients\n", absl::GetFlag(FLAGS_lengths).c_str(),
              work.size(), absl::GetFlag(FLAGS_concurrency));
  std::printf("%-5s %-11s %12s %12s %10s %9s %9s %9s %8s %8s %8s\n", "round", "mode",
              "target tok/s", "sentences/s", "rows/step", "decode s", "encodes", "encode s",
              "p50 s", "p90 s", "p99 s");
  // Interleaved so both modes see the same machine weather.
  for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (BatchingMode mode : {BatchingMode::kStatic, BatchingMode::kContinuous}) {
      nlohmann::json r = RunMode(translator->get(), mode, work, &all_steps);
      r["round"] = round;
      std::printf("%-5d %-11s %12.1f %12.2f %10.1f %9.2f %9lld %9.2f %8.3f %8.3f %8.3f\n", round,
                  r["mode"].get<std::string>().c_str(), r["target_tokens_per_second"].get<double>(),
                  r["sentences_per_second"].get<double>(), r["mean_rows_per_step"].get<double>(),
                  r["decoder_seconds"].get<double>(),
                  static_cast<long long>(r["encoder_batches"].get<int64_t>()),
                  r["encoder_seconds"].get<double>(), r["latency_seconds"]["p50"].get<double>(),
                  r["latency_seconds"]["p90"].get<double>(),
                  r["latency_seconds"]["p99"].get<double>());
      results.push_back(r);
    }
  }
  // What a step costs against its rows, both modes together.
  nlohmann::json step_cost = nlohmann::json::array();
  std::printf("\n%-9s %8s %12s %14s\n", "rows", "steps", "ms/step", "ms/step/row");
  for (auto [lo, hi] : std::vector<std::pair<int, int>>{
           {1, 1}, {2, 4}, {5, 8}, {9, 16}, {17, 24}, {25, 32}, {33, 64}, {65, 1 << 20}}) {
    const StepRecorder::Bucket bucket = all_steps.Range(lo, hi);
    if (bucket.steps == 0) continue;
    std::printf("%4d-%-4d %8lld %12.2f %14.3f\n", lo, std::min(hi, 9999),
                static_cast<long long>(bucket.steps), bucket.mean_seconds * 1e3,
                bucket.mean_seconds * 1e3 / bucket.mean_rows);
    step_cost.push_back({{"rows_min", lo},
                         {"rows_max", hi},
                         {"mean_rows", bucket.mean_rows},
                         {"steps", bucket.steps},
                         {"seconds", bucket.mean_seconds}});
  }
  const std::string path = absl::GetFlag(FLAGS_json);
  if (!path.empty()) {
    std::ofstream(path) << nlohmann::json{{"lengths", absl::GetFlag(FLAGS_lengths)},
                                          {"concurrency", absl::GetFlag(FLAGS_concurrency)},
                                          {"results", results},
                                          {"step_cost", step_cost}}
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
