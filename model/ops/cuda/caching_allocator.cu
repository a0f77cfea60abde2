#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
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

struct Block {
  size_t size;
  TranserveCudaStream* owner;  // nullptr: any stream
};

struct Cache {
  std::mutex mu;
  // Free blocks by (the stream they may be reused on, size class).
  std::map<std::pair<TranserveCudaStream*, size_t>, std::vector<void*>> free_blocks;
  std::unordered_map<void*, Block> blocks;  // every block, handed out or free
};

Cache& TheCache() {
  static Cache* cache = new Cache();  // never destroyed: Tensors may outlive static teardown
  return *cache;
}

// A free block of `size` for `owner`: its own first, else one free for any stream.
void* TakeFree(Cache& cache, TranserveCudaStream* owner, size_t size) {
  for (TranserveCudaStream* key : {owner, static_cast<TranserveCudaStream*>(nullptr)}) {
    auto it = cache.free_blocks.find({key, size});
    if (it == cache.free_blocks.end() || it->second.empty()) continue;
    void* ptr = it->second.back();
    it->second.pop_back();
    cache.blocks[ptr].owner = owner;
    return ptr;
  }
  return nullptr;
}

}  // namespace

void* CachedAllocate(TranserveCudaStream* owner, size_t bytes) {
  const size_t size = SizeClass(bytes);
  Cache& cache = TheCache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (void* ptr = TakeFree(cache, owner, size); ptr != nullptr) return ptr;
  }
  void* ptr = nullptr;
  if (Check(cudaMalloc(&ptr, size), "cudaMalloc")) {
    // Out of memory: give the cached blocks back to the driver and try once more. cudaFree
    // waits for the device, so blocks cached for other streams are no longer in use.
    std::lock_guard<std::mutex> lock(cache.mu);
    for (auto& [key, free] : cache.free_blocks) {
      for (void* p : free) {
        cudaFree(p);
        cache.blocks.erase(p);
      }
      free.clear();
    }
    if (Check(cudaMalloc(&ptr, size), "cudaMalloc")) return nullptr;
  }
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.blocks[ptr] = Block{size, owner};
  return ptr;
}

void CachedFree(void* ptr) {
  if (ptr == nullptr) return;
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.blocks.find(ptr);
  if (it == cache.blocks.end()) return;  // not ours
  cache.free_blocks[{it->second.owner, it->second.size}].push_back(ptr);
}

void ReleaseBlocksOf(TranserveCudaStream* owner) {
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  for (auto& [ptr, block] : cache.blocks) {
    if (block.owner == owner) block.owner = nullptr;
  }
  for (auto it = cache.free_blocks.begin(); it != cache.free_blocks.end();) {
    if (it->first.first != owner) {
      ++it;
      continue;
    }
    std::vector<void*>& shared = cache.free_blocks[{nullptr, it->first.second}];
    shared.insert(shared.end(), it->second.begin(), it->second.end());
    it = cache.free_blocks.erase(it);
  }
}

}  // namespace transerve::cuda
