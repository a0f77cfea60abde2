// IEEE binary16 and bfloat16 <-> binary32 conversions, header-only so every user (the
// checkpoint readers and writer, the CUDA emulator's half type, the CPU kernels' bfloat16
// packing) shares one implementation without a link dependency.
#pragma once

#include <bit>
#include <cstdint>

namespace transerve {

// Round to nearest even; overflow gives infinity, NaN stays a (quiet) NaN with the sign kept.
inline uint16_t FloatToHalf(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {
    if (abs == 0x7F800000u) return sign | 0x7C00u;
    // NaN: keep the top payload bits and force the quiet bit so it cannot turn into infinity.
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  }
  const int exp = static_cast<int>(abs >> 23) - 127;
  if (exp > 15) return sign | 0x7C00u;  // Beyond the largest finite half even before rounding.
  uint32_t half;
  uint32_t rest;     // The bits dropped by the shift.
  uint32_t halfway;  // Value of `rest` exactly halfway between two halves.
  if (exp >= -14) {
    // Normal: keep 10 of the 23 mantissa bits. A rounding carry may ripple into the exponent,
    // which is exactly right (up to and including overflow to infinity, 0x7C00).
    half = (static_cast<uint32_t>(exp + 15) << 10) | ((abs & 0x7FFFFFu) >> 13);
    rest = abs & 0x1FFFu;
    halfway = 0x1000u;
  } else if (exp >= -25) {
    // Subnormal half: count units of 2^-24. The value is mant24 * 2^(exp - 23).
    const uint32_t mant24 = (abs & 0x7FFFFFu) | 0x800000u;
    const int shift = -exp - 1;  // 14..24
    half = mant24 >> shift;
    rest = mant24 & ((1u << shift) - 1);
    halfway = 1u << (shift - 1);
  } else {
    return sign;  // Below half of the smallest subnormal: rounds to zero.
  }
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

// Exact: subnormals, infinities and NaN payloads preserved.
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // Inf, or NaN with its payload kept.
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // Rebias 15 -> 127.
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal: mant * 2^-24; both factors are exact in float, so the product is exact.
    const float magnitude = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(bits);
}

// bfloat16: the top 16 bits of a float, rounded to nearest even; a carry into the exponent (up
// to infinity) is the correct result; NaN stays a quiet NaN (truncating could clear every
// payload bit and give infinity).
inline uint16_t FloatToBFloat16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

// Exact.
inline float BFloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace transerve
