// The packed-weight product kernels on AVX2 + FMA (x86-64-v3), 8 lanes and 16 registers: each
// kernel walks a 32-output panel in slices narrow enough that a block of rows keeps its sums in
// registers. Compiled for this level only (see packed_kernels.h).
#include <immintrin.h>

#include <cstring>

#include "model/ops/cpu/packed_kernels.h"
#include "model/ops/cpu/row_blocks.h"

namespace transerve::ops::cpu::avx2 {
namespace {

// The loops over a block's rows are unrolled before GCC places the sums: otherwise it keeps
// them in memory and stores every one back on every step of K.

constexpr int kWidth = 32;

// Stores `count` vectors of 8 outputs of one row: outputs [first, first + 8 * count), only those
// below `width`.
void StoreSlice(float* out, const __m256* v, int count, int first, int width) {
  if (first + 8 * count <= width) {
#pragma GCC unroll 16
    for (int j = 0; j < count; ++j) _mm256_storeu_ps(out + first + 8 * j, v[j]);
    return;
  }
  alignas(32) float tmp[kWidth];
#pragma GCC unroll 16
  for (int j = 0; j < count; ++j) _mm256_store_ps(tmp + 8 * j, v[j]);
  if (width > first) std::memcpy(out + first, tmp, (width - first) * sizeof(float));
}

// Outputs [half * 16, half * 16 + 16) of R rows.
template <int R>
void FloatSlice(const float* x, int64_t k, const float* panel, const float* bias32, float* out,
                int64_t ldc, int width, int half, const float* next) {
  const int first = half * 16;
  __m256 acc[R][2];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    acc[r][0] = _mm256_loadu_ps(bias32 + first);
    acc[r][1] = _mm256_loadu_ps(bias32 + first + 8);
  }
  for (int64_t i = 0; i < k; ++i) {
    if (next != nullptr)
      _mm_prefetch(reinterpret_cast<const char*>(next + i * kWidth + first), _MM_HINT_T0);
    const __m256 w0 = _mm256_loadu_ps(panel + i * kWidth + first);
    const __m256 w1 = _mm256_loadu_ps(panel + i * kWidth + first + 8);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_set1_ps(x[r * k + i]);
      acc[r][0] = _mm256_fmadd_ps(a, w0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, w1, acc[r][1]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) StoreSlice(out + r * ldc, acc[r], 2, first, width);
}

__m256 EvenHalves(__m256i pairs) { return _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16)); }
__m256 OddHalves(__m256i pairs) {
  return _mm256_castsi256_ps(_mm256_and_si256(pairs, _mm256_set1_epi32(int32_t(0xffff0000))));
}

template <int R>
void Bf16Slice(const uint16_t* x, int64_t depth, int64_t stride, const uint16_t* panel,
               const float* bias32, float* out, int64_t ldc, int width, int half,
               const uint16_t* next) {
  const int first = half * 16;
  __m256 acc[R][2];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    acc[r][0] = _mm256_loadu_ps(bias32 + first);
    acc[r][1] = _mm256_loadu_ps(bias32 + first + 8);
  }
  const int64_t pairs = depth / 2;
  for (int64_t i = 0; i < pairs; ++i) {
    const uint16_t* w = panel + i * 2 * kWidth + 2 * first;
    if (next != nullptr)
      _mm_prefetch(reinterpret_cast<const char*>(next + i * 2 * kWidth + 2 * first), _MM_HINT_T0);
    const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
    const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16));
    const __m256 even0 = EvenHalves(p0), odd0 = OddHalves(p0);
    const __m256 even1 = EvenHalves(p1), odd1 = OddHalves(p1);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t bits;
      std::memcpy(&bits, x + i * stride + 2 * r, sizeof(bits));
      const __m256i a = _mm256_set1_epi32(bits);
      const __m256 a_even = EvenHalves(a), a_odd = OddHalves(a);
      acc[r][0] = _mm256_fmadd_ps(a_odd, odd0, acc[r][0]);
      acc[r][0] = _mm256_fmadd_ps(a_even, even0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a_odd, odd1, acc[r][1]);
      acc[r][1] = _mm256_fmadd_ps(a_even, even1, acc[r][1]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) StoreSlice(out + r * ldc, acc[r], 2, first, width);
}

