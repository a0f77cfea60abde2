// Layer normalisation on the CPU, with the residual add of post-norm and pre-norm blocks.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "model/ops/cpu/cpu_ops.h"

namespace transerve::ops::cpu {
namespace {

// Row by row: s = x (+ residual); optionally kept in sum; out = LayerNorm(s) * gamma + beta.
// Each row's sum is formed in a buffer first, so out and sum may alias x or residual.
void ResidualLayerNorm(const Tensor& x, const Tensor* residual, const Tensor& gamma,
                       const Tensor& beta, float eps, float* sum, float* out) {
  const int64_t d = x.dim(-1);
  const int64_t rows = x.numel() / d;
  const float* xs = x.f32();
  const float* rs = residual != nullptr ? residual->f32() : nullptr;
  const float* g = gamma.f32();
  const float* b = beta.f32();
  std::vector<float> sum_row(static_cast<size_t>(d));
  for (int64_t i = 0; i < rows; ++i) {
    const float* xr = xs + i * d;
    float mean = 0.0f;
    for (int64_t j = 0; j < d; ++j) {
      sum_row[j] = rs != nullptr ? xr[j] + rs[i * d + j] : xr[j];
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
    if (sum != nullptr) std::copy(sum_row.begin(), sum_row.end(), sum + i * d);
    float* yr = out + i * d;
    for (int64_t j = 0; j < d; ++j) yr[j] = (sum_row[j] - mean) * inv * g[j] + b[j];
  }
}

void CheckSameShape(const char* op, const Tensor& x, const Tensor& residual) {
  if (x.shape() != residual.shape()) {
    throw std::invalid_argument(std::string(op) + ": " + x.ShapeString() + " vs " +
                                residual.ShapeString());
  }
}

}  // namespace

void AddLayerNorm(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                  float eps, Tensor* out) {
  CheckSameShape("AddLayerNorm", x, residual);
  if (out->f32() != x.f32() && out->f32() != residual.f32()) out->Resize(x.shape());
  ResidualLayerNorm(x, &residual, gamma, beta, eps, nullptr, out->f32());
}

void LayerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor* out) {
  if (out->f32() != x.f32()) out->Resize(x.shape());
  ResidualLayerNorm(x, nullptr, gamma, beta, eps, nullptr, out->f32());
}

void AddToLayerNorm(Tensor* x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor* out) {
  CheckSameShape("AddToLayerNorm", *x, residual);
  if (out->f32() != x->f32() && out->f32() != residual.f32()) out->Resize(x->shape());
  ResidualLayerNorm(*x, &residual, gamma, beta, eps, x->f32(), out->f32());
}

}  // namespace transerve::ops::cpu
