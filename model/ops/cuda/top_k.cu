// The candidates of each logits row on the device, so a decoder step copies back k tokens per
// row instead of the whole vocabulary. One block per row reads the row once: each thread keeps
// the running log-softmax normaliser (max and rescaled sum) over its allowed tokens and, when k
// is at most kLocalK (twice the beam: beams up to the server's default limit of 8), its own k
// best; k block-wide arg-max rounds over the threads' lists then pick the row's k best. A
// larger k falls back to k passes over the row.
#include <cfloat>
#include <cstdint>

#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/launch.h"
#include "model/ops/cuda/stream.h"

namespace transerve::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kLocalK = 16;

struct Best {
  float value;
  int32_t token;
};

constexpr Best kNone{-FLT_MAX, INT32_MAX};

// Higher value wins; ties go to the lower id (the CPU backend's order).
__device__ Best Better(Best a, Best b) {
  if (a.value != b.value) return a.value > b.value ? a : b;
  return a.token < b.token ? a : b;
}

__device__ bool Before(Best a, Best b) {
  return a.value > b.value || (a.value == b.value && a.token < b.token);
}

// The block's best of every thread's `mine`, for every thread.
__device__ Best BlockBest(Best mine, Best* shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const Best other{__shfl_down_sync(0xffffffffu, mine.value, offset),
                     __shfl_down_sync(0xffffffffu, mine.token, offset)};
    mine = Better(mine, other);
  }
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = mine;
  __syncthreads();
  Best best = shared[0];
  for (int w = 1; w < kWarps; ++w) best = Better(best, shared[w]);
  __syncthreads();
  return best;
}

// A running normaliser: the largest logit seen and the sum of exp(logit - max).
struct Normaliser {
  float max;
  float sum;
};

__device__ Normaliser Merge(Normaliser a, Normaliser b) {
  const float max = fmaxf(a.max, b.max);
  return {max, a.sum * expf(a.max - max) + b.sum * expf(b.max - max)};
}

__global__ void TopKKernel(const float* logits, int32_t vocab, const int32_t* ks,
                           const uint8_t* ban_eos, int32_t pad, int32_t eos, int32_t max_k,
                           int32_t* tokens, float* log_probs) {
  __shared__ Normaliser normalisers[kWarps];
  __shared__ Best best_shared[kWarps];
  const int32_t row = blockIdx.x;
  const float* x = logits + static_cast<int64_t>(row) * vocab;
  const bool ban = ban_eos[row] != 0;
  auto allowed = [&](int32_t t) { return t != pad && !(ban && t == eos); };
  const int32_t k = ks[row];
  const bool one_pass = k > 0 && k <= kLocalK;

  // One pass: the normaliser and, for a small k, this thread's k best (best first).
  Normaliser n{-FLT_MAX, 0.0f};
  Best local[kLocalK];
  int32_t kept = 0;
  for (int32_t t = threadIdx.x; t < vocab; t += kThreads) {
    if (!allowed(t)) continue;
    const float v = x[t];
    if (v > n.max) {
      n.sum = n.sum * expf(n.max - v) + 1.0f;
      n.max = v;
    } else {
      n.sum += expf(v - n.max);
    }
    if (!one_pass || (kept == k && !Before({v, t}, local[k - 1]))) continue;
    int32_t i = kept < k ? kept++ : k - 1;  // insertion: shift the worse ones down
    for (; i > 0 && Before({v, t}, local[i - 1]); --i) local[i] = local[i - 1];
    local[i] = {v, t};
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    n = Merge(n, {__shfl_down_sync(0xffffffffu, n.max, offset),
                  __shfl_down_sync(0xffffffffu, n.sum, offset)});
  }
  if (threadIdx.x % 32 == 0) normalisers[threadIdx.x / 32] = n;
  __syncthreads();
  Normaliser row_n = normalisers[0];
  for (int w = 1; w < kWarps; ++w) row_n = Merge(row_n, normalisers[w]);
  const float normaliser = row_n.max + logf(row_n.sum);

  // k rounds: the best head of the threads' lists wins and its owner moves to its next one.
  // With a large k, each round instead scans the row for the best token after the previous
  // pick in (value desc, id asc) order.
  int32_t head = 0;
  Best previous{FLT_MAX, -1};
  for (int32_t pick = 0; pick < k; ++pick) {
    Best mine = kNone;
    if (one_pass) {
      if (head < kept) mine = local[head];
    } else {
      for (int32_t t = threadIdx.x; t < vocab; t += kThreads) {
        const Best candidate{x[t], t};
        if (allowed(t) && Before(previous, candidate)) mine = Better(mine, candidate);
      }
    }
    const Best winner = BlockBest(mine, best_shared);
    if (one_pass && head < kept && winner.token == local[head].token) ++head;
    if (threadIdx.x == 0) {
      tokens[row * max_k + pick] = winner.token;
      log_probs[row * max_k + pick] = winner.value - normaliser;
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