// Outputs [eighth * 8, eighth * 8 + 8) of R rows. The weights' int8 quads are widened to int16
// and multiplied in pairs (vpmaddwd, exact): lo holds outputs 0-3 as pair sums, hi 4-7.
template <int R>
void Int8Slice(const int16_t* x, const float* x_scales, int64_t depth, int64_t stride,
               const Int8PanelWeights& p, float* out, int64_t ldc, int width, int eighth,
               bool prefetch) {
  const int first = eighth * 8;
  __m256i lo[R], hi[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_si256();
  const int64_t quads = depth / 4;
  for (int64_t i = 0; i < quads; ++i) {
    const int8_t* w = p.panel + i * 4 * kWidth + 4 * first;
    if (prefetch && p.next != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(p.next + i * 4 * kWidth + 4 * first), _MM_HINT_T0);
    }
    const __m256i w_lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    const __m256i w_hi =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16)));
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int64_t quad;
      std::memcpy(&quad, x + i * stride + 4 * r, sizeof(quad));
      const __m256i a = _mm256_set1_epi64x(quad);
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(w_lo, a));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(w_hi, a));
    }
  }
  const __m256 ws = _mm256_loadu_ps(p.w_scales32 + first);
  const __m256 b = _mm256_loadu_ps(p.bias32 + first);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    // hadd gives outputs 0 1 4 5 | 2 3 6 7; the permute puts them in order.
    const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo[r], hi[r]), 0xD8);
    const __m256 s = _mm256_set1_ps(x_scales[r]);
    const __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(s, ws), b);
    StoreSlice(out + r * ldc, &v, 1, first, width);
  }
}

}  // namespace

void FloatPanel(const float* x, int64_t m, int64_t k, const float* panel, const float* bias32,
                float* out, int64_t ldc, int width, const float* next) {
  for (int half = 0; half < 2 && half * 16 < width; ++half) {
    ForRowBlocks<4, 1>(m, [&](auto rows, int64_t r) {
      FloatSlice<rows()>(x + r * k, k, panel, bias32, out + r * ldc, ldc, width, half,
                         r == 0 ? next : nullptr);
    });
  }
}

void Bf16Panel(const uint16_t* x, int64_t m, int64_t depth, const uint16_t* panel,
               const float* bias32, float* out, int64_t ldc, int width, const uint16_t* next) {
  for (int half = 0; half < 2 && half * 16 < width; ++half) {
    ForRowBlocks<3, 1>(m, [&](auto rows, int64_t r) {
      Bf16Slice<rows()>(x + r * 2, depth, 2 * m, panel, bias32, out + r * ldc, ldc, width, half,
                        r == 0 ? next : nullptr);
    });
  }
}

void Int8Panel(const void* x_rows, const float* x_scales, int64_t m, int64_t depth,
               const Int8PanelWeights& panel, float* out, int64_t ldc, int width) {
  const int16_t* x = static_cast<const int16_t*>(x_rows);
  // Blocks of four rows: their eight sums, two weight vectors and a broadcast fit the sixteen
  // registers. With six, GCC kept some sums on the stack, and NLLB-600M's products ran at
  // 0.53-0.75x the speed (docs/engine.md, "Products with model weights").
  for (int eighth = 0; eighth < 4 && eighth * 8 < width; ++eighth) {
    ForRowBlocks<4, 2, 1>(m, [&](auto rows, int64_t r) {
      Int8Slice<rows()>(x + r * 4, x_scales + r, depth, 4 * m, panel, out + r * ldc, ldc, width,
                        eighth, r == 0);
    });
  }
}

}  // namespace transerve::ops::cpu::avx2
