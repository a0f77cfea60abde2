// out = LayerNorm(x + residual) * gamma + beta (residual optional, the sum optionally kept): one
// block per row, two reductions (mean, then the variance around it, as the CPU backend and PyTorch
// compute it).
#include <cstdint>

#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/launch.h"
#include "model/ops/cuda/stream.h"

namespace transerve::cuda {
namespace {

constexpr int kThreads = 256;

__device__ float BlockSum(float v, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = 0.0f;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kThreads / 32; ++w) total += shared[w];
    shared[0] = total;
  }
  __syncthreads();
  total = shared[0];
  __syncthreads();  // shared[] is reused by the next reduction
  return total;
}

__global__ void AddLayerNormKernel(const float* x, const float* residual, const float* gamma,
                                   const float* beta, int64_t d, float eps, float* sum,
                                   float* out) {
  __shared__ float shared[kThreads / 32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * d;
  const float* rr = residual != nullptr ? residual + row * d : nullptr;
  float* o = out + row * d;
  float* s = sum != nullptr ? sum + row * d : nullptr;
  auto at = [&](int64_t i) { return rr != nullptr ? xr[i] + rr[i] : xr[i]; };
  float total = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += kThreads) total += at(i);
  const float mean = BlockSum(total, shared) / static_cast<float>(d);
  float squares = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += kThreads) {
    const float c = at(i) - mean;
    squares += c * c;
  }
  const float inv_std = rsqrtf(BlockSum(squares, shared) / static_cast<float>(d) + eps);
  // Each element is read before its own writes (by the same thread), so out and sum may alias
  // x or residual.
  for (int64_t i = threadIdx.x; i < d; i += kThreads) {
    const float v = at(i);
    if (s != nullptr) s[i] = v;
    o[i] = (v - mean) * inv_std * gamma[i] + beta[i];
  }
}

}  // namespace

int AddLayerNormF32(const float* x, const float* residual, const float* gamma, const float* beta,
                    int64_t rows, int64_t d, float eps, float* sum, float* out) {
  if (rows == 0) return 0;
  Launch(AddLayerNormKernel, dim3(static_cast<unsigned>(rows)), dim3(kThreads), 0, Stream(), x,
         residual, gamma, beta, d, eps, sum, out);
  return Check(cudaGetLastError(), "add_layer_norm kernel");
}

}  // namespace transerve::cuda
