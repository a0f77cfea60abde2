// The packed-weight product kernels in every weight format, against OpenBLAS (float32) and,
// where the build found Debian's oneDNN, oneDNN's matmul in the same formats, on the products of
// an opus-mt-base model across row counts (decoder steps: 1 to 256 rows; the encoder: a batch of
// 32 sources of 25 tokens). The measurement behind the engine's kernel choice (docs/engine.md).
// Random data; every path runs in turn in one process, rounds interleaved, best of --repeats.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/onednn_matmul.h"
#include "model/core/thread_pool.h"
#include "model/ops/blas_kernel.h"
#include "model/ops/ops.h"

ABSL_FLAG(int, repeats, 12, "Timed calls per path and shape (the fastest is reported)");
ABSL_FLAG(std::string, rows, "1,4,8,16,32,64,128,256,800", "Row counts to measure");
ABSL_FLAG(std::string, shapes, "1536x512,512x512,2048x512,512x2048,58101x512",
          "Products to measure, NxK (default: opus-mt-base's fused QKV, attention out, FFN in, "
          "FFN out and vocabulary projection; NLLB-600M's are 1024x1024,4096x1024,1024x4096)");
ABSL_FLAG(std::string, json, "", "Write results here");

namespace transerve {
namespace {

using ops::WeightFormat;

Tensor RandomTensor(std::vector<int64_t> shape, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = normal(rng);
  return t;
}

template <typename F>
double BestSeconds(F&& f, int repeats) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

struct Path {
  std::string name;
  std::function<void()> run;
  double seconds = 1e30;
};

int Run() {
  std::mt19937 rng(7);
  const int repeats = absl::GetFlag(FLAGS_repeats);
  std::vector<int64_t> row_counts;
  for (absl::string_view r : absl::StrSplit(absl::GetFlag(FLAGS_rows), ',')) {
    int64_t v;
    if (absl::SimpleAtoi(r, &v)) row_counts.push_back(v);
  }
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_shapes), ',')) {
    const std::vector<absl::string_view> nk = absl::StrSplit(s, 'x');
    int64_t n, k;
    if (nk.size() != 2 || !absl::SimpleAtoi(nk[0], &n) || !absl::SimpleAtoi(nk[1], &k)) {
      std::fprintf(stderr, "--shapes: '%s' is not NxK\n", std::string(s).c_str());
      return 2;
    }
    shapes.emplace_back(n, k);
  }
  const WeightFormat formats[] = {WeightFormat::kFloat32, WeightFormat::kBFloat16,
                                  WeightFormat::kInt8};
  nlohmann::json results = nlohmann::json::array();
  bool header = false;
  for (const auto& [n, k] : shapes) {
    const Tensor weight = RandomTensor({n, k}, rng);
    const Tensor bias = RandomTensor({n}, rng);
    std::vector<ops::PackedMatrix> packed;
    for (WeightFormat f : formats) packed.push_back(ops::PackMatrix(weight, f));
    for (int64_t rows : row_counts) {
      // The vocabulary projection runs on decoder rows only.
      if (n > 8192 && rows > 256) continue;
      const Tensor x = RandomTensor({rows, k}, rng);
      Tensor y;
      std::vector<Path> paths;
      paths.push_back(
          {"openblas f32", [&] { ops::Linear(x, weight, bias, Activation::kIdentity, &y); }});
      for (size_t i = 0; i < packed.size(); ++i) {
        paths.push_back(
            {std::string("packed ") + std::string(ops::WeightFormatName(formats[i])),
             [&, i] { ops::Linear(x, Tensor(), bias, Activation::kIdentity, &y, &packed[i]); }});
      }
      std::vector<std::unique_ptr<bench::OneDnnMatmul>> onednn;
      for (WeightFormat f : formats) {
        auto m = bench::OneDnnMatmul::Create(weight, bias, f, rows);
        if (m == nullptr) continue;
        bench::OneDnnMatmul* raw = m.get();
        paths.push_back(
            {"onednn " + std::string(ops::WeightFormatName(f)), [&, raw] { raw->Run(x, &y); }});
        onednn.push_back(std::move(m));
      }
      if (!header) {
        std::printf("%-12s %5s", "N x K", "rows");
        for (const Path& p : paths) std::printf(" %15s", p.name.c_str());
        std::printf("   (GFLOP/s)\n");
        header = true;
      }
      // Rounds alternate the paths so all see the same machine weather; OpenBLAS's threads
      // spin for a while after each GEMM, so pause before the packed kernels' pool runs.
      for (int round = 0; round < 3; ++round) {
        for (Path& p : paths) {
          p.seconds = std::min(p.seconds, BestSeconds(p.run, repeats / 3 + 1));
          if (p.name == "openblas f32") std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
      const double flop = 2.0 * static_cast<double>(rows * n * k);
      std::printf("%5lld x %-4lld %6lld", static_cast<long long>(n), static_cast<long long>(k),
                  static_cast<long long>(rows));
      nlohmann::json entry{{"n", n}, {"k", k}, {"rows", rows}};
      for (const Path& p : paths) {
        std::printf(" %15.1f", flop / p.seconds / 1e9);
        entry[p.name] = p.seconds;
      }
      std::printf("\n");
      results.push_back(entry);
    }
  }
  std::printf("threads: %d; %s; %s\n", ThreadPool::Engine().size(),
              ops::CpuKernelDescription().c_str(), bench::OneDnnDescription().c_str());
  const std::string path = absl::GetFlag(FLAGS_json);
  if (!path.empty()) std::ofstream(path) << nlohmann::json{{"results", results}}.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace transerve

int main(int argc, char** argv) {
  transerve::EnsureFastBlasKernel(argv);
  absl::ParseCommandLine(argc, argv);
  return transerve::Run();
}
