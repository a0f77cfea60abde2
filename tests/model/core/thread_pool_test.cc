// The engine's pool: every index is visited exactly once per call, whether the workers are
// still spinning from the previous call or asleep, and with any number of threads.
#include "model/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace transerve {
namespace {

// Runs one ParallelFor over n indices and checks each was visited once.
void ExpectEachIndexOnce(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  pool.ParallelFor(n, [&](int64_t begin, int64_t end) {
    ASSERT_LE(0, begin);
    ASSERT_LE(begin, end);
    ASSERT_LE(end, n);
    for (int64_t i = begin; i < end; ++i) visits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(visits[static_cast<size_t>(i)].load(), 1) << i;
}

class ThreadPoolTest : public ::testing::TestWithParam<int> {};

TEST_P(ThreadPoolTest, BackToBackCallsWhileWorkersSpin) {
  ThreadPool pool(GetParam());
  std::mt19937 rng(GetParam());
  std::uniform_int_distribution<int64_t> size(0, 257);
  for (int call = 0; call < 2000; ++call) ExpectEachIndexOnce(pool, size(rng));
}

TEST_P(ThreadPoolTest, CallsAfterWorkersFellAsleep) {
  ThreadPool pool(GetParam());
  std::mt19937 rng(100 + GetParam());
  std::uniform_int_distribution<int64_t> size(1, 1000);
  for (int call = 0; call < 5; ++call) {
    std::this_thread::sleep_for(ThreadPool::kSpin * 5);
    ExpectEachIndexOnce(pool, size(rng));
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, ThreadPoolTest, ::testing::Values(1, 2, 3, 8));

}  // namespace
}  // namespace transerve
