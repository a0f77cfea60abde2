// The pieces of a product with a packed weight (PackedMatrix) that more than one product is
// made of: the activation rows converted once into the form the weight's kernel multiplies, and
// one panel of 32 output features computed from them. PackedProduct stores every panel in the
// output; PackedProductTopK ranks each while it is in cache.
#pragma once

#include <cstdint>

#include "model/ops/cpu/packed_kernels.h"
#include "model/ops/ops.h"

namespace transerve::ops::cpu {

// x's rows as the weight's format multiplies them. The converted rows live in the calling
// thread's scratch, valid until its next conversion.
struct PanelOperands {
  const KernelSet* kernels = nullptr;  // the level the conversion was made for
  const float* x = nullptr;            // float32: the rows themselves
  const uint16_t* bf16 = nullptr;      // bfloat16, in the kernels' layout
  const void* int8 = nullptr;          // int8, in the form the active kernel asks for
  const float* int8_scales = nullptr;  // one per row
  int64_t m = 0;
  int64_t k = 0;
};
PanelOperands ConvertOperands(const Tensor& x, const PackedMatrix& weight);

// out[r][0..width) = bias[col..] + x[r] · weight[col..]ᵀ for the panel p (col = 32 p, width
// its valid columns), rows r in [0, m) at row stride ldc; `bias` null for none. With
// prefetch_next the following panel is fetched meanwhile. Returns width.
int MultiplyPanel(const PanelOperands& x, const PackedMatrix& weight, const float* bias, int64_t p,
                  bool prefetch_next, float* out, int64_t ldc);

}  // namespace transerve::ops::cpu
