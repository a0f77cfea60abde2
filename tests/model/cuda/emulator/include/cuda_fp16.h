// Stand-in for cuda_fp16.h in the host emulator (../README.md): the half type and the one
// conversion model/ops/cuda uses, on the project's own binary16 rounding.
#pragma once

#include <cstdint>

#include "model/core/half.h"

struct __half {
  uint16_t bits;
};

inline __half __float2half_rn(float value) { return __half{transerve::FloatToHalf(value)}; }
inline float __half2float(__half value) { return transerve::HalfToFloat(value.bits); }
