#include "model/core/thread_pool.h"

#include <algorithm>
#include <exception>

namespace transerve {

// One ParallelFor in progress. It lives on its caller's stack: workers touch it only while it
// is in open_ (under mutex_) or while they hold one of its unfinished chunks.
struct ThreadPool::Call {
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0;
  int parts = 0;
  std::atomic<int> next_chunk{0};
  std::atomic<int> unfinished{0};
  std::exception_ptr error;  // the first exception of a chunk; guarded by the pool's mutex_

  std::pair<int64_t, int64_t> Chunk(int index) const {
    return {n * index / parts, n * (index + 1) / parts};
  }
};

namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` for up to ThreadPool::kSpin; true if it turned true meanwhile. Yields the core
// every few microseconds, so that a thread this one waits for can run when the cores are
// oversubscribed (several models' loops and the workers).
template <typename Ready>
bool SpinUntil(Ready&& ready) {
  const auto until = std::chrono::steady_clock::now() + ThreadPool::kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    CpuRelax();
    if ((i & 63) == 63) {
      if (std::chrono::steady_clock::now() >= until) return ready();
      std::this_thread::yield();
    }
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) { Resize(threads); }

ThreadPool::~ThreadPool() {
  std::lock_guard<std::mutex> resize_lock(resize_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_release);
  }
  start_.notify_all();
  for (auto& w : workers_) w.join();
}

ThreadPool& ThreadPool::Engine() {
  static ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

void ThreadPool::Resize(int threads) {
  threads = std::max(1, threads);
  std::lock_guard<std::mutex> resize_lock(resize_mutex_);
  std::vector<std::thread> retired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    size_.store(threads, std::memory_order_release);
    while (static_cast<int>(workers_.size()) + 1 < threads) {
      const int index = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, index] { WorkerLoop(index); });
    }
    while (static_cast<int>(workers_.size()) + 1 > threads) {
      retired.push_back(std::move(workers_.back()));
      workers_.pop_back();
    }
  }
  if (retired.empty()) return;
  start_.notify_all();  // retired workers that sleep see WorkerRetired and leave
  for (auto& w : retired) w.join();
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  const int threads = size();
  // One chunk per thread. Chunks are claimed, not assigned, so this still rebalances: a caller
  // whose helper is late or busy elsewhere runs the chunk itself. (More chunks per thread cost
  // 2-6% and bought nothing: docs/engine.md, "One pool for every model".)
  const int parts = static_cast<int>(std::min<int64_t>(threads, n));
  // As many calls open as threads: the cores are busy already, and handing chunks around would
  // only make each caller wait for a worker the OS has put aside.
  struct Open {
    std::atomic<int>& count;
    const int before;
    explicit Open(std::atomic<int>& c) : count(c), before(c.fetch_add(1)) {}
    ~Open() { count.fetch_sub(1); }
  } open(open_calls_);
  if (threads <= 1 || parts <= 1 || open.before + 1 >= threads) {
    if (n > 0) fn(0, n);
    return;
  }
  Call call;
  call.fn = &fn;
  call.n = n;
  call.parts = parts;
  call.unfinished.store(parts, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    open_.push_back(&call);
    generation_.fetch_add(1, std::memory_order_release);
    if (sleeping_workers_ > 0) start_.notify_all();
  }
  // This thread's share: whatever chunks no worker has claimed yet.
  std::exception_ptr error;
  for (int c; (c = call.next_chunk.fetch_add(1, std::memory_order_relaxed)) < parts;) {
    if (!error) {
      try {
        auto [begin, end] = call.Chunk(c);
        fn(begin, end);
      } catch (...) {
        error = std::current_exception();  // the remaining chunks are skipped
      }
    }
    call.unfinished.fetch_sub(1, std::memory_order_acq_rel);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    open_.erase(std::find(open_.begin(), open_.end(), &call));
  }
  auto all_done = [&call] { return call.unfinished.load(std::memory_order_acquire) == 0; };
  if (!SpinUntil(all_done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, all_done);
  }
  if (!error) {
    std::lock_guard<std::mutex> lock(mutex_);
    error = call.error;
  }
  if (error) std::rethrow_exception(error);
}

bool ThreadPool::RunOneChunk() {
  Call* call = nullptr;
  int chunk = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t tried = 0; tried < open_.size() && call == nullptr; ++tried) {
      Call* candidate = open_[next_open_++ % open_.size()];
      const int c = candidate->next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (c < candidate->parts) {
        call = candidate;
        chunk = c;
      }
    }
  }
  if (call == nullptr) return false;
  try {
    auto [begin, end] = call->Chunk(chunk);
    (*call->fn)(begin, end);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!call->error) call->error = std::current_exception();
  }
  if (call->unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // `call` may be gone from here on. Under the lock, so a caller between its check and its
    // sleep cannot miss the wake-up.
    std::lock_guard<std::mutex> lock(mutex_);
    done_.notify_all();
  }
  return true;
}

void ThreadPool::WorkerLoop(int index) {
  for (;;) {
    if (WorkerRetired(index)) return;
    const int64_t seen = generation_.load(std::memory_order_acquire);
    if (RunOneChunk()) continue;
    auto has_work = [&] {
      return WorkerRetired(index) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!SpinUntil(has_work)) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleeping_workers_;
      start_.wait(lock, has_work);
      --sleeping_workers_;
    }
  }
}

}  // namespace transerve
