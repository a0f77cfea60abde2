#include <algorithm>
#include <cstring>
#include <mutex>

#include "model/ops/cuda/caching_allocator.h"
#include "model/ops/cuda/cuda_status.h"
#include "model/ops/cuda/stream.h"

// Completes the ABI's opaque type: everything here is used in the order of `stream`.
struct TranserveCudaStream {
  // Device memory that only grows, for one primitive's per-call tables.
  struct GrowingBuffer {
    void* data = nullptr;
    size_t bytes = 0;
  };
  // The pinned staging area of UploadAsync: filled front to back between two waits.
  struct Staging {
    char* data = nullptr;
    size_t capacity = 0;
    size_t used = 0;
  };

  std::mutex mu;  // one call at a time
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  GrowingBuffer scratch[transerve::cuda::kScratchSlots];
  Staging staging;
};

namespace transerve::cuda {
namespace {

thread_local TranserveCudaStream* current = nullptr;  // set by StreamCall

bool Init(TranserveCudaStream* s) {
  return Check(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "create stream") ==
             0 &&
         Check(cublasCreate(&s->blas), "create cuBLAS handle") == 0 &&
         Check(cublasSetStream(s->blas, s->stream), "cuBLAS: set stream") == 0;
}

// Waits for the stream's work, then gives back everything it holds; its cached device blocks
// become free for any stream.
void Release(TranserveCudaStream* s) {
  if (s->stream != nullptr) cudaStreamSynchronize(s->stream);
  for (TranserveCudaStream::GrowingBuffer& buffer : s->scratch) {
    if (buffer.data != nullptr) cudaFree(buffer.data);
  }
  if (s->staging.data != nullptr) cudaFreeHost(s->staging.data);
  if (s->blas != nullptr) cublasDestroy(s->blas);
  if (s->stream != nullptr) cudaStreamDestroy(s->stream);
  ReleaseBlocksOf(s);
}

}  // namespace

TranserveCudaStream* CreateStream() {
  auto* s = new TranserveCudaStream();
  if (!Init(s)) {
    Release(s);
    delete s;
    return nullptr;
  }
  return s;
}

void DestroyStream(TranserveCudaStream* s) {
  if (s == nullptr || s == DefaultStream()) return;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    Release(s);
  }
  delete s;
}

TranserveCudaStream* DefaultStream() {
  // Never destroyed: Tensors may be freed during static teardown. Should creating it fail, its
  // calls report the error (cuBLAS: not initialised) rather than crash.
  static TranserveCudaStream* s = [] {
    auto* d = new TranserveCudaStream();
    Init(d);
    return d;
  }();
  return s;
}

StreamCall::StreamCall(TranserveCudaStream* stream)
    : stream_(stream != nullptr ? stream : DefaultStream()), previous_(current) {
  stream_->mu.lock();
  current = stream_;
}

StreamCall::~StreamCall() {
  current = previous_;
  stream_->mu.unlock();
}

cudaStream_t Stream() { return current->stream; }
cublasHandle_t Blas() { return current->blas; }

void* Scratch(ScratchSlot slot, size_t bytes, const char* what) {
  TranserveCudaStream::GrowingBuffer& buffer = current->scratch[slot];
  if (bytes <= buffer.bytes) return buffer.data;
  // cudaFree waits for the device, so queued work is done with the old buffer.
  if (buffer.data != nullptr) cudaFree(buffer.data);
  buffer.data = nullptr;
  buffer.bytes = 0;
  if (Check(cudaMalloc(&buffer.data, 2 * bytes), what)) return nullptr;
  buffer.bytes = 2 * bytes;
  return buffer.data;
}

int SynchronizeStream(const char* what) {
  if (Check(cudaStreamSynchronize(current->stream), what)) return 1;
  current->staging.used = 0;  // every queued copy has read its bytes
  return 0;
}

int UploadAsync(void* device, std::initializer_list<HostPart> parts, const char* what) {
  size_t bytes = 0;
  for (const HostPart& part : parts) bytes += part.bytes;
  if (bytes == 0) return 0;
  TranserveCudaStream::Staging& staging = current->staging;
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
