// Single-query attention over lists of key/value segments, the CUDA counterpart of the CPU
// backend's AttendOne: packed encoder self-attention, cached decoder self-attention (segments =
// KV blocks) and cross-attention are all this kernel with different segment lists.
// One block per (query row, head): a thread per position computes its score, block-wide max and
// sum, then groups of threads split the positions and each thread of a group owns an output
// dimension (so a head of 64 keeps all 128 threads busy, reading values in whole lines).
#include <algorithm>
#include <cfloat>
#include <cstdint>

#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/launch.h"
#include "model/ops/cuda/plugin_abi.h"
#include "model/ops/cuda/stream.h"

namespace transerve::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

__device__ float BlockReduce(float v, float* shared, bool is_max) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_down_sync(0xffffffffu, v, offset);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = shared[0];
    for (int w = 1; w < kWarps; ++w) {
      total = is_max ? fmaxf(total, shared[w]) : total + shared[w];
    }
    shared[0] = total;
  }
  __syncthreads();
  const float result = shared[0];
  __syncthreads();
  return result;
}

__global__ void AttendKernel(const float* q, int64_t q_stride, int32_t heads, int32_t head_dim,
                             const TranserveCudaKvSegment* segments, const int32_t* row_segments,
                             float scale, float* out, int64_t out_stride, float* head_mean,
                             int64_t mean_stride, int32_t mean_heads) {
  // Shared: this row's scores (one per position), kWarps reduction slots, the query, and the
  // output's partial sums (kThreads).
  const int row = blockIdx.x, head = blockIdx.y;
  const int first = row_segments[row], last = row_segments[row + 1];
  int positions = 0;
  for (int s = first; s < last; ++s) positions += segments[s].count;
  float* scores = DynamicShared<float>();
  float* reduce = scores + positions;
  float* query = reduce + kWarps;
  float* partial = query + head_dim;
  for (int i = threadIdx.x; i < head_dim; i += kThreads) {
    query[i] = q[row * q_stride + head * head_dim + i];
  }
  __syncthreads();

  // Scores: a thread per position, reading its key's consecutive floats (L1 keeps the lines
  // between iterations). A warp per position would read whole lines at once but costs five
  // shuffles a position, and doubled the CI emulator's parity time; a GPU must show it pays
  // before it replaces this.
  float local_max = -FLT_MAX;
  for (int p = threadIdx.x; p < positions; p += kThreads) {
    int s = first, offset = p;
    while (offset >= segments[s].count) offset -= segments[s++].count;
    const float* key = segments[s].keys + offset * segments[s].stride + head * head_dim;
    float dot = 0.0f;
    for (int i = 0; i < head_dim; ++i) dot += query[i] * key[i];
    scores[p] = dot * scale;
    local_max = fmaxf(local_max, scores[p]);
  }
  __syncthreads();
  const float max_score = BlockReduce(local_max, reduce, true);
  float local_sum = 0.0f;
  for (int p = threadIdx.x; p < positions; p += kThreads) {
    scores[p] = expf(scores[p] - max_score);
    local_sum += scores[p];
  }
  const float inv_sum = 1.0f / BlockReduce(local_sum, reduce, false);
  for (int p = threadIdx.x; p < positions; p += kThreads) {
    scores[p] *= inv_sum;
    if (head_mean != nullptr && head < mean_heads) {
      atomicAdd(head_mean + row * mean_stride + p, scores[p] / mean_heads);
    }
  }
  __syncthreads();

  // Output: `groups` groups of head_dim threads; group g sums positions g, g + groups, ... of
  // each segment for its thread's dimension (consecutive threads, consecutive floats of a
  // value), then the groups' partial sums are added.
  const int groups = head_dim <= kThreads ? kThreads / head_dim : 1;
  const int group = threadIdx.x / head_dim;
  for (int i = threadIdx.x % head_dim; i < head_dim && group < groups; i += kThreads) {
    float acc = 0.0f;
    for (int s = first, base = 0; s < last; base += segments[s++].count) {
      const TranserveCudaKvSegment segment = segments[s];
      const float* v = segment.values + head * head_dim + i;
      for (int j = group; j < segment.count; j += groups) {
        acc += scores[base + j] * v[j * segment.stride];
      }
    }
    if (groups == 1) {
      out[row * out_stride + head * head_dim + i] = acc;
    } else {
      partial[threadIdx.x] = acc;
    }
  }
  if (groups == 1) return;
  __syncthreads();
  for (int i = threadIdx.x; i < head_dim; i += kThreads) {
    float acc = 0.0f;
    for (int g = 0; g < groups; ++g) acc += partial[g * head_dim + i];
    out[row * out_stride + head * head_dim + i] = acc;
  }
}

}  // namespace

int AttendF32(const float* q, int64_t q_stride, int32_t rows, int32_t heads, int32_t head_dim,
              const TranserveCudaKvSegment* segments, const int32_t* row_segments, float scale,
              float* out, int64_t out_stride, float* head_mean, int64_t mean_stride,
              int32_t mean_heads) {
  if (rows == 0) return 0;
  const int32_t total_segments = row_segments[rows];
  const size_t segment_bytes = static_cast<size_t>(total_segments) * sizeof(TranserveCudaKvSegment);
  const size_t offset_bytes = static_cast<size_t>(rows + 1) * sizeof(int32_t);
  void* tables = Scratch(kAttentionTables, segment_bytes + offset_bytes, "attention: scratch");
  if (tables == nullptr ||
      UploadAsync(tables, {{segments, segment_bytes}, {row_segments, offset_bytes}},
                  "attention: upload segments")) {
    return 1;
  }
  int longest = 0;
  for (int32_t r = 0; r < rows; ++r) {
    int positions = 0;
    for (int32_t s = row_segments[r]; s < row_segments[r + 1]; ++s) positions += segments[s].count;
    longest = std::max(longest, positions);
  }
  if (head_mean != nullptr &&
      Check(cudaMemsetAsync(head_mean, 0, sizeof(float) * rows * mean_stride, Stream()),
            "attention: clear head means")) {
    return 1;
  }
  const auto* device_segments = static_cast<const TranserveCudaKvSegment*>(tables);
  const auto* device_offsets =
      reinterpret_cast<const int32_t*>(static_cast<const char*>(tables) + segment_bytes);
  const size_t shared = sizeof(float) * (longest + kWarps + head_dim + kThreads);
  Launch(AttendKernel, dim3(rows, heads), dim3(kThreads), shared, Stream(), q, q_stride, heads,
         head_dim, device_segments, device_offsets, scale, out, out_stride, head_mean, mean_stride,
         mean_heads);
  return Check(cudaGetLastError(), "attention kernel");
}

}  // namespace transerve::cuda
