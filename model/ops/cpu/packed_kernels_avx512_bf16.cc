// The bfloat16 packed-weight product on AVX-512 BF16: vdpbf16ps multiplies 16 bfloat16 pairs
// and adds each pair to a float32 lane, odd element first. Compiled for this level only (see
// packed_kernels.h).
#include <immintrin.h>

#include <cstring>

#include "model/ops/cpu/avx512_panel_row.h"
#include "model/ops/cpu/packed_kernels.h"
#include "model/ops/cpu/row_blocks.h"

namespace transerve::ops::cpu::avx512_bf16 {
namespace {

// The loops over a block's rows are unrolled before GCC places the sums: otherwise it keeps
// them in memory and stores every one back on every step of K.

constexpr int kWidth = 32;

template <int R>
void Bf16Block(const uint16_t* x, int64_t depth, int64_t stride, const uint16_t* panel,
               const float* bias32, float* out, int64_t ldc, int width, const uint16_t* next) {
  __m512 acc0[R], acc1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    acc0[r] = _mm512_loadu_ps(bias32);
    acc1[r] = _mm512_loadu_ps(bias32 + 16);
  }
  const int64_t pairs = depth / 2;
  for (int64_t i = 0; i < pairs; ++i) {
    const uint16_t* w = panel + i * 2 * kWidth;
    if (next != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(next + i * 2 * kWidth), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(next + i * 2 * kWidth + 32), _MM_HINT_T0);
    }
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(w);
    const __m512bh w1 = (__m512bh)_mm512_loadu_si512(w + 32);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t bits;
      std::memcpy(&bits, x + i * stride + 2 * r, sizeof(bits));
      const __m512bh a = (__m512bh)_mm512_set1_epi32(bits);
      acc0[r] = _mm512_dpbf16_ps(acc0[r], a, w0);
      acc1[r] = _mm512_dpbf16_ps(acc1[r], a, w1);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) StorePanelRow(out + r * ldc, acc0[r], acc1[r], width);
}

}  // namespace

void Bf16Panel(const uint16_t* x, int64_t m, int64_t depth, const uint16_t* panel,
               const float* bias32, float* out, int64_t ldc, int width, const uint16_t* next) {
  ForRowBlocks<8, 4, 1>(m, [&](auto rows, int64_t r) {
    Bf16Block<rows()>(x + r * 2, depth, 2 * m, panel, bias32, out + r * ldc, ldc, width,
                      r == 0 ? next : nullptr);
  });
}

}  // namespace transerve::ops::cpu::avx512_bf16
