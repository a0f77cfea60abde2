// y = activation(x · wᵀ + bias). Float32 weights: one cuBLAS SGEMM, then one element-wise kernel
// for the bias and activation. Float16 weights carry their bias (plugin_abi.h): a conversion
// kernel, one tensor-core GEMM, and a kernel only for an activation.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/launch.h"
#include "model/ops/cuda/plugin_abi.h"
#include "model/ops/cuda/stream.h"

namespace transerve::cuda {
namespace {

__device__ float Activate(float v, int activation) {
  switch (activation) {
    case TRANSERVE_CUDA_SWISH:
      return v / (1.0f + expf(-v));
    case TRANSERVE_CUDA_RELU:
      return fmaxf(v, 0.0f);
    case TRANSERVE_CUDA_GELU:
      return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case TRANSERVE_CUDA_GELU_TANH:
      return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    default:
      return v;
  }
}

__global__ void BiasActivate(float* y, const float* bias, int64_t m, int64_t n, int activation) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m * n) return;
  const float v = y[i] + (bias != nullptr ? bias[i % n] : 0.0f);
  y[i] = Activate(v, activation);
}

// out [m, k + TRANSERVE_CUDA_HALF_BIAS_COLUMNS] = in [m, k] rounded to half, then two ones (they
// meet the weight's bias columns) and zeros.
__global__ void ToHalfWithOnes(const float* in, int64_t m, int64_t k, __half* out) {
  const int64_t width = k + TRANSERVE_CUDA_HALF_BIAS_COLUMNS;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m * width) return;
  const int64_t row = i / width, column = i % width;
  out[i] = column < k       ? __float2half_rn(in[row * k + column])
           : column < k + 2 ? __float2half_rn(1.0f)
                            : __float2half_rn(0.0f);
}

int BiasAndActivation(float* y, const float* bias, int64_t m, int64_t n, int activation) {
  if (bias == nullptr && activation == TRANSERVE_CUDA_IDENTITY) return 0;
  const int64_t total = m * n;
  const int threads = 256;
  Launch(BiasActivate, dim3(static_cast<unsigned>((total + threads - 1) / threads)), dim3(threads),
         0, Stream(), y, bias, m, n, activation);
  return Check(cudaGetLastError(), "linear: bias and activation kernel");
}

}  // namespace

int LinearF16W(const float* x, int64_t m, int64_t k, const void* w16, int64_t n, int activation,
               float* y) {
  if (m == 0 || n == 0) return 0;
  const int64_t width = k + TRANSERVE_CUDA_HALF_BIAS_COLUMNS;
  auto* x16 = static_cast<__half*>(
      Scratch(kHalfActivations, sizeof(__half) * m * width, "linear f16: scratch"));
  if (x16 == nullptr) return 1;
  Launch(ToHalfWithOnes, dim3(static_cast<unsigned>((m * width + 255) / 256)), dim3(256), 0,
         Stream(), x, m, k, x16);
  if (Check(cudaGetLastError(), "linear f16: conversion kernel")) return 1;
  // The same transposition as LinearF32, over the augmented inner dimension: the product adds
  // the bias.
  const float one = 1.0f, zero = 0.0f;
  if (Check(cublasGemmEx(Blas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                         static_cast<int>(width), &one, w16, CUDA_R_16F, static_cast<int>(width),
                         x16, CUDA_R_16F, static_cast<int>(width), &zero, y, CUDA_R_32F,
                         static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "linear f16: cublasGemmEx")) {
    return 1;
  }
  return BiasAndActivation(y, nullptr, m, n, activation);
}

int LinearF32(const float* x, int64_t m, int64_t k, const float* w, int64_t n, const float* bias,
              int activation, float* y) {
  if (m == 0 || n == 0) return 0;
  // Row-major y[m, n] = x[m, k] · w[n, k]ᵀ is column-major yᵀ[n, m] = w · xᵀ: w is a
  // column-major [k, n] matrix used transposed, x a column-major [k, m] one.
  const float one = 1.0f, zero = 0.0f;
  if (Check(cublasSgemm(Blas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                        static_cast<int>(k), &one, w, static_cast<int>(k), x, static_cast<int>(k),
                        &zero, y, static_cast<int>(n)),
            "linear: cublasSgemm")) {
    return 1;
  }
  return BiasAndActivation(y, bias, m, n, activation);
}

}  // namespace transerve::cuda
