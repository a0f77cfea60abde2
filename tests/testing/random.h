// Random test data (never zeros) shared by the engine tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "model/core/tensor.h"

namespace transerve::testing {

// Uniform values in [-scale, scale] with the sign drawn separately and magnitudes of at least
// scale/100, so no element is zero.
inline std::vector<float> RandomFloats(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> magnitude(0.01f * scale, scale);
  std::bernoulli_distribution sign(0.5);
  std::vector<float> v(n);
  for (float& x : v) x = sign(rng) ? magnitude(rng) : -magnitude(rng);
  return v;
}

inline Tensor RandomTensor(std::vector<int64_t> shape, std::mt19937& rng, float scale = 1.0f) {
  const size_t n = static_cast<size_t>(NumElements(shape));
  return Tensor::FromFloats(std::move(shape), RandomFloats(n, rng, scale));
}

}  // namespace transerve::testing
