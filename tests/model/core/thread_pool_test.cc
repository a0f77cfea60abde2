// The engine's pool: every index is visited exactly once per call, whether the workers are
// still spinning from the previous call or asleep, with any number of threads, from several
// calling threads at once (one scheduler loop per model), from inside a call, and while the
// pool is resized.
#include "model/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <stdexcept>
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

// Several models' scheduler loops share the pool: each call must see exactly its own indices,
// whatever the others do. Before the pool took concurrent callers, two callers overwrote each
// other's job and both waited forever.
TEST_P(ThreadPoolTest, SeveralThreadsCallAtOnce) {
  ThreadPool pool(GetParam());
  constexpr int kCallers = 6;
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      std::mt19937 rng(1000 * GetParam() + t);
      std::uniform_int_distribution<int64_t> size(0, 300);
      for (int call = 0; call < 400; ++call) {
        const int64_t n = size(rng);
        // Each caller writes its own id, so a chunk run with another call's fn shows up.
        std::vector<std::atomic<int>> owner(static_cast<size_t>(n));
        for (auto& o : owner) o.store(-1);
        pool.ParallelFor(n, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            int expected = -1;
            if (!owner[static_cast<size_t>(i)].compare_exchange_strong(expected, t)) {
              failures.fetch_add(1);
            }
          }
        });
        for (auto& o : owner) {
          if (o.load() != t) failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(ThreadPoolTest, NestedCallsFinish) {
  ThreadPool pool(GetParam());
  constexpr int64_t kOuter = 37, kInner = 101;
  std::vector<std::atomic<int>> visits(kOuter * kInner);
  pool.ParallelFor(kOuter, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      pool.ParallelFor(kInner, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) visits[static_cast<size_t>(o * kInner + i)].fetch_add(1);
      });
    }
  });
  for (size_t i = 0; i < visits.size(); ++i) ASSERT_EQ(visits[i].load(), 1) << i;
}

TEST_P(ThreadPoolTest, ExceptionReachesTheCallerAfterEveryChunk) {
  ThreadPool pool(GetParam());
  std::mt19937 rng(7 + GetParam());
  for (int call = 0; call < 50; ++call) {
    const int64_t n = std::uniform_int_distribution<int64_t>(2, 500)(rng);
    const int64_t bad = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
    std::atomic<int> started{0}, finished{0};
    EXPECT_THROW(pool.ParallelFor(n,
                                  [&](int64_t begin, int64_t end) {
                                    started.fetch_add(1);
                                    const bool throws = begin <= bad && bad < end;
                                    if (!throws) std::this_thread::sleep_for(ThreadPool::kSpin);
                                    finished.fetch_add(1);
                                    if (throws) throw std::runtime_error("chunk failed");
                                  }),
                 std::runtime_error);
    // Nothing of the call still runs once it has returned.
    EXPECT_EQ(started.load(), finished.load());
  }
  ExpectEachIndexOnce(pool, 1000);  // and the pool still works
}

// A translator created while others run sets the process-wide thread count.
TEST(ThreadPool, ResizeWhileCallsRun) {
  ThreadPool pool(2);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::uniform_int_distribution<int64_t> size(1, 200);
      while (!stop.load()) {
        const int64_t n = size(rng);
        std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
        pool.ParallelFor(n, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) visits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (auto& v : visits) {
          if (v.load() != 1) failures.fetch_add(1);
        }
      }
    });
  }
  std::mt19937 rng(99);
  for (int i = 0; i < 40; ++i) {
    const int threads = std::uniform_int_distribution<int>(1, 6)(rng);
    pool.Resize(threads);
    EXPECT_EQ(pool.size(), threads);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop.store(true);
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Threads, ThreadPoolTest, ::testing::Values(1, 2, 3, 8));

}  // namespace
}  // namespace transerve
