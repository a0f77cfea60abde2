#include <cstdio>
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

void* DeviceScratch::Get(size_t bytes, const char* what) {
  if (bytes <= bytes_) return data_;
  if (data_ != nullptr) cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
  if (Check(cudaMalloc(&data_, 2 * bytes), what)) return nullptr;
  bytes_ = 2 * bytes;
  return data_;
}

cudaStream_t Stream() {
  static cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    return s;
  }();
  return stream;
}

cublasHandle_t Blas() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) cublasSetStream(h, Stream());
    return h;
  }();
  return handle;
}

}  // namespace transerve::cuda
