// The packed-weight product kernels on AVX-512 (F/BW/DQ/VL), 16 lanes: a panel of 32 outputs
// is two vectors. Compiled for this level only (see packed_kernels.h).
#include <immintrin.h>

#include <cstring>

#include "model/ops/cpu/avx512_panel_row.h"
#include "model/ops/cpu/packed_kernels.h"
#include "model/ops/cpu/row_blocks.h"

namespace transerve::ops::cpu::avx512 {
namespace {

// The loops over a block's rows are unrolled before GCC places the sums: otherwise it keeps
// them in memory and stores every one back on every step of K.

constexpr int kWidth = 32;

template <int R>
void FloatBlock(const float* x, int64_t k, const float* panel, const float* bias32, float* out,
                int64_t ldc, int width, const float* next) {
  __m512 acc0[R], acc1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    acc0[r] = _mm512_loadu_ps(bias32);
    acc1[r] = _mm512_loadu_ps(bias32 + 16);
  }
  for (int64_t i = 0; i < k; ++i) {
    if (next != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(next + i * kWidth), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(next + i * kWidth + 16), _MM_HINT_T0);
    }
    const __m512 w0 = _mm512_loadu_ps(panel + i * kWidth);
    const __m512 w1 = _mm512_loadu_ps(panel + i * kWidth + 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(x[r * k + i]);
      acc0[r] = _mm512_fmadd_ps(a, w0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(a, w1, acc1[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) StorePanelRow(out + r * ldc, acc0[r], acc1[r], width);
}

// A bfloat16 pair (element 2i low, 2i+1 high in each 32-bit lane) as two float vectors.
__m512 EvenHalves(__m512i pairs) { return _mm512_castsi512_ps(_mm512_slli_epi32(pairs, 16)); }
__m512 OddHalves(__m512i pairs) {
  return _mm512_castsi512_ps(_mm512_and_si512(pairs, _mm512_set1_epi32(int32_t(0xffff0000))));
}

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
    const __m512i p0 = _mm512_loadu_si512(w);
    const __m512i p1 = _mm512_loadu_si512(w + 32);
    const __m512 even0 = EvenHalves(p0), odd0 = OddHalves(p0);
    const __m512 even1 = EvenHalves(p1), odd1 = OddHalves(p1);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      uint32_t bits;
      std::memcpy(&bits, x + i * stride + 2 * r, sizeof(bits));
      const __m512i a = _mm512_set1_epi32(static_cast<int32_t>(bits));
      const __m512 a_even = EvenHalves(a), a_odd = OddHalves(a);
      acc0[r] = _mm512_fmadd_ps(a_odd, odd0, acc0[r]);
      acc0[r] = _mm512_fmadd_ps(a_even, even0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(a_odd, odd1, acc1[r]);
      acc1[r] = _mm512_fmadd_ps(a_even, even1, acc1[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) StorePanelRow(out + r * ldc, acc0[r], acc1[r], width);
}

// 16 int32 sums of eight outputs' pairs (a[2j] + a[2j+1] is output j) from two such vectors:
// outputs 0-7 from `a`, 8-15 from `b`.
__m512i SumPairs(__m512i a, __m512i b) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_add_epi32(_mm512_permutex2var_epi32(a, even, b),
                          _mm512_permutex2var_epi32(a, odd, b));
}

template <int R>
void Int8Block(const int16_t* x, const float* x_scales, int64_t depth, int64_t stride,
               const Int8PanelWeights& p, float* out, int64_t ldc, int width, bool prefetch) {
  __m512i acc[R][4];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_si512();
  }
  const int64_t quads = depth / 4;
  const int8_t* panel = p.panel;
  const int8_t* next = prefetch ? p.next : nullptr;
  for (int64_t i = 0; i < quads; ++i) {
    const int8_t* w = panel + i * 4 * kWidth;
    if (next != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(next + i * 4 * kWidth), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(next + i * 4 * kWidth + 64), _MM_HINT_T0);
    }
    __m512i w16[4];
#pragma GCC unroll 16
    for (int j = 0; j < 4; ++j) {
      w16[j] =
          _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 32 * j)));
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int64_t quad;
      std::memcpy(&quad, x + i * stride + 4 * r, sizeof(quad));
      const __m512i a = _mm512_set1_epi64(quad);
#pragma GCC unroll 16
      for (int j = 0; j < 4; ++j)
        acc[r][j] = _mm512_add_epi32(acc[r][j], _mm512_madd_epi16(w16[j], a));
    }
  }
  alignas(64) int32_t sums[R][kWidth];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    _mm512_store_si512(sums[r], SumPairs(acc[r][0], acc[r][1]));
    _mm512_store_si512(sums[r] + 16, SumPairs(acc[r][2], acc[r][3]));
  }
  StoreInt8Rows(sums, R, /*unsigned_bytes=*/false, x_scales, p, out, ldc, width);
}

}  // namespace

void FloatPanel(const float* x, int64_t m, int64_t k, const float* panel, const float* bias32,
                float* out, int64_t ldc, int width, const float* next) {
  // Only the first block prefetches the next panel: it is in cache for the rest.
  ForRowBlocks<8, 4, 2, 1>(m, [&](auto rows, int64_t r) {
    FloatBlock<rows()>(x + r * k, k, panel, bias32, out + r * ldc, ldc, width,
                       r == 0 ? next : nullptr);
  });
}

void Bf16Panel(const uint16_t* x, int64_t m, int64_t depth, const uint16_t* panel,
               const float* bias32, float* out, int64_t ldc, int width, const uint16_t* next) {
  ForRowBlocks<6, 2, 1>(m, [&](auto rows, int64_t r) {
    Bf16Block<rows()>(x + r * 2, depth, 2 * m, panel, bias32, out + r * ldc, ldc, width,
                      r == 0 ? next : nullptr);
  });
}

void Int8Panel(const void* x_rows, const float* x_scales, int64_t m, int64_t depth,
               const Int8PanelWeights& panel, float* out, int64_t ldc, int width) {
  const int16_t* x = static_cast<const int16_t*>(x_rows);
  ForRowBlocks<6, 2, 1>(m, [&](auto rows, int64_t r) {
    Int8Block<rows()>(x + r * 4, x_scales + r, depth, 4 * m, panel, out + r * ldc, ldc, width,
                      r == 0);
  });
}

}  // namespace transerve::ops::cpu::avx512
