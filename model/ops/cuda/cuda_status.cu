#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "model/ops/cuda/cuda_status.h"

namespace transerve::cuda {
namespace {

thread_local std::string last_error;

// The pinned staging area of UploadAsync: filled front to back between two stream waits.
struct Staging {
  char* data = nullptr;
  size_t capacity = 0;
  size_t used = 0;
};

Staging& TheStaging() {
  static Staging staging;
  return staging;
}

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

int SynchronizeStream(const char* what) {
  if (Check(cudaStreamSynchronize(Stream()), what)) return 1;
  TheStaging().used = 0;  // every queued copy has read its bytes
  return 0;
}

int UploadAsync(void* device, std::initializer_list<HostPart> parts, const char* what) {
  size_t bytes = 0;
  for (const HostPart& part : parts) bytes += part.bytes;
  if (bytes == 0) return 0;
  Staging& staging = TheStaging();
  const size_t start = (staging.used + 15) / 16 * 16;
  if (start + bytes > staging.capacity) {
    // Full (rare: only a step with unusually many uploads): wait for the queued copies, then
    // start over, growing the area when even an empty one is too small.
    if (SynchronizeStream(what)) return 1;
    if (bytes > staging.capacity) {
      if (staging.data != nullptr) cudaFreeHost(staging.data);
      staging.data = nullptr;
      staging.capacity = 0;
      const size_t capacity = std::max<size_t>(size_t{1} << 20, 2 * bytes);
      void* data = nullptr;
      if (Check(cudaHostAlloc(&data, capacity, cudaHostAllocDefault), what)) return 1;
      staging.data = static_cast<char*>(data);
      staging.capacity = capacity;
    }
    return UploadAsync(device, parts, what);
  }
  char* host = staging.data + start;
  for (const HostPart& part : parts) {
    std::memcpy(host, part.data, part.bytes);
    host += part.bytes;
  }
  staging.used = start + bytes;
  return Check(
      cudaMemcpyAsync(device, staging.data + start, bytes, cudaMemcpyHostToDevice, Stream()), what);
}

}  // namespace transerve::cuda
