// Products of activation rows with a pre-packed weight matrix, in any weight format. The
// weights are packed (and rounded or quantized) once at load; the activations are converted
// per call, each row on its own (its own int8 scale), so a row's result does not depend on the
// other rows. Each panel of 32 output features is streamed from memory once per call, reused
// from cache for every block of rows, and finished (bias, activation) while it is in cache.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/core/half.h"
#include "model/core/thread_pool.h"
#include "model/ops/cpu/cpu_isa.h"
#include "model/ops/cpu/cpu_ops.h"
#include "model/ops/cpu/packed_panels.h"
#include "model/ops/cpu/vector_math.h"

namespace transerve::ops::cpu {
namespace {

constexpr int kWidth = PackedMatrix::kPanelWidth;

int64_t RoundUp(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// The nearest bfloat16, with denormals flushed to zero as vdpbf16ps reads them (so the levels
// that widen bfloat16 to float give its bits).
uint16_t ToBf16(float v) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  if ((bits & 0x7f800000u) == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000u);
  return FloatToBFloat16(v);
}

float MaxAbs(const float* v, int64_t n) {
  Floats16 lanes = Splat(0.0f);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Floats16 a = LoadFloats16(v + i);
    a = a < 0.0f ? -a : a;
    lanes = a > lanes ? a : lanes;
  }
  float m = 0.0f;
  for (int j = 0; j < kLanes; ++j) m = std::max(m, lanes[j]);
  for (; i < n; ++i) m = std::max(m, std::fabs(v[i]));
  return m;
}

// q = round(v * 127 / max|v|), so |q| <= 127 and q * scale ~ v; scale 0 for an all-zero row.
float Int8Scale(float max_abs) { return max_abs / 127.0f; }
float Int8Inverse(float max_abs) { return max_abs > 0.0f ? 127.0f / max_abs : 0.0f; }
int32_t QuantizeInt8(float v, float inverse) {
  return static_cast<int32_t>(std::clamp(std::nearbyint(v * inverse), -127.0f, 127.0f));
}

// Calls pack(panel, first_row, last_row) for each panel of kWidth output features, on the
// engine's threads: a panel (its padding included) is written by one call only, so loading a
// model packs on every core.
template <typename PackPanel>
void ForPanels(const PackedMatrix& p, const PackPanel& pack) {
  const int64_t panels = p.panels.dim(0);
  ThreadPool::Engine().ParallelFor(panels, [&](int64_t first, int64_t last) {
    for (int64_t panel = first; panel < last; ++panel) {
      pack(panel, panel * kWidth, std::min(p.rows, (panel + 1) * kWidth));
    }
  });
}

void PackFloat32(const float* src, PackedMatrix* p) {
  ForPanels(*p, [&](int64_t panel, int64_t first_row, int64_t last_row) {
    float* dst = p->panels.f32() + panel * p->depth * kWidth;
    std::fill(dst, dst + p->depth * kWidth, 0.0f);
    for (int64_t n = first_row; n < last_row; ++n) {
      float* lane = dst + n % kWidth;
      const float* row = src + n * p->cols;
      for (int64_t i = 0; i < p->cols; ++i) lane[i * kWidth] = row[i];
    }
  });
}

void PackBFloat16(const float* src, PackedMatrix* p) {
  ForPanels(*p, [&](int64_t panel, int64_t first_row, int64_t last_row) {
    uint16_t* dst = p->panels.data<uint16_t>() + panel * p->depth * kWidth;
    std::fill(dst, dst + p->depth * kWidth, uint16_t{0});
    for (int64_t n = first_row; n < last_row; ++n) {
      uint16_t* lane = dst + (n % kWidth) * 2;
      const float* row = src + n * p->cols;
      for (int64_t i = 0; i < p->cols; ++i) lane[(i / 2) * 2 * kWidth + i % 2] = ToBf16(row[i]);
    }
  });
}

void PackInt8(const float* src, PackedMatrix* p) {
  float* scales = p->scales.f32();
  int32_t* sums = p->column_sums.data<int32_t>();
  ForPanels(*p, [&](int64_t panel, int64_t first_row, int64_t last_row) {
    int8_t* dst = p->panels.data<int8_t>() + panel * p->depth * kWidth;
    std::fill(dst, dst + p->depth * kWidth, int8_t{0});
    std::fill(scales + panel * kWidth, scales + (panel + 1) * kWidth, 0.0f);
    std::fill(sums + panel * kWidth, sums + (panel + 1) * kWidth, 0);
    // One row quantized contiguously (a loop that vectorises), then moved in quads to its lane.
    std::vector<int8_t> quantized(static_cast<size_t>(p->depth), 0);
    for (int64_t n = first_row; n < last_row; ++n) {
      const float* row = src + n * p->cols;
      const float max_abs = MaxAbs(row, p->cols);
      const float inverse = Int8Inverse(max_abs);
      scales[n] = Int8Scale(max_abs);
      int32_t sum = 0;
      for (int64_t i = 0; i < p->cols; ++i) {
        const int32_t q = QuantizeInt8(row[i], inverse);
        quantized[static_cast<size_t>(i)] = static_cast<int8_t>(q);
        sum += q;
      }
      sums[n] = sum;
      int8_t* lane = dst + (n % kWidth) * 4;
      for (int64_t quad = 0; quad < p->depth / 4; ++quad) {
        std::memcpy(lane + quad * 4 * kWidth, quantized.data() + quad * 4, 4);
      }
    }
  });
}

// The per-call conversions of the activation rows, kept per calling thread (each model's
// scheduler loop is one) so decode steps reuse their memory.
struct ActivationScratch {
  std::vector<uint16_t> bf16;
  std::vector<int16_t> int16;
  std::vector<uint8_t> bytes;
  std::vector<float> scales;
};
ActivationScratch& Scratch() {
  thread_local ActivationScratch scratch;
  return scratch;
}

// Runs fn(first, last) over the rows, on the engine's threads when there is enough work to pay
// for waking them.
template <typename Fn>
void ForRows(int64_t m, int64_t k, const Fn& fn) {
  constexpr int64_t kParallelElements = 1 << 15;
  if (m * k < kParallelElements) {
    fn(0, m);
    return;
  }
  ThreadPool::Engine().ParallelFor(m, fn);
}

// Rows converted into the kernels' step-major layout, [depth/kGroup][m][kGroup] of Q, every
// element written, padding included. convert(r, q) writes row r's depth values contiguously
// into q (so its loop vectorises); then, a block of rows at a time, each group is moved to its
// place whole, group by group, so that the stores run along the layout's lines.
template <typename Q, int kGroup, typename Convert>
void InterleaveRows(int64_t m, int64_t k, int64_t depth, Q* dst, const Convert& convert) {
  constexpr int64_t kBlockRows = 16;
  ForRows(m, k, [&](int64_t first, int64_t last) {
    // Locals, not the closure's references: the narrow stores below may alias those, which
    // would reload them for every group.
    const int64_t rows = m, groups = depth / kGroup, stride = depth;
    Q* const out = dst;
    thread_local std::vector<Q> block;
    block.resize(static_cast<size_t>(kBlockRows * depth));
    Q* const converted = block.data();
    for (int64_t r0 = first; r0 < last; r0 += kBlockRows) {
      const int64_t n = std::min(kBlockRows, last - r0);
      for (int64_t i = 0; i < n; ++i) convert(r0 + i, converted + i * stride);
      for (int64_t g = 0; g < groups; ++g) {
        Q* line = out + (g * rows + r0) * kGroup;
        for (int64_t i = 0; i < n; ++i) {
          std::memcpy(line + i * kGroup, converted + i * stride + g * kGroup, kGroup * sizeof(Q));
        }
      }
    }
  });
}

// One row's values converted into q[0, depth), [k, depth) the padding. Free functions, so that
// their bounds are locals: read through a closure they would be reloaded after every store.
void RoundRow(const float* row, int64_t k, int64_t depth, uint16_t* q) {
  for (int64_t i = 0; i < k; ++i) q[i] = ToBf16(row[i]);
  std::fill(q + k, q + depth, uint16_t{0});
}
template <typename Q, int kOffset>
void QuantizeRow(const float* row, int64_t k, int64_t depth, float inverse, Q* q) {
  for (int64_t i = 0; i < k; ++i) q[i] = static_cast<Q>(QuantizeInt8(row[i], inverse) + kOffset);
  std::fill(q + k, q + depth, static_cast<Q>(kOffset));
}

// Rows rounded to bfloat16 in the kernels' layout, [depth/2][m][2].
const uint16_t* RoundRowsToBf16(const float* x, int64_t m, int64_t k, int64_t depth) {
  std::vector<uint16_t>& out = Scratch().bf16;
  out.resize(static_cast<size_t>(m * depth));
  InterleaveRows<uint16_t, 2>(m, k, depth, out.data(),
                              [=](int64_t r, uint16_t* q) { RoundRow(x + r * k, k, depth, q); });
  return out.data();
}

// Rows quantized, each with its own scale, into the kernels' layout [depth/4][m][4] of Q, plus
// kOffset (unsigned bytes hold q + 128); the padding is q = 0.
template <typename Q, int kOffset>
void QuantizeRowsInto(const float* x, int64_t m, int64_t k, int64_t depth, Q* dst, float* scales) {
  InterleaveRows<Q, 4>(m, k, depth, dst, [=](int64_t r, Q* q) {
    const float* row = x + r * k;
    const float max_abs = MaxAbs(row, k);
    scales[r] = Int8Scale(max_abs);
    QuantizeRow<Q, kOffset>(row, k, depth, Int8Inverse(max_abs), q);
  });
}

// Each row quantized with its own scale, in the form the int8 kernel multiplies: int16, or
// unsigned bytes q + 128.
const void* QuantizeRows(const float* x, int64_t m, int64_t k, int64_t depth, Int8Activations form,
                         const float** scales_out) {
  ActivationScratch& s = Scratch();
  s.scales.resize(static_cast<size_t>(m));
  *scales_out = s.scales.data();
  if (form == Int8Activations::kInt16) {
    s.int16.resize(static_cast<size_t>(m * depth));
    QuantizeRowsInto<int16_t, 0>(x, m, k, depth, s.int16.data(), s.scales.data());
    return s.int16.data();
  }
  s.bytes.resize(static_cast<size_t>(m * depth));
  QuantizeRowsInto<uint8_t, 128>(x, m, k, depth, s.bytes.data(), s.scales.data());
  return s.bytes.data();
}

}  // namespace

