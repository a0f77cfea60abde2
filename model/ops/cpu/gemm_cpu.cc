// GEMM and linear layers on the CPU through OpenBLAS (its thread pool is the engine's only one).
#include <cblas.h>

#include <cstring>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "model/ops/cpu/cpu_ops.h"
#include "model/ops/cpu/vector_math.h"

extern "C" {
// Declared by OpenBLAS's cblas.h on most versions; repeated here for the Debian header variants.
char* openblas_get_corename(void);
char* openblas_get_config(void);
}

namespace transerve::ops::cpu {

void SetNumThreads(int threads) { openblas_set_num_threads(threads); }
int GetNumThreads() { return openblas_get_num_threads(); }

std::string BlasDescription() {
  return absl::StrCat(openblas_get_config(), " (kernel ", openblas_get_corename(), ", ",
                      openblas_get_num_threads(), " threads)");
}

void Gemm(const Tensor& a, const Tensor& b, bool trans_b, float alpha, float beta, Tensor* c) {
  const int64_t m = a.dim(0);
  const int64_t k = a.dim(1);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  if ((trans_b ? b.dim(1) : b.dim(0)) != k) {
    throw std::invalid_argument("Gemm: inner dimensions differ: " + a.ShapeString() + " and " +
                                b.ShapeString());
  }
  if (beta == 0.0f) {
    c->Resize({m, n});
  } else if (c->dim(0) != m || c->dim(1) != n) {
    throw std::invalid_argument("Gemm: accumulator has shape " + c->ShapeString());
  }
  if (m == 0 || n == 0) return;
  if (m == 1 && trans_b) {
    // One row (greedy decoding of a single sentence): a matrix-vector product, which OpenBLAS
    // streams through memory better than its GEMM path does.
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(n), static_cast<int>(k), alpha,
                b.f32(), static_cast<int>(k), a.f32(), 1, beta, c->f32(), 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a.f32(), static_cast<int>(k),
              b.f32(), static_cast<int>(trans_b ? k : n), beta, c->f32(), static_cast<int>(n));
}

namespace {

template <typename Fn>
void Apply(float* y, int64_t n, Fn fn) {
  for (int64_t i = 0; i < n; ++i) y[i] = fn(y[i]);
}

}  // namespace

void BroadcastRows(const Tensor& row, int64_t rows, Tensor* y) {
  const int64_t n = row.numel();
  y->Resize({rows, n});
  for (int64_t i = 0; i < rows; ++i) std::memcpy(y->f32() + i * n, row.f32(), n * sizeof(float));
}

void Activate(Activation activation, Tensor* y) { ActivateSpan(activation, y->f32(), y->numel()); }

void ActivateSpan(Activation activation, float* out, int64_t n) {
  switch (activation) {
    case Activation::kIdentity:
      break;
    case Activation::kSwish: {
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes) {
        const Floats16 v = Swish16(LoadFloats16(out + i));
        std::memcpy(out + i, &v, sizeof(v));
      }
      Apply(out + i, n - i, [](float v) { return Swish(v); });
      break;
    }
    case Activation::kRelu:
      Apply(out, n, [](float v) { return v > 0.0f ? v : 0.0f; });
      break;
    case Activation::kGelu:
      Apply(out, n, [](float v) { return Gelu(v); });
      break;
    case Activation::kGeluTanh:
      Apply(out, n, [](float v) { return GeluTanh(v); });
      break;
  }
}

}  // namespace transerve::ops::cpu
