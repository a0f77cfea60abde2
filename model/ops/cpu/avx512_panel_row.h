// The AVX-512 kernels' stores of a panel's outputs. Included only by the AVX-512 kernel files;
// static so each keeps its own copy, compiled for its own level (packed_kernels.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "model/ops/cpu/packed_kernels.h"

namespace transerve::ops::cpu {

// One row of 32 outputs from two vectors, the first `width` of them.
static inline void StorePanelRow(float* out, __m512 lo, __m512 hi, int width) {
  if (width == 32) {
    _mm512_storeu_ps(out, lo);
    _mm512_storeu_ps(out + 16, hi);
    return;
  }
  alignas(64) float tmp[32];
  _mm512_store_ps(tmp, lo);
  _mm512_store_ps(tmp + 16, hi);
  std::memcpy(out, tmp, width * sizeof(float));
}

// Rows of a panel's int32 sums, finished into floats: out = fma(float(s), x_scale * w_scale,
// bias) with s the sum less 128 * the column's weight sum when the activations were unsigned
// bytes (q + 128). The sums come from memory: keeping them in registers through this would
// leave too few for the product loop, and GCC would then spill its sums on every step.
static inline void StoreInt8Rows(const int32_t (*sums)[32], int rows, bool unsigned_bytes,
                                 const float* x_scales, const Int8PanelWeights& p, float* out,
                                 int64_t ldc, int width) {
  const __m512i excess0 = unsigned_bytes ? _mm512_slli_epi32(_mm512_loadu_si512(p.column_sums32), 7)
                                         : _mm512_setzero_si512();
  const __m512i excess1 = unsigned_bytes
                              ? _mm512_slli_epi32(_mm512_loadu_si512(p.column_sums32 + 16), 7)
                              : _mm512_setzero_si512();
  const __m512 ws0 = _mm512_loadu_ps(p.w_scales32), ws1 = _mm512_loadu_ps(p.w_scales32 + 16);
  const __m512 b0 = _mm512_loadu_ps(p.bias32), b1 = _mm512_loadu_ps(p.bias32 + 16);
  for (int r = 0; r < rows; ++r) {
    const __m512 s = _mm512_set1_ps(x_scales[r]);
    const __m512i lo = _mm512_sub_epi32(_mm512_load_si512(sums[r]), excess0);
    const __m512i hi = _mm512_sub_epi32(_mm512_load_si512(sums[r] + 16), excess1);
    StorePanelRow(out + r * ldc, _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo), _mm512_mul_ps(s, ws0), b0),
                  _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi), _mm512_mul_ps(s, ws1), b1), width);
  }
}

}  // namespace transerve::ops::cpu
