// Engine throughput benchmark: target tokens/s of the engine at several batch sizes for greedy
// and beam search with a forced output length. On the CPU also the share of time spent in
// GEMMs, their achieved GFLOP/s and the encoder's GEMM efficiency, all against a sgemm peak
// measured in a child process; on a GPU (--device=cuda) the device and dtype instead. Prints a
// table and writes JSON. bench/engine_bench.sh runs it beside the PyTorch
// reference (bench/reference_bench.py) on the same model and inputs. --replicas=N --threads=1
// runs N translators over the one loaded model, each on its own thread and share of the batch
// (N independent workers; the GEMM columns are then not measured).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "model/ops/blas_kernel.h"
#include "model/ops/ops.h"
#include "model/translator/translator.h"

ABSL_FLAG(std::string, model_dir, "", "Marian checkpoint (tools/reference/make_random_model.py)");
ABSL_FLAG(std::string, sources_file, "",
          "JSON {\"sources\": [[ids...], ...]} (bench/reference_bench.py --write_sources); "
          "empty: random sources");
ABSL_FLAG(std::string, batch_sizes, "1,8,32", "Comma-separated batch sizes");
ABSL_FLAG(std::string, searches, "greedy,beam4", "Comma-separated: greedy, beamN");
ABSL_FLAG(int, source_length, 25, "Random source length (EOS included) without --sources_file");
ABSL_FLAG(int, target_length, 32, "Forced number of generated tokens (EOS included)");
ABSL_FLAG(int, repeats, 3, "Timed runs per configuration (the median is reported)");
ABSL_FLAG(std::string, device, "cpu", "cpu, cuda or auto");
ABSL_FLAG(std::string, dtype, "auto",
          "Weights: auto (float16 on a GPU; on the CPU int8 if the model passes a quality check "
          "against float32 at load, else bfloat16 where avx512_bf16 runs it and it passes, else "
          "float32), float32, float16 (GPU), bfloat16 or int8 (CPU; explicit ones unchecked)");
ABSL_FLAG(std::string, cpu_isa, "",
          "Lower the CPU kernels' instruction-set level: avx2, avx512, avx512_vnni or "
          "avx512_bf16 (empty: the highest this CPU has)");
ABSL_FLAG(int, threads, 0, "GEMM threads; 0 = every core");
ABSL_FLAG(int, replicas, 1,
          "Translators over the one loaded model, each on its own thread with its share of the "
          "batch (Translator::CreateReplica); with --threads=1, N independent workers");
ABSL_FLAG(bool, use_vocabulary_map, false,
          "Decode over each source's vocabulary shortlist (the model's vmap.txt)");
ABSL_FLAG(std::string, json, "", "Write results here");

namespace transerve {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Best-of-5 GFLOP/s of a square sgemm through the engine's own GEMM entry point.
double MeasureSgemmPeak(int n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> values(static_cast<size_t>(n) * n);
  for (float& v : values) v = u(rng);
  const Tensor a = Tensor::FromFloats({n, n}, values);
  const Tensor b = Tensor::FromFloats({n, n}, values);
  Tensor c;
  ops::Gemm(a, b, true, 1.0f, 0.0f, &c);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    ops::Gemm(a, b, true, 1.0f, 0.0f, &c);
    best = std::min(best, Seconds(start));
  }
  return 2.0 * n * n * n / best / 1e9;
}

// MeasureSgemmPeak in a child process: neither its 64 MB of operands nor the BLAS buffers it
// touches then count in this process's resident sizes (the packed engine calls no BLAS GEMM, so
// a server never touches them). 0 if the child cannot be run.
double MeasureSgemmPeakInChild(int n) {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return 0;
  }
  if (pid == 0) {
    close(fds[0]);
    const double peak = MeasureSgemmPeak(n);
    const bool written = write(fds[1], &peak, sizeof(peak)) == sizeof(peak);
    _exit(written ? 0 : 1);
  }
  close(fds[1]);
  double peak = 0;
  if (read(fds[0], &peak, sizeof(peak)) != sizeof(peak)) peak = 0;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return peak;
}

// A field of /proc/self/status in bytes: VmHWM (peak resident) or VmRSS (resident now).
int64_t StatusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}
int64_t PeakRssBytes() { return StatusBytes("VmHWM"); }

