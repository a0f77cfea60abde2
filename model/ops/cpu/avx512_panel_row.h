// Stores one row of a panel's 32 outputs from two AVX-512 vectors, the first `width` of them.
// Included only by the AVX-512 kernel files; static so each keeps its own copy, compiled for
// its own level (packed_kernels.h).
#pragma once

#include <immintrin.h>

#include <cstring>

namespace transerve::ops::cpu {

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

}  // namespace transerve::ops::cpu
