// Error bookkeeping shared by the plugin's primitives: the first failure of a call is kept
// (per thread) for TranserveCudaApi.last_error.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <initializer_list>

namespace transerve::cuda {

// Records `what` with the CUDA error and returns 1; returns 0 for cudaSuccess.
int Check(cudaError_t error, const char* what);
int Check(cublasStatus_t status, const char* what);
const char* LastError();

// A device buffer that only grows, for per-call tables and staging copies; the plugin's one
// stream orders its uses.
class DeviceScratch {
 public:
  // At least `bytes` of device memory, or nullptr with the error recorded under `what`.
  void* Get(size_t bytes, const char* what);

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The plugin's stream and cuBLAS handle (created on first use, device 0).
cudaStream_t Stream();
cublasHandle_t Blas();

// Waits for the stream; 1 with the error recorded under `what` on failure. Every wait goes
// through here, since it also frees the upload staging area below.
int SynchronizeStream(const char* what);

// Uploads of small per-call tables (ids, segment lists, pointers) without waiting for them:
// the bytes are staged in pinned host memory, whose copy the stream performs later, and the
// area is reused only once the stream has been waited for (each decoder step ends with one,
// when the chosen tokens are read). Queues the copy of `bytes` from `parts` (concatenated) to
// `device`; 1 with the error recorded under `what` on failure.
struct HostPart {
  const void* data;
  size_t bytes;
};
int UploadAsync(void* device, std::initializer_list<HostPart> parts, const char* what);

}  // namespace transerve::cuda
