#include "model/ops/kv_cache.h"

#include <cstring>

#include "model/ops/ops.h"

namespace transerve {

KvBlockPool::KvBlockPool(int64_t d_model, Device device, int64_t max_blocks)
    : d_model_(d_model),
      device_(device),
      max_blocks_(max_blocks),
      block_floats_(kKvBlockPositions * d_model) {}

int32_t KvBlockPool::Allocate() {
  int32_t block;
  if (!free_list_.empty()) {
    block = free_list_.back();
    free_list_.pop_back();
  } else {
    if (max_blocks_ > 0 && blocks_allocated() >= max_blocks_) return -1;
    block = static_cast<int32_t>(refcounts_.size());
    if (block % kBlocksPerChunk == 0) {
      chunks_.emplace_back(std::vector<int64_t>{kBlocksPerChunk * 2 * block_floats_},
                           DType::kFloat32, device_);
    }
    refcounts_.push_back(0);
  }
  refcounts_[block] = 1;
  ++in_use_;
  return block;
}

void KvBlockPool::Retain(int32_t block) { ++refcounts_[block]; }

void KvBlockPool::Release(int32_t block) {
  if (--refcounts_[block] == 0) {
    free_list_.push_back(block);
    --in_use_;
  }
}

int64_t KvBlockPool::bytes_in_use() const {
  return in_use_ * 2 * block_floats_ * static_cast<int64_t>(sizeof(float));
}

int64_t KvBlockPool::bytes_reserved() const {
  return static_cast<int64_t>(chunks_.size()) * kBlocksPerChunk * 2 * block_floats_ *
         static_cast<int64_t>(sizeof(float));
}

SequenceKvCache::SequenceKvCache(KvBlockPool* pool, int num_layers)
    : pool_(pool), tables_(static_cast<size_t>(num_layers)) {}

SequenceKvCache::~SequenceKvCache() {
  for (const auto& table : tables_) {
    for (int32_t block : table) pool_->Release(block);
  }
}

std::unique_ptr<SequenceKvCache> SequenceKvCache::Fork() const {
  auto copy = std::make_unique<SequenceKvCache>(pool_, num_layers());
  copy->tables_ = tables_;
  copy->length_ = length_;
  for (const auto& table : tables_) {
    for (int32_t block : table) pool_->Retain(block);
  }
  return copy;
}

bool SequenceKvCache::PrepareAppend(int layer, float** key_row, float** value_row,
                                    std::vector<KvBlockCopy>* copies) {
  std::vector<int32_t>& table = tables_[layer];
  const int32_t slot = length_ % kKvBlockPositions;
  if (slot == 0 && table.size() == static_cast<size_t>(length_ / kKvBlockPositions)) {
    // A new block (unless an earlier, failed attempt of this step already added it).
    const int32_t block = pool_->Allocate();
    if (block < 0) return false;
    table.push_back(block);
  } else if (slot != 0 && pool_->refcount(table.back()) > 1) {
    // Shared partial block: this sequence is about to write a position the others do not have.
    const int32_t shared = table.back();
    const int32_t own = pool_->Allocate();
    if (own < 0) return false;
    // The copy reads positions [0, slot) of `shared`, which nobody writes any more, so it may
    // come after this step's writes (at `slot`) to either block.
    copies->push_back({shared, own, slot});
    pool_->Release(shared);  // others still hold it: it is not handed out before the copy
    table.back() = own;
  }
  const int32_t block = table.back();
  *key_row = pool_->keys(block) + static_cast<int64_t>(slot) * pool_->d_model();
  *value_row = pool_->values(block) + static_cast<int64_t>(slot) * pool_->d_model();
  return true;
}

bool PrepareAppends(std::span<SequenceKvCache* const> caches, int layer, float** key_rows,
                    float** value_rows) {
  std::vector<KvBlockCopy> copies;
  bool prepared = true;
  for (size_t r = 0; r < caches.size() && prepared; ++r) {
    prepared = caches[r]->PrepareAppend(layer, &key_rows[r], &value_rows[r], &copies);
  }
  if (!copies.empty()) ops::CopyKvBlockPrefixes(caches[0]->pool(), copies);
  return prepared;
}

}  // namespace transerve
