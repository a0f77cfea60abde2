// Device memory for Tensors: blocks are kept for reuse when freed, so once a decoder loop has
// seen its batch shapes it makes no cudaMalloc / cudaFree (both synchronise the device).
// Sizes are rounded to a power of two below 1 MiB and to 2 MiB multiples above, so buffers that
// grow step by step find a block of their class again.
//
// A block belongs to the stream it was allocated for and, once freed, is reused only for that
// stream: work still queued there may read it, and the stream's own order makes the reuse safe,
// where another stream's would race with it. Blocks of a destroyed stream (which was waited
// for) are free for any. A Tensor is therefore used on the stream it was allocated for (a
// replica's own), or read by others only once its stream has been waited for (weights).
#pragma once

#include <cstddef>

#include "model/ops/cuda/plugin_abi.h"

namespace transerve::cuda {

// nullptr when the device is out of memory.
void* CachedAllocate(TranserveCudaStream* owner, size_t bytes);
// Keeps the block for the next allocation of its class on its stream.
void CachedFree(void* ptr);
// `owner` is being destroyed, its work done: its blocks, cached or still in use, are then free
// for any stream.
void ReleaseBlocksOf(TranserveCudaStream* owner);

}  // namespace transerve::cuda
