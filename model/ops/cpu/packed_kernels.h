// The product kernels of packed weights (PackedMatrix), one set per instruction-set level. Each
// set lives in its own source file compiled for that level only (model/ops/CMakeLists.txt), in
// a namespace of its own, so no inline code of one level can be linked into another; which set
// runs is chosen at run time (cpu_isa.h). Every kernel computes one panel of 32 output features
// for rows [0, m) of its operand, each output one sum in plain K order, so every level gives the
// same bits and a row's result never depends on the other rows.
#pragma once

#include <cstdint>

namespace transerve::ops::cpu {

// out[r][0..width) = bias32 + x[r] · panel, x: m rows of k floats (row stride k); the panel is
// [k][32] floats. `next` (or null) is the following panel, prefetched while this one computes.
using FloatPanelKernel = void (*)(const float* x, int64_t m, int64_t k, const float* panel,
                                  const float* bias32, float* out, int64_t ldc, int width,
                                  const float* next);

// The same with bfloat16 operands: x is m rows of `depth` bfloat16 (depth even), the panel
// [depth/2][32][2]. Each pair is added odd element first, as vdpbf16ps does.
using Bf16PanelKernel = void (*)(const uint16_t* x, int64_t m, int64_t depth, const uint16_t* panel,
                                 const float* bias32, float* out, int64_t ldc, int width,
                                 const uint16_t* next);

// The same with int8 operands: the int32 sums s = q_x[r] · q_w are exact, then
// out = fma(float(s), x_scales[r] * w_scales32[c], bias32[c]). The panel is [depth/4][32][4]
// int8 (depth a multiple of 4). The rows of x come in the form the kernel asks for
// (Int8Kernels::activations): signed int16, or unsigned bytes q + 128, whose excess the kernel
// removes with column_sums32 (sum over K of each output's q).
struct Int8PanelWeights {
  const int8_t* panel;
  const int32_t* column_sums32;
  const float* w_scales32;
  const float* bias32;
  const int8_t* next;
};
using Int8PanelKernel = void (*)(const void* x, const float* x_scales, int64_t m, int64_t depth,
                                 const Int8PanelWeights& panel, float* out, int64_t ldc, int width);

// The form of activation rows an int8 kernel multiplies.
enum class Int8Activations : uint8_t { kInt16, kUnsignedBytes };

// One level's kernels and their names (for logs).
struct KernelSet {
  const char* float_name;
  FloatPanelKernel float_panel;
  const char* bf16_name;
  Bf16PanelKernel bf16_panel;
  const char* int8_name;
  Int8PanelKernel int8_panel;
  Int8Activations int8_activations;
};

// Each level's kernels (cpu_isa.cc makes a KernelSet of them per level).
#define TRANSERVE_DECLARE_PANEL_KERNELS                                                          \
  void FloatPanel(const float* x, int64_t m, int64_t k, const float* panel, const float* bias32, \
                  float* out, int64_t ldc, int width, const float* next);                        \
  void Bf16Panel(const uint16_t* x, int64_t m, int64_t depth, const uint16_t* panel,             \
                 const float* bias32, float* out, int64_t ldc, int width, const uint16_t* next); \
  void Int8Panel(const void* x, const float* x_scales, int64_t m, int64_t depth,                 \
                 const Int8PanelWeights& panel, float* out, int64_t ldc, int width);

// AVX2 + FMA: 8-lane floats; bfloat16 widened to float; int8 widened to int16 (vpmaddwd).
namespace avx2 {
TRANSERVE_DECLARE_PANEL_KERNELS
}
// AVX-512: the same on 16 lanes.
namespace avx512 {
TRANSERVE_DECLARE_PANEL_KERNELS
}
// AVX-512 VNNI: int8 as unsigned bytes times int8 on vpdpbusd.
namespace avx512_vnni {
void Int8Panel(const void* x, const float* x_scales, int64_t m, int64_t depth,
               const Int8PanelWeights& panel, float* out, int64_t ldc, int width);
}
// AVX-512 BF16: bfloat16 pairs on vdpbf16ps.
namespace avx512_bf16 {
void Bf16Panel(const uint16_t* x, int64_t m, int64_t depth, const uint16_t* panel,
               const float* bias32, float* out, int64_t ldc, int width, const uint16_t* next);
}

#undef TRANSERVE_DECLARE_PANEL_KERNELS

}  // namespace transerve::ops::cpu
