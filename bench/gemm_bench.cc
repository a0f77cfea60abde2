// The packed-weight product kernel against OpenBLAS on the linear layers of an opus-mt-base
// model, across row counts: the measurement behind using the packed kernel for every product
// (docs/engine.md). Random data; the two paths alternate in one process, best of --repeats.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "model/core/thread_pool.h"
#include "model/ops/blas_kernel.h"
#include "model/ops/ops.h"

ABSL_FLAG(int, repeats, 40, "Timed calls per path and shape (the fastest is reported)");
ABSL_FLAG(std::string, json, "", "Write results here");

namespace transerve {
namespace {

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

int Run() {
  std::mt19937 rng(7);
  const int repeats = absl::GetFlag(FLAGS_repeats);
  // [N, K] of the base model's products: fused QKV, FFN in, FFN out.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1536, 512}, {2048, 512}, {512, 2048}};
  nlohmann::json results = nlohmann::json::array();
  std::printf("%-12s %6s %12s %12s %10s\n", "N x K", "rows", "OpenBLAS GF", "packed GF",
              "speed-up");
  for (const auto& [n, k] : shapes) {
    const Tensor weight = RandomTensor({n, k}, rng);
    const Tensor bias = RandomTensor({n}, rng);
    const ops::PackedMatrix packed = ops::PackMatrix(weight);
    for (int64_t rows : {1, 4, 12, 24, 32, 48, 64, 128, 256, 512}) {
      const Tensor x = RandomTensor({rows, k}, rng);
      Tensor y;
      double blas = 1e30, kernel = 1e30;
      // Alternate the paths so both see the same machine weather. OpenBLAS's threads spin
      // for a while after each GEMM and would steal a core from the packed kernel's pool:
      // pause before switching back (the engine itself runs no BLAS once weights are packed).
      for (int round = 0; round < 3; ++round) {
        kernel = std::min(
            kernel,
            BestSeconds([&] { ops::Linear(x, weight, bias, Activation::kIdentity, &y, &packed); },
                        repeats / 3 + 1));
        blas = std::min(
            blas, BestSeconds([&] { ops::Linear(x, weight, bias, Activation::kIdentity, &y); },
                              repeats / 3 + 1));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      const double flop = 2.0 * static_cast<double>(rows * n * k);
      std::printf("%5lld x %-4lld %6lld %12.1f %12.1f %9.2fx\n", static_cast<long long>(n),
                  static_cast<long long>(k), static_cast<long long>(rows), flop / blas / 1e9,
                  flop / kernel / 1e9, blas / kernel);
      results.push_back({{"n", n},
                         {"k", k},
                         {"rows", rows},
                         {"openblas_seconds", blas},
                         {"packed_seconds", kernel}});
    }
  }
  std::printf("threads: %d\n", ThreadPool::Engine().size());
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
