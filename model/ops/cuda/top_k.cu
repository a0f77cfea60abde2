// The candidates of each logits row on the device, so a decoder step copies back k tokens per
// row instead of the whole vocabulary: one block per row computes the log-softmax normaliser
// over the allowed tokens, then selects the k best by k block-wide arg-max passes (k is small:
// 1 for greedy, 2 x beam for beam search).
#include <cfloat>
#include <cstdint>

#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/launch.h"
#include "model/ops/cuda/stream.h"

namespace transerve::cuda {
namespace {

constexpr int kThreads = 256;

struct Best {
  float value;
  int32_t token;
};

// Higher value wins; ties go to the lower id (the CPU backend's order).
__device__ Best Better(Best a, Best b) {
  if (a.value != b.value) return a.value > b.value ? a : b;
  return a.token < b.token ? a : b;
}

__global__ void TopKKernel(const float* logits, int32_t vocab, const int32_t* ks,
                           const uint8_t* ban_eos, int32_t pad, int32_t eos, int32_t max_k,
                           int32_t* tokens, float* log_probs) {
  __shared__ float reduce[kThreads / 32];
  __shared__ Best best_shared[kThreads / 32];
  const int32_t row = blockIdx.x;
  const float* x = logits + static_cast<int64_t>(row) * vocab;
  const bool ban = ban_eos[row] != 0;
  auto allowed = [&](int32_t t) { return t != pad && !(ban && t == eos); };

  // Normaliser: max, then sum of exp.
  float m = -FLT_MAX;
  for (int32_t t = threadIdx.x; t < vocab; t += kThreads) {
    if (allowed(t)) m = fmaxf(m, x[t]);
  }
  for (int offset = 16; offset > 0; offset /= 2)
    m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, offset));
  if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = m;
  __syncthreads();
  float max_value = reduce[0];
  for (int w = 1; w < kThreads / 32; ++w) max_value = fmaxf(max_value, reduce[w]);
  __syncthreads();
  float s = 0.0f;
  for (int32_t t = threadIdx.x; t < vocab; t += kThreads) {
    if (allowed(t)) s += expf(x[t] - max_value);
  }
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
  if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = s;
  __syncthreads();
  float sum = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) sum += reduce[w];
  const float normalizer = max_value + logf(sum);
  __syncthreads();

  // k passes; a token already chosen is excluded by value-and-id order (strictly after the
  // previous pick in (value desc, id asc) order).
  const int32_t k = ks[row];
  Best previous{FLT_MAX, -1};
  for (int32_t pick = 0; pick < k; ++pick) {
    Best best{-FLT_MAX, INT32_MAX};
    for (int32_t t = threadIdx.x; t < vocab; t += kThreads) {
      if (!allowed(t)) continue;
      const float v = x[t];
      const bool after_previous = v < previous.value || (v == previous.value && t > previous.token);
      if (after_previous) best = Better(best, {v, t});
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      Best other{__shfl_down_sync(0xffffffffu, best.value, offset),
                 __shfl_down_sync(0xffffffffu, best.token, offset)};
      best = Better(best, other);
    }
    if (threadIdx.x % 32 == 0) best_shared[threadIdx.x / 32] = best;
    __syncthreads();
    Best winner = best_shared[0];
    for (int w = 1; w < kThreads / 32; ++w) winner = Better(winner, best_shared[w]);
    __syncthreads();
    if (threadIdx.x == 0) {
      tokens[row * max_k + pick] = winner.token;
      log_probs[row * max_k + pick] = winner.value - normalizer;
    }
    previous = winner;
  }
}

}  // namespace

int TopKF32(const float* logits, int32_t rows, int32_t vocab, const int32_t* k,
            const uint8_t* ban_eos, int32_t pad, int32_t eos, int32_t max_k, int32_t* tokens,
            float* log_probs) {
  if (rows == 0) return 0;
  const size_t k_bytes = sizeof(int32_t) * rows;
  const size_t ban_bytes = sizeof(uint8_t) * rows;
  const size_t out_bytes = (sizeof(int32_t) + sizeof(float)) * static_cast<size_t>(rows) * max_k;
  // Layout: k | ban flags | outputs (aligned).
  const size_t ban_offset = k_bytes;
  const size_t out_offset = (k_bytes + ban_bytes + 15) / 16 * 16;
  char* data = static_cast<char*>(Scratch(kTopK, out_offset + out_bytes, "top_k: scratch"));
  if (data == nullptr || UploadAsync(data, {{k, k_bytes}, {ban_eos, ban_bytes}}, "top_k: upload")) {
    return 1;
  }
  auto* device_tokens = reinterpret_cast<int32_t*>(data + out_offset);
  auto* device_log_probs =
      reinterpret_cast<float*>(device_tokens + static_cast<size_t>(rows) * max_k);
  Launch(TopKKernel, dim3(rows), dim3(kThreads), 0, Stream(), logits, vocab,
         reinterpret_cast<const int32_t*>(data),
         reinterpret_cast<const uint8_t*>(data + ban_offset), pad, eos, max_k, device_tokens,
         device_log_probs);
  if (Check(cudaGetLastError(), "top_k kernel")) return 1;
  const size_t n = static_cast<size_t>(rows) * max_k;
  if (Check(cudaMemcpyAsync(tokens, device_tokens, sizeof(int32_t) * n, cudaMemcpyDeviceToHost,
                            Stream()),
            "top_k: download") ||
      Check(cudaMemcpyAsync(log_probs, device_log_probs, sizeof(float) * n, cudaMemcpyDeviceToHost,
                            Stream()),
            "top_k: download")) {
    return 1;
  }
  return SynchronizeStream("top_k: synchronize");  // the step's one wait: the chosen tokens
}

}  // namespace transerve::cuda
