// The KV cache's two device jobs in a decoder step, each one kernel for every row of the step:
// appending the step's keys and values where each row's block has room, and copying the blocks
// that forked beams un-share (copy-on-write).
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

// As many copies as one launch's parameters carry: the tables travel by value, in the kernel's
// parameter space (4 KiB on every architecture), so copying needs no device memory and no
// upload, and cannot run out of memory.
constexpr int kCopiesPerLaunch = 96;

struct PrefixCopies {
  const float* from[kCopiesPerLaunch];
  float* to[kCopiesPerLaunch];
  int64_t floats[kCopiesPerLaunch];
};

// Block (copy, half): half 0 copies the keys, half 1 the values.
__global__ void CopyPrefixesKernel(PrefixCopies copies, int64_t values_offset) {
  const int copy = blockIdx.x;
  const int64_t shift = blockIdx.y * values_offset;
  const float* from = copies.from[copy] + shift;
  float* to = copies.to[copy] + shift;
  for (int64_t i = threadIdx.x; i < copies.floats[copy]; i += blockDim.x) to[i] = from[i];
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

int CopyKvPrefixesF32(int32_t count, const float* const* from, float* const* to,
                      const int64_t* floats, int64_t values_offset) {
  for (int32_t first = 0; first < count; first += kCopiesPerLaunch) {
    const int32_t n = count - first < kCopiesPerLaunch ? count - first : kCopiesPerLaunch;
    PrefixCopies copies;
    for (int32_t i = 0; i < n; ++i) {
      copies.from[i] = from[first + i];
      copies.to[i] = to[first + i];
      copies.floats[i] = floats[first + i];
    }
    Launch(CopyPrefixesKernel, dim3(n, 2), dim3(256), 0, Stream(), copies, values_offset);
    if (Check(cudaGetLastError(), "copy_kv_prefixes kernel")) return 1;
  }
  return 0;
}

}  // namespace transerve::cuda
