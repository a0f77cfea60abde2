#include <string>

#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/plugin_abi.h"

namespace transerve::cuda {
namespace {

thread_local std::string last_error;
thread_local int last_error_kind = TRANSERVE_CUDA_ERROR_FAILED;

// The errors after which, in the runtime's own words (driver_types.h), "any further CUDA work
// will return the same error" and "the process must be terminated and relaunched".
bool IsSticky(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
      return true;
    default:
      return false;
  }
}

int KindOf(cudaError_t error) {
  if (error == cudaErrorMemoryAllocation) return TRANSERVE_CUDA_ERROR_OUT_OF_MEMORY;
  return IsSticky(error) ? TRANSERVE_CUDA_ERROR_DEVICE_LOST : TRANSERVE_CUDA_ERROR_FAILED;
}

}  // namespace

int Check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return 0;
  // The runtime also keeps a failed call's error (a cudaMalloc out of memory, say) for the next
  // cudaGetLastError, which is how kernel launches are checked: read it now, or the next
  // launch would fail with it.
  cudaGetLastError();
  last_error = std::string(what) + ": " + cudaGetErrorString(error);
  last_error_kind = KindOf(error);
  return 1;
}

int Check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return 0;
  last_error = std::string(what) + ": " + cublasGetStatusString(status);
  // cuBLAS names no CUDA error; a broken context shows in the runtime's (sticky) last error.
  last_error_kind = status == CUBLAS_STATUS_ALLOC_FAILED ? TRANSERVE_CUDA_ERROR_OUT_OF_MEMORY
                    : IsSticky(cudaPeekAtLastError())    ? TRANSERVE_CUDA_ERROR_DEVICE_LOST
                                                         : TRANSERVE_CUDA_ERROR_FAILED;
  return 1;
}

const char* LastError() { return last_error.c_str(); }
int LastErrorKind() { return last_error_kind; }

}  // namespace transerve::cuda