PackedMatrix PackMatrix(const Tensor& weight, WeightFormat format) {
  PackedMatrix p;
  p.format = format;
  p.rows = weight.dim(0);
  p.cols = weight.dim(1);
  const int64_t panels = (p.rows + kWidth - 1) / kWidth;
  switch (format) {
    case WeightFormat::kFloat32:
      p.depth = p.cols;
      p.panels = Tensor({panels, p.depth, kWidth});
      PackFloat32(weight.f32(), &p);
      break;
    case WeightFormat::kBFloat16:
      p.depth = RoundUp(p.cols, 2);
      p.panels = Tensor({panels, p.depth, kWidth}, DType::kBFloat16);
      PackBFloat16(weight.f32(), &p);
      break;
    case WeightFormat::kInt8:
      p.depth = RoundUp(p.cols, 4);
      p.panels = Tensor({panels, p.depth, kWidth}, DType::kInt8);
      p.scales = Tensor({panels * kWidth});
      p.column_sums = Tensor({panels * kWidth}, DType::kInt32);
      PackInt8(weight.f32(), &p);
      break;
  }
  return p;
}

void UnpackRow(const PackedMatrix& p, int64_t n, float* out) {
  const int64_t panel_offset = (n / kWidth) * p.depth * kWidth;
  const int64_t lane = n % kWidth;
  switch (p.format) {
    case WeightFormat::kFloat32: {
      const float* panel = p.panels.f32() + panel_offset + lane;
      for (int64_t i = 0; i < p.cols; ++i) out[i] = panel[i * kWidth];
      break;
    }
    case WeightFormat::kBFloat16: {
      const uint16_t* panel = p.panels.data<uint16_t>() + panel_offset + lane * 2;
      for (int64_t i = 0; i < p.cols; ++i)
        out[i] = BFloat16ToFloat(panel[(i / 2) * 2 * kWidth + i % 2]);
      break;
    }
    case WeightFormat::kInt8: {
      const int8_t* panel = p.panels.data<int8_t>() + panel_offset + lane * 4;
      const float scale = p.scales.f32()[n];
      for (int64_t i = 0; i < p.cols; ++i) out[i] = panel[(i / 4) * 4 * kWidth + i % 4] * scale;
      break;
    }
  }
}

