// Residual add + layer normalisation on the CPU.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "model/ops/cpu/cpu_ops.h"

namespace transerve::ops::cpu {

void AddLayerNorm(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                  float eps, Tensor* out) {
  if (x.shape() != residual.shape()) {
    throw std::invalid_argument("AddLayerNorm: " + x.ShapeString() + " vs " +
                                residual.ShapeString());
  }
  const int64_t d = x.dim(-1);
  const int64_t rows = x.numel() / d;
  const float* xs = x.f32();
  const float* rs = residual.f32();
  const float* g = gamma.f32();
  const float* b = beta.f32();
  if (out->f32() != xs && out->f32() != rs) out->Resize(x.shape());
  float* ys = out->f32();
  std::vector<float> sum_row(static_cast<size_t>(d));
  for (int64_t i = 0; i < rows; ++i) {
    const float* xr = xs + i * d;
    const float* rr = rs + i * d;
    float* yr = ys + i * d;
    float mean = 0.0f;
    for (int64_t j = 0; j < d; ++j) {
      sum_row[j] = xr[j] + rr[j];
      mean += sum_row[j];
    }
    mean /= static_cast<float>(d);
    float var = 0.0f;
    for (int64_t j = 0; j < d; ++j) {
      const float c = sum_row[j] - mean;
      var += c * c;
    }
    var /= static_cast<float>(d);
    const float inv = 1.0f / std::sqrt(var + eps);
    for (int64_t j = 0; j < d; ++j) yr[j] = (sum_row[j] - mean) * inv * g[j] + b[j];
  }
}

}  // namespace transerve::ops::cpu
