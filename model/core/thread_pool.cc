#include "model/core/thread_pool.h"

#include <algorithm>
#include <memory>

namespace transerve {
namespace {

std::unique_ptr<ThreadPool>& EnginePool() {
  static std::unique_ptr<ThreadPool> pool = std::make_unique<ThreadPool>(
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

// Chunk `index` of `parts` equal chunks of [0, n).
std::pair<int64_t, int64_t> Chunk(int64_t n, int parts, int index) {
  return {n * index / parts, n * (index + 1) / parts};
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` for up to ThreadPool::kSpin; true if it turned true meanwhile.
template <typename Ready>
bool SpinUntil(Ready&& ready) {
  const auto until = std::chrono::steady_clock::now() + ThreadPool::kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    CpuRelax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return ready();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  start_.notify_all();
  for (auto& w : workers_) w.join();
}

ThreadPool& ThreadPool::Engine() { return *EnginePool(); }

void ThreadPool::SetEngineThreads(int threads) {
  if (EnginePool()->size() != threads) EnginePool() = std::make_unique<ThreadPool>(threads);
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  const int parts = static_cast<int>(std::min<int64_t>(size(), n));
  if (parts <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  job_ = &fn;
  job_size_ = n;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    // Under the lock, so a worker between its check and its sleep cannot miss the change.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_.notify_all();
  auto [begin, end] = Chunk(n, size(), 0);
  fn(begin, end);
  auto all_done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!SpinUntil(all_done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, all_done);
  }
}

void ThreadPool::WorkerLoop(int index) {
  int64_t seen = 0;
  for (;;) {
    auto has_work = [&] {
      return stop_.load(std::memory_order_acquire) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    if (!SpinUntil(has_work)) {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, has_work);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    auto [begin, end] = Chunk(job_size_, size(), index);
    if (begin < end) (*job_)(begin, end);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Under the lock, so a caller between its check and its sleep cannot miss it.
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

}  // namespace transerve
