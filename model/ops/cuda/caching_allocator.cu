#include <cuda_runtime.h>

#include <mutex>
#include <unordered_map>
#include <vector>

#include "model/ops/cuda/caching_allocator.h"
#include "model/ops/cuda/cuda_status.h"

namespace transerve::cuda {
namespace {

constexpr size_t kSmall = size_t{1} << 20;  // below: power-of-two classes
constexpr size_t kLargeStep = size_t{2} << 20;

size_t SizeClass(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < kSmall) {
    size_t c = 256;
    while (c < bytes) c *= 2;
    return c;
  }
  return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

struct Cache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // by size class
  std::unordered_map<void*, size_t> size_of;                   // every block handed out
};

Cache& TheCache() {
  static Cache* cache = new Cache();  // never destroyed: Tensors may outlive static teardown
  return *cache;
}

}  // namespace

void* CachedAllocate(size_t bytes) {
  const size_t size = SizeClass(bytes);
  Cache& cache = TheCache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    auto it = cache.free_blocks.find(size);
    if (it != cache.free_blocks.end() && !it->second.empty()) {
      void* ptr = it->second.back();
      it->second.pop_back();
      return ptr;
    }
  }
  void* ptr = nullptr;
  if (Check(cudaMalloc(&ptr, size), "cudaMalloc")) {
    // Out of memory: give the cached blocks back to the driver and try once more.
    std::lock_guard<std::mutex> lock(cache.mu);
    for (auto& [cls, blocks] : cache.free_blocks) {
      for (void* p : blocks) {
        cudaFree(p);
        cache.size_of.erase(p);
      }
      blocks.clear();
    }
    if (Check(cudaMalloc(&ptr, size), "cudaMalloc")) return nullptr;
  }
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.size_of[ptr] = size;
  return ptr;
}

void CachedFree(void* ptr) {
  if (ptr == nullptr) return;
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.size_of.find(ptr);
  if (it == cache.size_of.end()) return;  // not ours
  cache.free_blocks[it->second].push_back(ptr);
}

}  // namespace transerve::cuda