PackedMatrix GatherRows(const PackedMatrix& p, std::span<const int32_t> rows) {
  PackedMatrix out;
  out.format = p.format;
  out.rows = static_cast<int64_t>(rows.size());
  out.cols = p.cols;
  out.depth = p.depth;
  const int64_t panels = (out.rows + kWidth - 1) / kWidth;
  // A row's values sit in groups of `group` consecutive depth entries per lane (the layouts of
  // PackFloat32, PackBFloat16 and PackInt8), so a row is copied group by group.
  const int64_t group = p.format == WeightFormat::kInt8       ? 4
                        : p.format == WeightFormat::kBFloat16 ? 2
                                                              : 1;
  const size_t bytes = DTypeSize(p.panels.dtype());
  out.panels = Tensor({panels, p.depth, kWidth}, p.panels.dtype());
  std::memset(out.panels.data<uint8_t>(), 0, static_cast<size_t>(out.panels.numel()) * bytes);
  if (p.format == WeightFormat::kInt8) {
    out.scales = Tensor({panels * kWidth});
    out.column_sums = Tensor({panels * kWidth}, DType::kInt32);
    std::fill(out.scales.f32(), out.scales.f32() + out.scales.numel(), 0.0f);
    std::fill(out.column_sums.data<int32_t>(),
              out.column_sums.data<int32_t>() + out.column_sums.numel(), 0);
  }
  const auto* from = p.panels.data<uint8_t>();
  auto* to = out.panels.data<uint8_t>();
  const int64_t panel_size = p.depth * kWidth;
  for (int64_t j = 0; j < out.rows; ++j) {
    const int64_t n = rows[j];
    if (n < 0 || n >= p.rows) {
      throw std::invalid_argument("GatherRows: row " + std::to_string(n) + " of " +
                                  std::to_string(p.rows));
    }
    const int64_t src = (n / kWidth) * panel_size + (n % kWidth) * group;
    const int64_t dst = (j / kWidth) * panel_size + (j % kWidth) * group;
    for (int64_t d = 0; d < p.depth; d += group) {
      std::memcpy(to + (dst + d * kWidth) * bytes, from + (src + d * kWidth) * bytes,
                  static_cast<size_t>(group) * bytes);
    }
    if (p.format == WeightFormat::kInt8) {
      out.scales.f32()[j] = p.scales.f32()[n];
      out.column_sums.data<int32_t>()[j] = p.column_sums.data<int32_t>()[n];
    }
  }
  return out;
}

