// Device memory for Tensors: blocks are kept for reuse when freed, so once a decoder loop has
// seen its batch shapes it makes no cudaMalloc / cudaFree (both synchronise the device).
// Sizes are rounded to a power of two below 1 MiB and to 2 MiB multiples above, so buffers that
// grow step by step find a block of their class again.
#pragma once

#include <cstddef>

namespace transerve::cuda {

void* CachedAllocate(size_t bytes);  // nullptr when the device is out of memory
void CachedFree(void* ptr);          // keeps the block for the next allocation of its class

}  // namespace transerve::cuda
