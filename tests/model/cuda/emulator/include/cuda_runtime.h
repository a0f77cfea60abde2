// Stand-in for the CUDA runtime header when the CUDA backend's sources are compiled as plain C++
// against the host emulator (../README.md). It declares only what model/ops/cuda uses; the
// definitions are in ../runtime.cc (memory, copies, errors) and ../grid.cc (running kernels).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

// Kernel qualifiers are plain C++ here. One block runs at a time in the whole process (grids
// are serialised), so a function-local static is exactly one block's shared memory.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

// The running emulated thread's coordinates (set by the scheduler before each switch to it).
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  // The "sticky" errors: once one happens the context is broken for good.
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchTimeout = 702,
  cudaErrorAssert = 710,
  cudaErrorHardwareStackError = 714,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorInvalidAddressSpace = 717,
  cudaErrorInvalidPc = 718,
  cudaErrorLaunchFailure = 719,
};

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
};

using cudaStream_t = struct TranserveEmulatedStream*;
constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaHostAllocDefault = 0;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major;
  int minor;
};

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaMalloc(void** ptr, size_t bytes);
template <typename T>
cudaError_t cudaMalloc(T** ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFree(void* ptr);
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);

// Device-side intrinsics.
void __syncthreads();

namespace transerve_cuda_emulator {

// Lane `lane + delta` of the caller's warp's `bits` (the caller's own where that is past the
// warp); every lane named in `mask` must call it.
uint64_t ShuffleDown(uint64_t bits, unsigned delta, unsigned mask, int width);

}  // namespace transerve_cuda_emulator

template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(uint64_t));
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = transerve_cuda_emulator::ShuffleDown(bits, delta, mask, width);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

// One block runs at a time and its threads never preempt each other between two barriers, so a
// read-modify-write is atomic here.
inline float atomicAdd(float* address, float value) {
  const float old = *address;
  *address = old + value;
  return old;
}

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

namespace transerve_cuda_emulator {

// Runs `body(context)` once for every thread of every block of the grid (blocks one after
// another, a block's threads as fibers switching at barriers and shuffles; one grid at a time
// in the process, under the device's lock). A configuration
// the hardware refuses is refused here the same way, for cudaGetLastError.
void RunGrid(dim3 grid, dim3 block, size_t shared_bytes, void (*body)(void*), void* context);

// The running block's dynamic shared memory (filled with a NaN pattern at each block's start,
// as real shared memory is not cleared).
void* DynamicSharedMemory();

// Counts one operation (kernel, copy, memset, GEMM) queued on `stream` (nullptr: the legacy
// default stream); aborts for a destroyed stream. The counts are what
// transerve_emulator_stream_work (runtime.cc) reports to tests.
void CountWork(cudaStream_t stream);

// Aborts with `what` unless `ptr` is null or points into live device memory: a host pointer
// handed to a kernel would fault on a GPU, while the emulator could silently read it.
void RequireDevicePointer(const void* ptr, const char* what);

template <typename T>
void CheckKernelArgument(const T& value) {
  if constexpr (std::is_pointer_v<T>) RequireDevicePointer(value, "kernel argument");
}

template <typename... Params, typename... Args>
void Launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
            cudaStream_t stream, Args... args) {
  CountWork(stream);
  struct Call {
    void (*kernel)(Params...);
    std::tuple<Params...> params;
  };
  Call call{kernel, std::tuple<Params...>(static_cast<Params>(args)...)};
  std::apply([](const auto&... p) { (CheckKernelArgument(p), ...); }, call.params);
  RunGrid(
      grid, block, shared_bytes,
      [](void* c) {
        auto* call = static_cast<Call*>(c);
        std::apply(call->kernel, call->params);
      },
      &call);
}

}  // namespace transerve_cuda_emulator
