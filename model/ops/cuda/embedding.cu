// Token embeddings scaled, plus sinusoidal (or stored) positions: one block per row.
#include <cstdint>

#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/launch.h"
#include "model/ops/cuda/stream.h"

namespace transerve::cuda {
namespace {

__global__ void EmbedKernel(const float* table, const int32_t* ids, const int32_t* positions,
                            int64_t d, float scale, const float* position_table, float* out) {
  const int64_t row = blockIdx.x;
  const float* token = table + static_cast<int64_t>(ids[row]) * d;
  const float* position = position_table + static_cast<int64_t>(positions[row]) * d;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    out[row * d + i] = token[i] * scale + position[i];
  }
}

}  // namespace

int EmbedF32(const float* table, const int32_t* ids, const int32_t* positions, int64_t rows,
             int64_t d, float scale, const float* position_table, float* out) {
  if (rows == 0) return 0;
  auto* device_indices =
      static_cast<int32_t*>(Scratch(kEmbeddingIds, sizeof(int32_t) * 2 * rows, "embed: scratch"));
  if (device_indices == nullptr) return 1;
  const size_t bytes = sizeof(int32_t) * rows;
  if (UploadAsync(device_indices, {{ids, bytes}, {positions, bytes}}, "embed: upload ids")) {
    return 1;
  }
  Launch(EmbedKernel, dim3(static_cast<unsigned>(rows)), dim3(128), 0, Stream(), table,
         device_indices, device_indices + rows, d, scale, position_table, out);
  return Check(cudaGetLastError(), "embed kernel");
}

}  // namespace transerve::cuda
