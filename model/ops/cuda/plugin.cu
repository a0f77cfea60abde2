// libtranserve_cuda.so: the CUDA backend, loaded by the engine with dlopen
// (model/ops/cuda_plugin.h). The CUDA runtime is linked statically so the plugin needs only
// the driver (libcuda.so) at run time, which the runtime itself looks up.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "model/ops/cuda/caching_allocator.h"
#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/launch.h"
#include "model/ops/cuda/plugin_abi.h"
#include "model/ops/cuda/stream.h"

namespace transerve::cuda {
int LinearF32(const float* x, int64_t m, int64_t k, const float* w, int64_t n, const float* bias,
              int activation, float* y);
int AddLayerNormF32(const float* x, const float* residual, const float* gamma, const float* beta,
                    int64_t rows, int64_t d, float eps, float* sum, float* out);
int AttendF32(const float* q, int64_t q_stride, int32_t rows, int32_t heads, int32_t head_dim,
              const TranserveCudaKvSegment* segments, const int32_t* row_segments, float scale,
              float* out, int64_t out_stride, float* head_mean, int64_t mean_stride,
              int32_t mean_heads);
int EmbedF32(const float* table, const int32_t* ids, const int32_t* positions, int64_t rows,
             int64_t d, float scale, const float* position_table, float* out);
int LinearF16W(const float* x, int64_t m, int64_t k, const void* w16, int64_t n, int activation,
               float* y);
int TopKF32(const float* logits, int32_t rows, int32_t vocab, const int32_t* k,
            const uint8_t* ban_eos, int32_t pad, int32_t eos, int32_t max_k, int32_t* tokens,
            float* log_probs);
int AppendKvF32(const float* qkv, int32_t rows, int64_t d, float* const* key_rows,
                float* const* value_rows);
int CopyKvPrefixesF32(int32_t count, const float* const* from, float* const* to,
                      const int64_t* floats, int64_t values_offset);
}  // namespace transerve::cuda