std::vector<std::vector<int32_t>> LoadSources(const Translator& t, int count) {
  std::vector<std::vector<int32_t>> sources;
  const std::string path = absl::GetFlag(FLAGS_sources_file);
  if (!path.empty()) {
    std::ifstream in(path);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("sources")) {
      std::cerr << "cannot read sources from " << path << "\n";
      std::exit(2);
    }
    sources = j["sources"].get<std::vector<std::vector<int32_t>>>();
  } else {
    std::mt19937 rng(1234);
    const int64_t vocab = t.model().config.vocab_size;
    const SpecialTokens& sp = t.special_tokens();
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab - 1));
    for (int i = 0; i < count; ++i) {
      std::vector<int32_t> s;
      while (static_cast<int>(s.size()) + 1 < absl::GetFlag(FLAGS_source_length)) {
        const int32_t id = token(rng);
        if (id != sp.pad && id != sp.eos) s.push_back(id);
      }
      s.push_back(sp.eos);
      sources.push_back(s);
    }
  }
  if (static_cast<int>(sources.size()) < count) {
    std::cerr << "need " << count << " sources, have " << sources.size() << "\n";
    std::exit(2);
  }
  sources.resize(static_cast<size_t>(count));
  return sources;
}

int Run() {
  TranslatorOptions topts;
  topts.model_dir = absl::GetFlag(FLAGS_model_dir);
  topts.device = absl::GetFlag(FLAGS_device);
  topts.dtype = absl::GetFlag(FLAGS_dtype);
  topts.cpu_isa = absl::GetFlag(FLAGS_cpu_isa);
  topts.num_threads = absl::GetFlag(FLAGS_threads);
  // Ids in, ids out; the shortlist reads its map by the tokenizer's pieces.
  topts.with_tokenizer = absl::GetFlag(FLAGS_use_vocabulary_map);
  const double peak = absl::GetFlag(FLAGS_device) == "cuda" ? 0 : MeasureSgemmPeakInChild(2048);
  const auto load_start = Clock::now();
  auto translator = Translator::Create(topts);
  const double load_seconds = Seconds(load_start);  // dtype=auto's quality check included
  if (!translator.ok()) {
    std::cerr << translator.status() << "\n";
    return 1;
  }
  Translator& t = **translator;
  const int replica_count = std::max(1, absl::GetFlag(FLAGS_replicas));
  std::vector<std::unique_ptr<Translator>> replicas;
  replicas.push_back(*std::move(translator));
  while (static_cast<int>(replicas.size()) < replica_count) {
    auto r = t.CreateReplica();
    if (!r.ok()) {
      std::cerr << r.status() << "\n";
      return 1;
    }
    replicas.push_back(*std::move(r));
  }
  const int64_t loaded_rss = StatusBytes("VmRSS");
  const int64_t load_peak_rss = PeakRssBytes();  // the load's own peak, before any step
  std::vector<int> batches;
  for (auto part : absl::StrSplit(absl::GetFlag(FLAGS_batch_sizes), ',')) {
    int b;
    if (absl::SimpleAtoi(part, &b)) batches.push_back(b);
  }
  std::vector<std::string> searches = absl::StrSplit(absl::GetFlag(FLAGS_searches), ',');
  const int target_length = absl::GetFlag(FLAGS_target_length);
  const int max_batch = *std::max_element(batches.begin(), batches.end());
  const auto all_sources = LoadSources(t, max_batch);

  // The GEMM counters and the sgemm peak describe the CPU's GEMMs only.
  const bool on_cpu = t.device() == Device::kCpu;
  double encoder_gflops = 0;
  if (on_cpu) {
    ops::EnableGemmCounters(true);
    // Encoder GEMM efficiency at the largest batch.
    ops::ResetGemmCounters();
    for (int i = 0; i < 3; ++i) (void)t.Encode(all_sources);
    const ops::GemmCounters enc = ops::ReadGemmCounters();
    encoder_gflops = enc.flops / enc.seconds / 1e9;
    // The counters are one process-wide record, not safe for replicas stepping at once.
    if (replica_count > 1) ops::EnableGemmCounters(false);
    std::printf("%-6s %-7s %12s %10s %11s %9s\n", "batch", "search", "target tok/s", "GEMM share",
                "GEMM GFLOP/s", "of peak");
  } else {
    std::printf("%-6s %-7s %12s %10s\n", "batch", "search", "target tok/s", "seconds");
  }

  nlohmann::json results = nlohmann::json::array();
  for (const std::string& search : searches) {
    DecodingOptions options;
    options.beam_size = search == "greedy" ? 1 : std::stoi(search.substr(4));
    options.min_length = options.max_length = target_length;
    options.use_vocabulary_map = absl::GetFlag(FLAGS_use_vocabulary_map);
    for (int batch : batches) {
      const std::vector<std::vector<int32_t>> sources(all_sources.begin(),
                                                      all_sources.begin() + batch);
      // The batch in contiguous shares, one per replica, all translated at once; the first
      // call of each is a warm-up (caches, pool, scratch sizes).
      auto translate_all = [&]() -> absl::Status {
        std::vector<absl::Status> status(replicas.size());
        std::vector<std::thread> threads;
        for (size_t i = 0; i < replicas.size(); ++i) {
          const size_t begin = sources.size() * i / replicas.size();
          const size_t end = sources.size() * (i + 1) / replicas.size();
          if (begin == end) continue;
          threads.emplace_back([&, i, begin, end] {
            auto out =
                replicas[i]->TranslateIds(std::span(sources.data() + begin, end - begin), options);
            status[i] = out.status();
          });
        }
        for (auto& thread : threads) thread.join();
        for (const absl::Status& s : status) {
          if (!s.ok()) return s;
        }
        return absl::OkStatus();
      };
      (void)translate_all();
      std::vector<double> times;
      ops::ResetGemmCounters();
      double total = 0;
      for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
        const auto start = Clock::now();
        const absl::Status s = translate_all();
        times.push_back(Seconds(start));
        total += times.back();
        if (!s.ok()) {
          std::cerr << s << "\n";
          return 1;
        }
      }
      const ops::GemmCounters g = ops::ReadGemmCounters();
      std::sort(times.begin(), times.end());
      const double median = times[times.size() / 2];
      const double tokens_per_second = static_cast<double>(batch) * target_length / median;
      nlohmann::json result{{"batch", batch},
                            {"search", search},
                            {"target_tokens_per_second", tokens_per_second},
                            {"seconds", median}};
      if (on_cpu && replica_count > 1) {
        std::printf("%-6d %-7s %12.1f %10s %12s %9s\n", batch, search.c_str(), tokens_per_second,
                    "-", "-", "-");
      } else if (on_cpu) {
        const double gemm_gflops = g.flops / g.seconds / 1e9;
        std::printf("%-6d %-7s %12.1f %9.0f%% %12.1f %8.0f%%\n", batch, search.c_str(),
                    tokens_per_second, 100 * g.seconds / total, gemm_gflops,
                    100 * gemm_gflops / peak);
        result["gemm_share"] = g.seconds / total;
        result["gemm_gflops"] = gemm_gflops;
      } else {
        std::printf("%-6d %-7s %12.1f %10.3f\n", batch, search.c_str(), tokens_per_second, median);
      }
      results.push_back(std::move(result));
    }
  }
  const std::string device =
      on_cpu ? ops::DeviceDescription(Device::kCpu)
             : "CUDA " + ops::DeviceDescription(Device::kCuda) + ", " + t.dtype();
  if (on_cpu) {
    std::printf(
        "sgemm peak (2048^3, %d threads): %.1f GFLOP/s; encoder GEMMs at batch %d: "
        "%.1f GFLOP/s = %.0f%% of peak; peak RSS %.0f MB\n",
        ops::GetNumThreads(), peak, max_batch, encoder_gflops, 100 * encoder_gflops / peak,
        PeakRssBytes() / 1e6);
    std::printf(
        "loaded (%s) in %.2f s: resident %.1f MB, of which weights %.1f MB; peak while loading "
        "%.1f MB\n",
        t.dtype().c_str(), load_seconds, loaded_rss / 1e6, t.WeightBytes() / 1e6,
        load_peak_rss / 1e6);
  }
  std::printf("%s\ndtype %s\n", device.c_str(), t.dtype_choice().c_str());
  const std::string json_path = absl::GetFlag(FLAGS_json);
  if (!json_path.empty()) {
    nlohmann::json out{{"engine", "transerve"},
                       {"device", std::string(DeviceName(t.device()))},
                       {"dtype", t.dtype()},
                       {"dtype_choice", t.dtype_choice()},
                       {"load_seconds", load_seconds},
                       {"load_peak_rss_bytes", load_peak_rss},
                       {"device_detail", device},
                       {"blas", ops::BlasDescription()},
                       {"threads", ops::GetNumThreads()},
                       {"replicas", replica_count},
                       {"peak_rss_bytes", PeakRssBytes()},
                       {"loaded_rss_bytes", loaded_rss},
                       {"weight_bytes", t.WeightBytes()},
                       {"target_length", target_length},
                       {"results", results}};
    if (on_cpu) {
      out["sgemm_peak_gflops"] = peak;
      out["encoder_gemm_gflops"] = encoder_gflops;
      out["encoder_gemm_fraction_of_peak"] = encoder_gflops / peak;
    }
    std::ofstream(json_path) << out.dump(2) << "\n";
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
