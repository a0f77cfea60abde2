// The cuBLAS calls of model/ops/cuda, emulated from cuBLAS's documented semantics: column-major
// C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, with A read as A[i + l * lda] (or
// A[l + i * lda] when transposed) and C not read at all when beta is 0. Leading dimensions too
// small for their matrix are refused with CUBLAS_STATUS_INVALID_VALUE, as cuBLAS does.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cublas_v2.h"
#include "cuda_fp16.h"
#include "tests/model/cuda/emulator/emulator.h"

// A handle: the stream its GEMMs are counted on.
struct TranserveEmulatedBlas {
  cudaStream_t stream = nullptr;
  bool live = true;
};

namespace transerve_cuda_emulator {
namespace {

// One operand: its element type, layout and whether it is used transposed.
struct Operand {
  const void* data;
  cudaDataType_t type;
  int ld;
  bool transposed;

  float Load(int64_t index) const {
    if (type == CUDA_R_16F)
      return transerve::HalfToFloat(static_cast<const uint16_t*>(data)[index]);
    return static_cast<const float*>(data)[index];
  }
  // Element (row, col) of op(X).
  float At(int row, int col) const {
    return transposed ? Load(col + static_cast<int64_t>(row) * ld)
                      : Load(row + static_cast<int64_t>(col) * ld);
  }
};

size_t ElementBytes(cudaDataType_t type) { return type == CUDA_R_16F ? 2 : 4; }

// Bytes a column-major matrix of `rows` x `cols` with leading dimension `ld` spans.
size_t Span(int rows, int cols, int ld, cudaDataType_t type) {
  if (rows == 0 || cols == 0) return 0;
  return (static_cast<size_t>(cols - 1) * ld + rows) * ElementBytes(type);
}

cublasStatus_t Gemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                    int m, int n, int k, float alpha, Operand a, Operand b, float beta, void* c,
                    cudaDataType_t c_type, int ldc) {
  if (handle == nullptr || !handle->live) return CUBLAS_STATUS_NOT_INITIALIZED;
  CountWork(handle->stream);
  if (StickyError() != cudaSuccess) {
    RecordError(StickyError());  // the runtime's last error, as after any call on a broken context
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  const bool ta = transa == CUBLAS_OP_T, tb = transb == CUBLAS_OP_T;
  if ((transa != CUBLAS_OP_N && !ta) || (transb != CUBLAS_OP_N && !tb) || m < 0 || n < 0 || k < 0 ||
      a.ld < std::max(1, ta ? k : m) || b.ld < std::max(1, tb ? n : k) || ldc < std::max(1, m)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  // A is stored [m, k] (or [k, m] transposed), B [k, n] (or [n, k]), column-major.
  const size_t a_bytes = ta ? Span(k, m, a.ld, a.type) : Span(m, k, a.ld, a.type);
  const size_t b_bytes = tb ? Span(n, k, b.ld, b.type) : Span(k, n, b.ld, b.type);
  if ((a_bytes > 0 && !IsDeviceRange(a.data, a_bytes)) ||
      (b_bytes > 0 && !IsDeviceRange(b.data, b_bytes)) ||
      !IsDeviceRange(c, Span(m, n, ldc, c_type))) {
    Fail("cuBLAS GEMM: an operand is not (wholly) in device memory");
  }
  a.transposed = ta;
  b.transposed = tb;
  const DeviceAccess access;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      float sum = 0.0f;
      for (int l = 0; l < k; ++l) sum += a.At(i, l) * b.At(l, j);
      const int64_t index = i + static_cast<int64_t>(j) * ldc;
      if (c_type == CUDA_R_16F) {
        auto* out = static_cast<uint16_t*>(c) + index;
        const float old = beta == 0.0f ? 0.0f : beta * transerve::HalfToFloat(*out);
        *out = transerve::FloatToHalf(alpha * sum + old);
      } else {
        auto* out = static_cast<float*>(c) + index;
        *out = alpha * sum + (beta == 0.0f ? 0.0f : beta * *out);
      }
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace
}  // namespace transerve_cuda_emulator

// Handles are never freed, so one used after cublasDestroy is caught.
cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new TranserveEmulatedBlas();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (handle == nullptr || !handle->live) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->live = false;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr || !handle->live) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const float* alpha,
                           const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc) {
  using transerve_cuda_emulator::Operand;
  return transerve_cuda_emulator::Gemm(
      handle, transa, transb, m, n, k, *alpha, Operand{a, CUDA_R_32F, lda, false},
      Operand{b, CUDA_R_32F, ldb, false}, *beta, c, CUDA_R_32F, ldc);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* a, cudaDataType_t a_type, int lda, const void* b,
                            cudaDataType_t b_type, int ldb, const void* beta, void* c,
                            cudaDataType_t c_type, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t) {
  using transerve_cuda_emulator::Operand;
  // With CUBLAS_COMPUTE_32F, alpha and beta are floats; half inputs meet float accumulation.
  if (compute != CUBLAS_COMPUTE_32F || a_type != b_type) return CUBLAS_STATUS_NOT_SUPPORTED;
  return transerve_cuda_emulator::Gemm(
      handle, transa, transb, m, n, k, *static_cast<const float*>(alpha),
      Operand{a, a_type, lda, false}, Operand{b, b_type, ldb, false},
      *static_cast<const float*>(beta), c, c_type, ldc);
}
