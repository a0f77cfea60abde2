// Paged key/value storage for decoder self-attention. Keys and values live in fixed-size blocks
// of kKvBlockPositions positions taken from one pool, so sequences can join and leave a running
// batch without copying, and beams share their common history (blocks are reference counted and
// copied only when a shared, partly filled block is written).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/core/tensor.h"

namespace transerve {

inline constexpr int kKvBlockPositions = 16;

// The first `positions` key and value rows of block `from`, copied into block `to`: how a
// sequence takes its own copy of a partly filled block it shares with a fork.
struct KvBlockCopy {
  int32_t from;
  int32_t to;
  int32_t positions;
};

class KvBlockPool {
 public:
  // `max_blocks` bounds memory (0: unbounded). Block storage is [positions][d_model] for keys and
  // the same for values.
  KvBlockPool(int64_t d_model, Device device, int64_t max_blocks = 0);
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  // Returns a block with refcount 1, or -1 when the pool is at max_blocks.
  int32_t Allocate();
  void Retain(int32_t block);
  void Release(int32_t block);
  int32_t refcount(int32_t block) const { return refcounts_[block]; }

  float* keys(int32_t block) { return chunk(block) + offset(block); }
  float* values(int32_t block) { return keys(block) + block_floats_; }
  const float* keys(int32_t block) const { return const_cast<KvBlockPool*>(this)->keys(block); }
  const float* values(int32_t block) const { return const_cast<KvBlockPool*>(this)->values(block); }

  int64_t d_model() const { return d_model_; }
  // Floats in a block's keys; its values start this far after them.
  int64_t block_floats() const { return block_floats_; }
  Device device() const { return device_; }
  int64_t max_blocks() const { return max_blocks_; }  // 0: unbounded
  int64_t blocks_in_use() const { return in_use_; }
  int64_t blocks_allocated() const { return static_cast<int64_t>(refcounts_.size()); }
  // Bytes of blocks currently referenced by some sequence.
  int64_t bytes_in_use() const;
  int64_t bytes_reserved() const;

 private:
  static constexpr int kBlocksPerChunk = 64;  // blocks are carved from larger allocations
  float* chunk(int32_t block) { return chunks_[block / kBlocksPerChunk].f32(); }
  int64_t offset(int32_t block) const { return (block % kBlocksPerChunk) * 2 * block_floats_; }

  int64_t d_model_;
  Device device_;
  int64_t max_blocks_;
  int64_t block_floats_;  // floats in the key half of a block
  std::vector<Tensor> chunks_;
  std::vector<int32_t> refcounts_;
  std::vector<int32_t> free_list_;
  int64_t in_use_ = 0;
};

// One sequence's decoder self-attention cache: a block table per layer and the number of
// positions stored (the same for every layer once a step completes).
class SequenceKvCache {
 public:
  SequenceKvCache(KvBlockPool* pool, int num_layers);
  ~SequenceKvCache();
  SequenceKvCache(const SequenceKvCache&) = delete;
  SequenceKvCache& operator=(const SequenceKvCache&) = delete;

  // A new cache sharing every block with this one (beam search forks hypotheses this way).
  std::unique_ptr<SequenceKvCache> Fork() const;

  // A step makes room in its caches with PrepareAppends (below), then marks them complete:
  // every layer now holds one more position.
  void CommitAppend() { ++length_; }

  int32_t length() const { return length_; }
  int num_layers() const { return static_cast<int>(tables_.size()); }
  const std::vector<int32_t>& blocks(int layer) const { return tables_[layer]; }
  const KvBlockPool& pool() const { return *pool_; }
  KvBlockPool& pool() { return *pool_; }

 private:
  // Makes position `length()` of `layer` writable (allocating or un-sharing its block) and
  // returns pointers to its key and value rows; false when the pool is exhausted. Un-sharing
  // adds the copy the new block needs to `copies`: only PrepareAppends calls this, so that the
  // copies are always made.
  bool PrepareAppend(int layer, float** key_row, float** value_row,
                     std::vector<KvBlockCopy>* copies);
  friend bool PrepareAppends(std::span<SequenceKvCache* const> caches, int layer, float** key_rows,
                             float** value_rows);

  KvBlockPool* pool_;
  std::vector<std::vector<int32_t>> tables_;
  int32_t length_ = 0;
};

// PrepareAppend for every cache at `layer` (row r's rows into key_rows[r], value_rows[r]), then
// the blocks this un-shares are copied in one call (on a GPU, one kernel instead of two copies
// per forked row). The copies are made also when the pool runs out part-way: a cache that
// already took its own block would not take it again when the step is retried.
bool PrepareAppends(std::span<SequenceKvCache* const> caches, int layer, float** key_rows,
                    float** value_rows);

}  // namespace transerve
