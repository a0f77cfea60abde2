// The paged KV cache: forks share blocks, writes un-share them, memory comes back.
#include "model/ops/kv_cache.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/testing/random.h"

namespace transerve {
namespace {

void AppendRandom(SequenceKvCache& cache, std::mt19937& rng, std::vector<float>* written) {
  const int64_t d = cache.pool().d_model();
  SequenceKvCache* caches[] = {&cache};
  for (int layer = 0; layer < cache.num_layers(); ++layer) {
    float* k = nullptr;
    float* v = nullptr;
    ASSERT_TRUE(PrepareAppends(caches, layer, &k, &v));
    const auto values = testing::RandomFloats(2 * d, rng);
    std::copy_n(values.data(), d, k);
    std::copy_n(values.data() + d, d, v);
    if (layer == 0) written->insert(written->end(), values.begin(), values.begin() + d);
  }
  cache.CommitAppend();
}

std::vector<float> Layer0Keys(const SequenceKvCache& cache) {
  const int64_t d = cache.pool().d_model();
  std::vector<float> keys;
  for (int32_t p = 0; p < cache.length(); ++p) {
    const int32_t block = cache.blocks(0)[p / kKvBlockPositions];
    const float* row = cache.pool().keys(block) + (p % kKvBlockPositions) * d;
    keys.insert(keys.end(), row, row + d);
  }
  return keys;
}

TEST(SequenceKvCache, ForkSharesHistoryAndCopiesOnWrite) {
  std::mt19937 rng(20);
  KvBlockPool pool(8, Device::kCpu);
  std::vector<float> parent_keys;
  auto parent = std::make_unique<SequenceKvCache>(&pool, 2);
  for (int i = 0; i < kKvBlockPositions + 3; ++i) AppendRandom(*parent, rng, &parent_keys);
  EXPECT_EQ(pool.blocks_in_use(), 4);  // 2 layers x 2 blocks

  auto child = parent->Fork();
  EXPECT_EQ(pool.blocks_in_use(), 4) << "a fork copies nothing";
  std::vector<float> child_keys = parent_keys;
  AppendRandom(*child, rng, &child_keys);
  EXPECT_EQ(pool.blocks_in_use(), 6) << "writing un-shares only the partial block of each layer";
  AppendRandom(*parent, rng, &parent_keys);

  EXPECT_EQ(Layer0Keys(*parent), parent_keys);
  EXPECT_EQ(Layer0Keys(*child), child_keys);
  child.reset();
  parent.reset();
  EXPECT_EQ(pool.blocks_in_use(), 0);
}

TEST(SequenceKvCache, BlocksUnsharedBeforeThePoolRanOutAreCopiedForTheRetry) {
  std::mt19937 rng(21);
  const int64_t d = 8;
  KvBlockPool pool(d, Device::kCpu, /*max_blocks=*/2);
  std::vector<float> parent_keys;
  auto parent = std::make_unique<SequenceKvCache>(&pool, 1);
  for (int i = 0; i < 3; ++i) AppendRandom(*parent, rng, &parent_keys);
  auto first = parent->Fork();
  auto second = parent->Fork();  // three sequences share one partial block

  // The first fork takes the pool's last block; the second finds none.
  SequenceKvCache* step[] = {first.get(), second.get(), parent.get()};
  std::vector<float*> key_rows(3), value_rows(3);
  EXPECT_FALSE(PrepareAppends(step, 0, key_rows.data(), value_rows.data()));
  EXPECT_EQ(pool.blocks_in_use(), 2);

  // Without the second fork the step fits. The first fork keeps the block it took, which must
  // hold the shared history although the failed attempt wrote nothing into it.
  second.reset();
  SequenceKvCache* retry[] = {first.get(), parent.get()};
  ASSERT_TRUE(PrepareAppends(retry, 0, key_rows.data(), value_rows.data()));
  const auto values = testing::RandomFloats(4 * d, rng);
  for (int r = 0; r < 2; ++r) {
    std::copy_n(values.data() + 2 * r * d, d, key_rows[r]);
    std::copy_n(values.data() + (2 * r + 1) * d, d, value_rows[r]);
  }
  first->CommitAppend();
  parent->CommitAppend();
  std::vector<float> first_keys = parent_keys;
  first_keys.insert(first_keys.end(), values.begin(), values.begin() + d);
  parent_keys.insert(parent_keys.end(), values.begin() + 2 * d, values.begin() + 3 * d);
  EXPECT_EQ(Layer0Keys(*first), first_keys);
  EXPECT_EQ(Layer0Keys(*parent), parent_keys);
}

TEST(KvBlockPool, RefusesBeyondItsLimitAndReusesFreedBlocks) {
  KvBlockPool pool(4, Device::kCpu, /*max_blocks=*/2);
  const int32_t a = pool.Allocate();
  const int32_t b = pool.Allocate();
  EXPECT_GE(a, 0);
  EXPECT_GE(b, 0);
  EXPECT_EQ(pool.Allocate(), -1);
  pool.Release(a);
  EXPECT_EQ(pool.Allocate(), a);
  EXPECT_EQ(pool.bytes_in_use(), 2 * 2 * kKvBlockPositions * 4 * 4);
}

}  // namespace
}  // namespace transerve
