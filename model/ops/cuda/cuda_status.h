// Error bookkeeping shared by the plugin's primitives: the first failure of a call is kept
// (per thread) for TranserveCudaApi.last_error, with what it means (last_error_kind).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace transerve::cuda {

// Records `what` with the CUDA error and returns 1; returns 0 for cudaSuccess.
int Check(cudaError_t error, const char* what);
int Check(cublasStatus_t status, const char* what);
const char* LastError();
int LastErrorKind();  // TRANSERVE_CUDA_ERROR_*

}  // namespace transerve::cuda
