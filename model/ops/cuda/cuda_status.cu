#include <string>

#include "model/ops/cuda/cuda_status.h"

namespace transerve::cuda {
namespace {

thread_local std::string last_error;

}  // namespace

int Check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return 0;
  last_error = std::string(what) + ": " + cudaGetErrorString(error);
  return 1;
}

int Check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return 0;
  last_error = std::string(what) + ": " + cublasGetStatusString(status);
  return 1;
}

const char* LastError() { return last_error.c_str(); }

}  // namespace transerve::cuda
