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

// The loops over a block's rows are unrolled before GCC places the sums: otherwise it keeps
// them in memory and stores every one back on every step of K.

constexpr int kWidth = 32;

// A block of fewer than 4 rows would wait on each sum's latency: it runs several chains of
// sums over alternate steps of K and adds them at the end (integer sums: the same result).
template <int R>
void Int8Block(const uint8_t* x, const float* x_scales, int64_t depth, int64_t stride,
               const Int8PanelWeights& p, float* out, int64_t ldc, int width, bool prefetch) {
  constexpr int kChains = R >= 4 ? 1 : 4 / R;
  __m512i acc0[kChains][R], acc1[kChains][R];
#pragma GCC unroll 16
  for (int c = 0; c < kChains; ++c) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      acc0[c][r] = _mm512_setzero_si512();
      acc1[c][r] = _mm512_setzero_si512();
    }
  }
  const int64_t quads = depth / 4;
  const int8_t* panel = p.panel;
  const int8_t* next = prefetch ? p.next : nullptr;
  auto step = [&](int64_t i, int c) {
    const int8_t* w = panel + i * 4 * kWidth;
    if (next != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(next + i * 4 * kWidth), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(next + i * 4 * kWidth + 64), _MM_HINT_T0);
    }
    const __m512i w0 = _mm512_loadu_si512(w);
    const __m512i w1 = _mm512_loadu_si512(w + 64);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t quad;
      std::memcpy(&quad, x + i * stride + 4 * r, sizeof(quad));
      const __m512i a = _mm512_set1_epi32(quad);
      acc0[c][r] = _mm512_dpbusd_epi32(acc0[c][r], a, w0);
      acc1[c][r] = _mm512_dpbusd_epi32(acc1[c][r], a, w1);
    }
  };
  int64_t i = 0;
  for (; i + kChains <= quads; i += kChains) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) step(i + c, c);
  }
  for (; i < quads; ++i) step(i, 0);
#pragma GCC unroll 16
  for (int c = 1; c < kChains; ++c) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      acc0[0][r] = _mm512_add_epi32(acc0[0][r], acc0[c][r]);
      acc1[0][r] = _mm512_add_epi32(acc1[0][r], acc1[c][r]);
    }
  }
  alignas(64) int32_t sums[R][kWidth];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    _mm512_store_si512(sums[r], acc0[0][r]);
    _mm512_store_si512(sums[r] + 16, acc1[0][r]);
  }
  StoreInt8Rows(sums, R, /*unsigned_bytes=*/true, x_scales, p, out, ldc, width);
}

}  // namespace

void Int8Panel(const void* x_rows, const float* x_scales, int64_t m, int64_t depth,
               const Int8PanelWeights& panel, float* out, int64_t ldc, int width) {
  const uint8_t* x = static_cast<const uint8_t*>(x_rows);
  ForRowBlocks<12, 8, 4, 1>(m, [&](auto rows, int64_t r) {
    Int8Block<rows()>(x + r * 4, x_scales + r, depth, 4 * m, panel, out + r * ldc, ldc, width,
                      r == 0);
  });
}

}  // namespace transerve::ops::cpu::avx512_vnni
