// A small fixed pool for data-parallel loops of the engine's own kernels, shared by every
// translator in the process (OpenBLAS keeps its own threads for the GEMMs it runs).
//
// Any number of threads may call ParallelFor at once (one scheduler loop per model), and fn
// may itself call ParallelFor. Each call is cut into chunks; the calling thread works through
// its own call's chunks while idle workers take chunks of the open calls in turn. A caller
// never waits for another call's work, only for chunks of its own that a worker already took,
// so calls cannot deadlock and a call in a busy process still finishes with its own thread
// alone (docs/engine.md, "One pool for every model").
//
// A decoder step issues dozens of parallel loops of 10–500 µs each, back to back. Waking a
// sleeping thread takes tens of microseconds on a VM, so idle workers spin briefly (kSpin)
// before they sleep: the next loop of the same step finds them awake. Spinning threads yield
// the core now and then, so that when callers and workers outnumber the cores the spinning
// does not starve the thread doing the work.
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

  // `threads` in all, the calling thread included (1 = run inline).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel, and returns when all
  // are done. Thread-safe and reentrant (see above). An exception thrown by fn is rethrown
  // here once every chunk of the call has finished or been skipped.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn);
  int size() const { return size_.load(std::memory_order_relaxed); }
  // Changes the number of threads; safe while calls run (they finish with the threads left).
  void Resize(int threads);

  // The engine's pool (every core by default), sized by SetEngineThreads.
  static ThreadPool& Engine();
  static void SetEngineThreads(int threads) { Engine().Resize(threads); }

 private:
  struct Call;
  void WorkerLoop(int index);
  // Claims a chunk of an open call and runs it; false when no open call has one left.
  bool RunOneChunk();
  bool WorkerRetired(int index) const {
    return stop_.load(std::memory_order_acquire) || index >= size_.load(std::memory_order_acquire);
  }

  std::mutex resize_mutex_;           // serializes Resize and the destructor
  std::vector<std::thread> workers_;  // guarded by resize_mutex_; worker i has index i + 1
  std::atomic<int> size_{1};          // workers with index < size_ take work
  std::atomic<bool> stop_{false};
  std::mutex mutex_;               // guards open_, next_open_ and the sleeps
  std::condition_variable start_;  // a call was opened (or a worker retired)
  std::condition_variable done_;   // a worker finished the last chunk of some call
  std::vector<Call*> open_;        // calls that may still have unclaimed chunks
  size_t next_open_ = 0;           // where workers look first: calls take turns
  int sleeping_workers_ = 0;
  std::atomic<int64_t> generation_{0};  // advanced each time a call opens
  std::atomic<int> open_calls_{0};      // ParallelFor calls in progress, inline ones included
};

}  // namespace transerve
