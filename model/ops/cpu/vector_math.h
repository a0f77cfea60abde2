// Scalar math written so that GCC vectorises the loops that call it (no libm calls in the hot
// loops of activations and softmax).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace transerve::ops::cpu {

// exp(x) with a relative error below 3e-7 (Cody-Waite range reduction, then a degree-6
// polynomial of the reduced argument). Inputs below kExpMin give 0 and above kExpMax +inf
// (exp(88.3) is close to FLT_MAX; softmax and swish never get there).
inline constexpr float kExpMin = -87.3f;
inline constexpr float kExpMax = 88.3f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;

// exp(r) for r in [-ln2/2, ln2/2]; T is float or a float vector.
template <typename T>
inline T ExpOfReduced(T r) {
  T p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

inline float FastExp(float x) {
  const float clamped = std::fmin(std::fmax(x, kExpMin), kExpMax);
  // floor(v + 0.5) vectorises (vroundps) and, unlike the 1.5·2^23 trick, survives
  // -fassociative-math.
  const float n = std::floor(clamped * kLog2e + 0.5f);
  const float r = (clamped - n * kLn2Hi) - n * kLn2Lo;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  float result = ExpOfReduced(r) * scale;
  if (x < kExpMin) result = 0.0f;
  if (x > kExpMax) result = INFINITY;
  return result;
}

// GCC vector extensions: 16 floats, lowered to whatever SIMD the target has (AVX-512, AVX2,
// SSE). Used where the auto-vectoriser gives up (reductions, exp).
typedef float Floats16 __attribute__((vector_size(64)));
typedef int32_t Ints16 __attribute__((vector_size(64)));
inline constexpr int kLanes = 16;

inline Floats16 Splat(float v) { return Floats16{} + v; }

inline Floats16 LoadFloats16(const float* p) {
  Floats16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// FastExp on 16 lanes (round-half-away-from-zero range reduction: same accuracy).
inline Floats16 FastExp16(Floats16 x) {
  Floats16 c = x < kExpMin ? Splat(kExpMin) : x;
  c = c > kExpMax ? Splat(kExpMax) : c;
  const Floats16 t = c * kLog2e;
  const Ints16 ni = __builtin_convertvector(t + (t >= 0.0f ? Splat(0.5f) : Splat(-0.5f)), Ints16);
  const Floats16 n = __builtin_convertvector(ni, Floats16);
  const Floats16 r = (c - n * kLn2Hi) - n * kLn2Lo;
  const Floats16 result = ExpOfReduced(r) * std::bit_cast<Floats16>((ni + 127) << 23);
  return x < kExpMin ? Splat(0.0f) : (x > kExpMax ? Splat(INFINITY) : result);
}

// The largest of the lanes, by halves (a max is exact in any order).
inline float HorizontalMax(Floats16 lanes) {
  typedef float Floats8 __attribute__((vector_size(32)));
  typedef float Floats4 __attribute__((vector_size(16)));
  const Floats8 a8 = __builtin_shufflevector(lanes, lanes, 0, 1, 2, 3, 4, 5, 6, 7);
  const Floats8 b8 = __builtin_shufflevector(lanes, lanes, 8, 9, 10, 11, 12, 13, 14, 15);
  const Floats8 h8 = a8 > b8 ? a8 : b8;
  const Floats4 a4 = __builtin_shufflevector(h8, h8, 0, 1, 2, 3);
  const Floats4 b4 = __builtin_shufflevector(h8, h8, 4, 5, 6, 7);
  const Floats4 h4 = a4 > b4 ? a4 : b4;
  const float x = h4[0] > h4[2] ? h4[0] : h4[2];
  const float y = h4[1] > h4[3] ? h4[1] : h4[3];
  return x > y ? x : y;
}

// max(x[0..n)), -inf for n == 0.
inline float MaxOf(const float* x, int64_t n) {
  Floats16 lanes = Splat(-INFINITY);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Floats16 v = LoadFloats16(x + i);
    lanes = v > lanes ? v : lanes;
  }
  float m = HorizontalMax(lanes);
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

inline void StoreFloats16(float* p, Floats16 v) { std::memcpy(p, &v, sizeof(v)); }

// The lanes added pairwise (halves of 16, 8, 4, 2): an order fixed by the lanes alone.
inline float HorizontalSum(Floats16 lanes) {
  typedef float Floats8 __attribute__((vector_size(32)));
  typedef float Floats4 __attribute__((vector_size(16)));
  const Floats8 h8 = __builtin_shufflevector(lanes, lanes, 0, 1, 2, 3, 4, 5, 6, 7) +
                     __builtin_shufflevector(lanes, lanes, 8, 9, 10, 11, 12, 13, 14, 15);
  const Floats4 h4 =
      __builtin_shufflevector(h8, h8, 0, 1, 2, 3) + __builtin_shufflevector(h8, h8, 4, 5, 6, 7);
  return (h4[0] + h4[2]) + (h4[1] + h4[3]);
}

// Σ a[i]·b[i] in 16 lanes, then HorizontalSum: the order is fixed by n alone. (A plain running
// sum is one chain of n dependent additions, which a strict, non-reassociating build cannot
// vectorise.)
inline float Dot(const float* a, const float* b, int64_t n) {
  Floats16 lanes = Splat(0.0f);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) lanes += LoadFloats16(a + i) * LoadFloats16(b + i);
  float s = HorizontalSum(lanes);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// FastExp16 for x <= 0 (a softmax's shifted scores): neither the upper clamp nor the sign of
// the rounding to test; the same results there.
inline Floats16 FastExpNonPositive16(Floats16 x) {
  const Floats16 c = x < kExpMin ? Splat(kExpMin) : x;
  const Floats16 t = c * kLog2e;
  const Ints16 ni = __builtin_convertvector(t - 0.5f, Ints16);
  const Floats16 n = __builtin_convertvector(ni, Floats16);
  const Floats16 r = (c - n * kLn2Hi) - n * kLn2Lo;
  const Floats16 result = ExpOfReduced(r) * std::bit_cast<Floats16>((ni + 127) << 23);
  return x < kExpMin ? Splat(0.0f) : result;
}

// Σ exp(x[i] - shift) for x[i] <= shift: the softmax denominator.
inline float SumExp(const float* x, int64_t n, float shift) {
  Floats16 lanes = Splat(0.0f);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) lanes += FastExpNonPositive16(LoadFloats16(x + i) - shift);
  float s = HorizontalSum(lanes);
  for (; i < n; ++i) s += FastExp(x[i] - shift);
  return s;
}

inline float Swish(float x) { return x / (1.0f + FastExp(-x)); }
inline Floats16 Swish16(Floats16 x) { return x / (1.0f + FastExp16(-x)); }

inline float GeluTanh(float x) {
  // 0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³))), with tanh(u) = 1 - 2 / (1 + e^{2u})
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  const float t = 1.0f - 2.0f / (1.0f + FastExp(2.0f * u));
  return 0.5f * x * (1.0f + t);
}

inline float Gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f)); }

}  // namespace transerve::ops::cpu