PanelOperands ConvertOperands(const Tensor& x, const PackedMatrix& weight) {
  PanelOperands operands;
  operands.kernels = &ActiveKernels();
  operands.x = x.f32();
  operands.m = x.dim(0);
  operands.k = x.dim(1);
  if (weight.format == WeightFormat::kBFloat16) {
    operands.bf16 = RoundRowsToBf16(x.f32(), operands.m, operands.k, weight.depth);
  }
  if (weight.format == WeightFormat::kInt8) {
    operands.int8 = QuantizeRows(x.f32(), operands.m, operands.k, weight.depth,
                                 operands.kernels->int8_activations, &operands.int8_scales);
  }
  return operands;
}

int MultiplyPanel(const PanelOperands& x, const PackedMatrix& weight, const float* bias, int64_t p,
                  bool prefetch_next, float* out, int64_t ldc) {
  const KernelSet& kernels = *x.kernels;
  const int64_t depth = weight.depth;
  const int64_t col = p * kWidth;
  const int width = static_cast<int>(std::min<int64_t>(kWidth, weight.rows - col));
  alignas(64) float bias32[kWidth] = {};
  if (bias != nullptr) std::memcpy(bias32, bias + col, width * sizeof(float));
  switch (weight.format) {
    case WeightFormat::kFloat32: {
      const float* panel = weight.panels.f32() + p * depth * kWidth;
      kernels.float_panel(x.x, x.m, x.k, panel, bias32, out, ldc, width,
                          prefetch_next ? panel + depth * kWidth : nullptr);
      break;
    }
    case WeightFormat::kBFloat16: {
      const uint16_t* panel = weight.panels.data<uint16_t>() + p * depth * kWidth;
      kernels.bf16_panel(x.bf16, x.m, depth, panel, bias32, out, ldc, width,
                         prefetch_next ? panel + depth * kWidth : nullptr);
      break;
    }
    case WeightFormat::kInt8: {
      const int8_t* panel = weight.panels.data<int8_t>() + p * depth * kWidth;
      const Int8PanelWeights w{panel, weight.column_sums.data<int32_t>() + col,
                               weight.scales.f32() + col, bias32,
                               prefetch_next ? panel + depth * kWidth : nullptr};
      kernels.int8_panel(x.int8, x.int8_scales, x.m, depth, w, out, ldc, width);
      break;
    }
  }
  return width;
}

void PackedProduct(const Tensor& x, const PackedMatrix& weight, const Tensor& bias,
                   Activation activation, Tensor* y) {
  const int64_t m = x.dim(0);
  const int64_t n = weight.rows;
  y->Resize({m, n});
  if (m == 0) return;
  const float* b = bias.empty() ? nullptr : bias.f32();
  float* out = y->f32();
  // The operand rows in the format's form, made once for every panel.
  const PanelOperands operands = ConvertOperands(x, weight);
  ThreadPool::Engine().ParallelFor(weight.panels.dim(0), [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      float* dst = out + p * kWidth;
      const int width = MultiplyPanel(operands, weight, b, p, p + 1 < last, dst, n);
      if (activation != Activation::kIdentity) {
        for (int64_t r = 0; r < m; ++r) ActivateSpan(activation, dst + r * n, width);
      }
    }
  });
}

}  // namespace transerve::ops::cpu
