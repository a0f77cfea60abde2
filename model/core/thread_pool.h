// A small fixed pool for data-parallel loops of the engine's own kernels (OpenBLAS keeps its own
// threads for the GEMMs it runs; the two never work at the same time).
//
// A decoder step issues dozens of parallel loops of 10–500 µs each, back to back. Waking a
// sleeping thread takes tens of microseconds on a VM, so idle workers spin briefly (kSpin)
// before they sleep: the next loop of the same step finds them awake.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace transerve {

class ThreadPool {
 public:
  // How long an idle worker (and a caller waiting for workers) polls before sleeping.
  static constexpr std::chrono::microseconds kSpin{200};

  // `threads` workers in all, the calling thread included (1 = run inline).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel, and returns when all
  // are done. Not reentrant; one caller at a time.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn);
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // The engine's pool, sized by SetNumThreads (every core by default).
  static ThreadPool& Engine();
  static void SetEngineThreads(int threads);

 private:
  void WorkerLoop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;  // guards the sleeps only; the job is published through generation_
  std::condition_variable start_;
  std::condition_variable done_;
  // Written before generation_ is advanced (release) and read after it is seen (acquire).
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_size_ = 0;
  std::atomic<int64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace transerve
