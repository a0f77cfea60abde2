// The state a primitive call runs on: a CUDA stream with the cuBLAS handle, device scratch and
// pinned staging used in its order. Each model replica creates one (TranserveCudaApi's
// create_stream), so replicas queue work side by side instead of behind each other; calls that
// name no stream use the plugin's default one.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <initializer_list>

#include "model/ops/cuda/plugin_abi.h"

namespace transerve::cuda {

// Per-primitive device scratch (tables and staging copies of one call), one of each per stream.
enum ScratchSlot {
  kAttentionTables,
  kEmbeddingIds,
  kKvDestinations,
  kHalfActivations,
  kTopK,
  kScratchSlots
};

TranserveCudaStream* CreateStream();              // nullptr with the error recorded on failure
void DestroyStream(TranserveCudaStream* stream);  // waits for its work first
TranserveCudaStream* DefaultStream();

// Makes `stream` (nullptr: the default one) the calling thread's current stream for the
// lifetime of the object, and takes its lock: one call at a time per stream, each call whole.
class StreamCall {
 public:
  explicit StreamCall(TranserveCudaStream* stream);
  ~StreamCall();
  StreamCall(const StreamCall&) = delete;
  StreamCall& operator=(const StreamCall&) = delete;

 private:
  TranserveCudaStream* stream_;
  TranserveCudaStream* previous_;
};

// The current stream (see StreamCall), its cuBLAS handle and its scratch: at least `bytes` of
// device memory in `slot`, or nullptr with the error recorded under `what`.
cudaStream_t Stream();
cublasHandle_t Blas();
void* Scratch(ScratchSlot slot, size_t bytes, const char* what);

// Waits for the current stream; 1 with the error recorded under `what` on failure. Every wait
// goes through here, since it also frees the upload staging area below.
int SynchronizeStream(const char* what);

// Uploads of small per-call tables (ids, segment lists, pointers) without waiting for them:
// the bytes are staged in the stream's pinned host memory, whose copy the stream performs
// later, and the area is reused only once the stream has been waited for (each decoder step
// ends with one, when the chosen tokens are read). Queues the copy of `bytes` from `parts`
// (concatenated) to `device`; 1 with the error recorded under `what` on failure.
struct HostPart {
  const void* data;
  size_t bytes;
};
int UploadAsync(void* device, std::initializer_list<HostPart> parts, const char* what);

}  // namespace transerve::cuda
