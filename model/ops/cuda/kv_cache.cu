// Appending a decoder step's keys and values to the KV cache: one kernel for every row of the
// step, each writing its key and value row where its cache block has room.
#include <cstdint>

#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/launch.h"
#include "model/ops/cuda/stream.h"

namespace transerve::cuda {
namespace {

// destinations: the rows' key pointers, then their value pointers.
__global__ void AppendKvKernel(const float* qkv, int64_t d, float* const* destinations,
                               int32_t rows) {
  const int32_t row = blockIdx.x;
  const float* source = qkv + static_cast<int64_t>(row) * 3 * d;
  float* key = destinations[row];
  float* value = destinations[rows + row];
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    key[i] = source[d + i];
    value[i] = source[2 * d + i];
  }
}

}  // namespace

int AppendKvF32(const float* qkv, int32_t rows, int64_t d, float* const* key_rows,
                float* const* value_rows) {
  if (rows == 0) return 0;
  const size_t table_bytes = sizeof(float*) * rows;
  auto* table =
      static_cast<float**>(Scratch(kKvDestinations, 2 * table_bytes, "append_kv: scratch"));
  if (table == nullptr || UploadAsync(table, {{key_rows, table_bytes}, {value_rows, table_bytes}},
                                      "append_kv: upload destinations")) {
    return 1;
  }
  Launch(AppendKvKernel, dim3(rows), dim3(128), 0, Stream(), qkv, d,
         static_cast<float* const*>(table), rows);
  return Check(cudaGetLastError(), "append_kv kernel");
}

}  // namespace transerve::cuda
