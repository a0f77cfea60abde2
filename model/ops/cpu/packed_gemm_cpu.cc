// Products of a few activation rows with a pre-packed weight matrix (decoder steps). Each
// panel of 32 output features is streamed from memory once per call and reused from cache for
// every block of rows; each output element is one sequential sum over K, so a row's result
// does not depend on how many other rows are in the batch.
#include <algorithm>
#include <cstring>

#include "model/core/thread_pool.h"
#include "model/ops/cpu/cpu_ops.h"
#include "model/ops/cpu/vector_math.h"

namespace transerve::ops::cpu {
namespace {

constexpr int kWidth = PackedMatrix::kPanelWidth;
static_assert(kWidth == 2 * kLanes, "a panel is two vectors wide");

inline void StoreFloats16(float* p, Floats16 v) { std::memcpy(p, &v, sizeof(v)); }

// R rows of x (row stride k) times one panel: out[r][0..width) = x[r] · panel + bias.
// `prefetch`, when set, is the next panel: the first row block pulls it toward the cache while
// it computes, so streaming a large weight matrix does not stall on memory latency.
template <int R>
void PanelBlock(const float* x, int64_t k, const float* panel, const float* bias32, float* out,
                int64_t ldc, int width, const float* prefetch) {
  Floats16 acc0[R], acc1[R];
  const Floats16 b0 = LoadFloats16(bias32);
  const Floats16 b1 = LoadFloats16(bias32 + kLanes);
  for (int r = 0; r < R; ++r) {
    acc0[r] = b0;
    acc1[r] = b1;
  }
  for (int64_t i = 0; i < k; ++i) {
    if (prefetch != nullptr) {
      __builtin_prefetch(prefetch + i * kWidth);
      __builtin_prefetch(prefetch + i * kWidth + kLanes);
    }
    const Floats16 v0 = LoadFloats16(panel + i * kWidth);
    const Floats16 v1 = LoadFloats16(panel + i * kWidth + kLanes);
    for (int r = 0; r < R; ++r) {
      const float a = x[r * k + i];
      acc0[r] += a * v0;
      acc1[r] += a * v1;
    }
  }
  for (int r = 0; r < R; ++r) {
    if (width == kWidth) {
      StoreFloats16(out + r * ldc, acc0[r]);
      StoreFloats16(out + r * ldc + kLanes, acc1[r]);
    } else {
      float tmp[kWidth];
      StoreFloats16(tmp, acc0[r]);
      StoreFloats16(tmp + kLanes, acc1[r]);
      std::memcpy(out + r * ldc, tmp, width * sizeof(float));
    }
  }
}

}  // namespace

PackedMatrix PackMatrix(const Tensor& weight) {
  PackedMatrix p;
  p.rows = weight.dim(0);
  p.cols = weight.dim(1);
  const int64_t panels = (p.rows + kWidth - 1) / kWidth;
  p.panels = Tensor({panels, p.cols, kWidth});
  float* dst = p.panels.f32();
  std::fill(dst, dst + p.panels.numel(), 0.0f);
  const float* src = weight.f32();
  for (int64_t n = 0; n < p.rows; ++n) {
    float* panel = dst + (n / kWidth) * p.cols * kWidth + n % kWidth;
    for (int64_t i = 0; i < p.cols; ++i) panel[i * kWidth] = src[n * p.cols + i];
  }
  return p;
}

void PackedProduct(const Tensor& x, const PackedMatrix& weight, const Tensor& bias, Tensor* y) {
  const int64_t m = x.dim(0);
  const int64_t k = x.dim(1);
  const int64_t n = weight.rows;
  y->Resize({m, n});
  const int64_t panels = weight.panels.dim(0);
  const float* xs = x.f32();
  const float* packed = weight.panels.f32();
  const float* b = bias.empty() ? nullptr : bias.f32();
  float* out = y->f32();
  ThreadPool::Engine().ParallelFor(panels, [&](int64_t first, int64_t last) {
    float bias32[kWidth];
    for (int64_t p = first; p < last; ++p) {
      const int64_t col = p * kWidth;
      const int width = static_cast<int>(std::min<int64_t>(kWidth, n - col));
      std::fill(bias32, bias32 + kWidth, 0.0f);
      if (b != nullptr) std::memcpy(bias32, b + col, width * sizeof(float));
      const float* panel = packed + p * k * kWidth;
      const float* next = p + 1 < last ? panel + k * kWidth : nullptr;
      float* dst = out + col;
      int64_t r = 0;
      for (; r + 8 <= m; r += 8, next = nullptr) {
        PanelBlock<8>(xs + r * k, k, panel, bias32, dst + r * n, n, width, next);
      }
      for (; r + 4 <= m; r += 4, next = nullptr) {
        PanelBlock<4>(xs + r * k, k, panel, bias32, dst + r * n, n, width, next);
      }
      for (; r + 2 <= m; r += 2, next = nullptr) {
        PanelBlock<2>(xs + r * k, k, panel, bias32, dst + r * n, n, width, next);
      }
      for (; r < m; ++r, next = nullptr) {
        PanelBlock<1>(xs + r * k, k, panel, bias32, dst + r * n, n, width, next);
      }
    }
  });
}

}  // namespace transerve::ops::cpu
