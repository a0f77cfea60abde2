// The int8 packed-weight product on AVX-512 VNNI: vpdpbusd multiplies four unsigned activation
// bytes (q + 128) by four int8 weights and adds them to an int32 lane, 64 products an
// instruction. The excess 128 * (sum of the output's weights) is removed before scaling.
// Compiled for this level only (see packed_kernels.h).
#include <immintrin.h>

#include <cstring>

#include "model/ops/cpu/avx512_panel_row.h"
#include "model/ops/cpu/packed_kernels.h"
#include "model/ops/cpu/row_blocks.h"

namespace transerve::ops::cpu::avx512_vnni {
namespace {

constexpr int kWidth = 32;

template <int R>
void Int8Block(const uint8_t* x, const float* x_scales, int64_t depth, const Int8PanelWeights& p,
               float* out, int64_t ldc, int width, bool prefetch) {
  __m512i acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_si512();
  const int64_t quads = depth / 4;
  for (int64_t i = 0; i < quads; ++i) {
    const int8_t* w = p.panel + i * 4 * kWidth;
    if (prefetch && p.next != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(p.next + i * 4 * kWidth), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p.next + i * 4 * kWidth + 64), _MM_HINT_T0);
    }
    const __m512i w0 = _mm512_loadu_si512(w);
    const __m512i w1 = _mm512_loadu_si512(w + 64);
    for (int r = 0; r < R; ++r) {
      int32_t quad;
      std::memcpy(&quad, x + r * depth + 4 * i, sizeof(quad));
      const __m512i a = _mm512_set1_epi32(quad);
      acc0[r] = _mm512_dpbusd_epi32(acc0[r], a, w0);
      acc1[r] = _mm512_dpbusd_epi32(acc1[r], a, w1);
    }
  }
  const __m512i excess0 = _mm512_slli_epi32(_mm512_loadu_si512(p.column_sums32), 7);
  const __m512i excess1 = _mm512_slli_epi32(_mm512_loadu_si512(p.column_sums32 + 16), 7);
  const __m512 ws0 = _mm512_loadu_ps(p.w_scales32), ws1 = _mm512_loadu_ps(p.w_scales32 + 16);
  const __m512 b0 = _mm512_loadu_ps(p.bias32), b1 = _mm512_loadu_ps(p.bias32 + 16);
  for (int r = 0; r < R; ++r) {
    const __m512 s = _mm512_set1_ps(x_scales[r]);
    const __m512i lo = _mm512_sub_epi32(acc0[r], excess0);
    const __m512i hi = _mm512_sub_epi32(acc1[r], excess1);
    StorePanelRow(out + r * ldc, _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo), _mm512_mul_ps(s, ws0), b0),
                  _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi), _mm512_mul_ps(s, ws1), b1), width);
  }
}

}  // namespace

void Int8Panel(const void* x_rows, const float* x_scales, int64_t m, int64_t depth,
               const Int8PanelWeights& panel, float* out, int64_t ldc, int width) {
  const uint8_t* x = static_cast<const uint8_t*>(x_rows);
  ForRowBlocks<12, 4, 1>(m, [&](auto rows, int64_t r) {
    Int8Block<rows()>(x + r * depth, x_scales + r, depth, panel, out + r * ldc, ldc, width, r == 0);
  });
}

}  // namespace transerve::ops::cpu::avx512_vnni
