// Error bookkeeping shared by the plugin's primitives: the first failure of a call is kept
// (per thread) for TranserveCudaApi.last_error.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

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

}  // namespace transerve::cuda
