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

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& w : workers_) w.join();
}

ThreadPool& ThreadPool::Engine() { return *EnginePool(); }

void ThreadPool::SetEngineThreads(int threads) {
  if (EnginePool()->size() != threads) EnginePool() = std::make_unique<ThreadPool>(threads);
}

namespace {
// Chunk `index` of `parts` equal chunks of [0, n).
std::pair<int64_t, int64_t> Chunk(int64_t n, int parts, int index) {
  return {n * index / parts, n * (index + 1) / parts};
}
}  // namespace

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  const int parts = static_cast<int>(std::min<int64_t>(size(), n));
  if (parts <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_size_ = n;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  auto [begin, end] = Chunk(n, size(), 0);
  fn(begin, end);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::WorkerLoop(int index) {
  int64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_size_;
    }
    auto [begin, end] = Chunk(n, size(), index);
    if (begin < end) (*job)(begin, end);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace transerve
