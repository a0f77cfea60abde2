// Kernel launches and dynamic shared memory go through these two helpers instead of `<<<...>>>`
// and `extern __shared__`, so the same kernel sources also compile as plain C++ against the host
// emulator that runs them in CI without a GPU (tests/model/cuda/emulator/, docs/cuda.md).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace transerve::cuda {

#ifdef TRANSERVE_CUDA_EMULATION
using transerve_cuda_emulator::Launch;

template <typename T>
T* DynamicShared() {
  return static_cast<T*>(transerve_cuda_emulator::DynamicSharedMemory());
}
#else
// kernel<<<grid, block, shared_bytes, stream>>>(args...); errors surface in cudaGetLastError.
template <typename... Params, typename... Args>
void Launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
            cudaStream_t stream, Args... args) {
  // clang-format would split the chevrons, which nvcc then rejects.
  // clang-format off
  kernel<<<grid, block, shared_bytes, stream>>>(args...);
  // clang-format on
}

// The block's dynamic shared memory (the launch's shared_bytes), 16-byte aligned.
template <typename T>
__device__ T* DynamicShared() {
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  return reinterpret_cast<T*>(dynamic_shared);
}
#endif

}  // namespace transerve::cuda
