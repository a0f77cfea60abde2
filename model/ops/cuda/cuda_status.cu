#include <string>

#include "model/ops/cuda/cuda_status.h"

namespace transerve::cuda {
namespace {

thread_local std::string last_error;
thread_local bool last_error_out_of_memory = false;

}  // namespace

int Check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return 0;
  // The runtime also keeps a failed call's error (a cudaMalloc out of memory, say) for the next
  // cudaGetLastError, which is how kernel launches are checked: read it now, or the next
  // launch would fail with it.
  cudaGetLastError();
  last_error = std::string(what) + ": " + cudaGetErrorString(error);
  last_error_out_of_memory = error == cudaErrorMemoryAllocation;
  return 1;
}

int Check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return 0;
  last_error = std::string(what) + ": " + cublasGetStatusString(status);
  last_error_out_of_memory = status == CUBLAS_STATUS_ALLOC_FAILED;
  return 1;
}

const char* LastError() { return last_error.c_str(); }
int LastErrorIsOutOfMemory() { return last_error_out_of_memory ? 1 : 0; }

}  // namespace transerve::cuda