namespace {

void Write(char* message, size_t capacity, const char* text) {
  if (message == nullptr || capacity == 0) return;
  std::snprintf(message, capacity, "%s", text);
}

void WriteError(char* message, size_t capacity, const char* what, cudaError_t error) {
  if (message == nullptr || capacity == 0) return;
  std::snprintf(message, capacity, "%s: %s (%s)", what, cudaGetErrorString(error),
                cudaGetErrorName(error));
}

__global__ void ScaleAndAdd(const float* x, const float* y, float a, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

int Copy(void* dst, const void* src, size_t bytes, int direction) {
  const cudaMemcpyKind kind = direction == TRANSERVE_CUDA_HOST_TO_DEVICE ? cudaMemcpyHostToDevice
                              : direction == TRANSERVE_CUDA_DEVICE_TO_HOST
                                  ? cudaMemcpyDeviceToHost
                                  : cudaMemcpyDeviceToDevice;
  if (transerve::cuda::Check(cudaMemcpyAsync(dst, src, bytes, kind, transerve::cuda::Stream()),
                             "copy")) {
    return 1;
  }
  // A device copy stays on the stream. A host one waits: the caller may read the result, or
  // reuse its pageable source, at once.
  if (kind == cudaMemcpyDeviceToDevice) return 0;
  return transerve::cuda::SynchronizeStream("copy: synchronize");
}

int Synchronize() { return transerve::cuda::SynchronizeStream("synchronize"); }

// A primitive as the ABI calls it: on the stream it names, which is the calling thread's
// current one for the call, and whose lock the call holds (a stream's scratch and staging are
// used by one call at a time).
template <auto Fn>
struct OnStream;

template <typename... Args, int (*Fn)(Args...)>
struct OnStream<Fn> {
  static int Call(TranserveCudaStream* stream, Args... args) {
    const transerve::cuda::StreamCall call(stream);
    return Fn(args...);
  }
};

void* Allocate(TranserveCudaStream* stream, size_t bytes) {
  return transerve::cuda::CachedAllocate(
      stream != nullptr ? stream : transerve::cuda::DefaultStream(), bytes);
}

using transerve::cuda::AddLayerNormF32;
using transerve::cuda::AppendKvF32;
using transerve::cuda::AttendF32;
using transerve::cuda::CopyKvPrefixesF32;
using transerve::cuda::EmbedF32;
using transerve::cuda::LinearF16W;
using transerve::cuda::LinearF32;
using transerve::cuda::TopKF32;

// In the ABI's order, one entry per line. The allocator has its own lock; last_error is per
// thread.
// clang-format off
const TranserveCudaApi kApi = {TRANSERVE_CUDA_PLUGIN_ABI,
                               transerve::cuda::CreateStream,
                               transerve::cuda::DestroyStream,
                               Allocate,
                               transerve::cuda::CachedFree,
                               OnStream<Copy>::Call,
                               OnStream<Synchronize>::Call,
                               OnStream<LinearF32>::Call,
                               OnStream<AddLayerNormF32>::Call,
                               OnStream<AttendF32>::Call,
                               OnStream<EmbedF32>::Call,
                               OnStream<LinearF16W>::Call,
                               OnStream<TopKF32>::Call,
                               OnStream<AppendKvF32>::Call,
                               OnStream<CopyKvPrefixesF32>::Call,
                               transerve::cuda::LastError,
                               transerve::cuda::LastErrorKind};
// clang-format on

}  // namespace

extern "C" {

__attribute__((visibility("default"))) const TranserveCudaApi* transerve_cuda_api(void) {
  return &kApi;
}

__attribute__((visibility("default"))) int transerve_cuda_abi(void) {
  return TRANSERVE_CUDA_PLUGIN_ABI;
}

__attribute__((visibility("default"))) int transerve_cuda_probe(char* message, size_t capacity) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    // Without a GPU the runtime may answer "driver insufficient" rather than "no device": both
    // mean there is nothing to run on.
    WriteError(message, capacity, "no usable CUDA device", error);
    return 0;
  }
  if (count == 0) {
    Write(message, capacity, "no CUDA device");
    return 0;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    Write(message, capacity, "CUDA device 0: properties unavailable");
    return count;
  }
  if (message != nullptr && capacity > 0) {
    std::snprintf(message, capacity, "%s (compute capability %d.%d, %.1f GiB)", prop.name,
                  prop.major, prop.minor, static_cast<double>(prop.totalGlobalMem) / (1u << 30));
  }
  return count;
}

__attribute__((visibility("default"))) int transerve_cuda_self_test(char* message,
                                                                    size_t capacity) {
  const int n = 1 << 16;
  std::vector<float> x(n), y(n), out(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 7919LL) % 1013) / 101.0f - 5.0f;
    y[i] = static_cast<float>((i * 104729LL) % 997) / 97.0f - 5.0f;
  }
  float *dx = nullptr, *dy = nullptr, *dout = nullptr;
  const size_t bytes = n * sizeof(float);
  cudaError_t error = cudaMalloc(&dx, bytes);
  if (error == cudaSuccess) error = cudaMalloc(&dy, bytes);
  if (error == cudaSuccess) error = cudaMalloc(&dout, bytes);
  if (error == cudaSuccess) error = cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice);
  if (error == cudaSuccess) error = cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice);
  if (error == cudaSuccess) {
    transerve::cuda::Launch(ScaleAndAdd, dim3((n + 255) / 256), dim3(256), 0, nullptr, dx, dy, 1.5f,
                            dout, n);
    error = cudaGetLastError();
  }
  if (error == cudaSuccess) error = cudaMemcpy(out.data(), dout, bytes, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dout);
  if (error != cudaSuccess) {
    WriteError(message, capacity, "self-test kernel failed", error);
    return 0;
  }
  for (int i = 0; i < n; ++i) {
    const float want = 1.5f * x[i] + y[i];
    // The device may fuse the multiply-add (one rounding instead of two).
    if (!(std::fabs(out[i] - want) <= 1e-6f * (std::fabs(want) + 1.0f))) {
      if (message != nullptr && capacity > 0) {
        std::snprintf(message, capacity, "self-test: element %d is %g, expected %g", i, out[i],
                      1.5f * x[i] + y[i]);
      }
      return 0;
    }
  }
  Write(message, capacity, "ok");
  return 1;
}

}  // extern "C"
