// Scalar math written so that GCC vectorises the loops that call it (no libm calls in the hot
// loops of activations and softmax).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace transerve::ops::cpu {

// exp(x) with a relative error below 2e-7 on the float range (Cody-Waite range reduction and a
// degree-6 polynomial). Inputs below -87.3 return 0, above 88.7 return +inf, like expf.
inline float FastExp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  const float clamped = std::fmin(std::fmax(x, -87.3f), 88.7f);
  // floor(v + 0.5) vectorises (vroundps) and, unlike the 1.5·2^23 trick, survives
  // -fassociative-math.
  const float n = std::floor(clamped * kLog2e + 0.5f);
  const float r = (clamped - n * kLn2Hi) - n * kLn2Lo;
  // exp(r) on [-ln2/2, ln2/2]
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  float result = p * scale;
  if (x < -87.3f) result = 0.0f;
  if (x > 88.7f) result = INFINITY;
  return result;
}

inline float Swish(float x) { return x / (1.0f + FastExp(-x)); }

inline float GeluTanh(float x) {
  // 0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³))), with tanh(u) = 1 - 2 / (1 + e^{2u})
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  const float t = 1.0f - 2.0f / (1.0f + FastExp(2.0f * u));
  return 0.5f * x * (1.0f + t);
}

inline float Gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f)); }

}  // namespace transerve::ops::cpu
