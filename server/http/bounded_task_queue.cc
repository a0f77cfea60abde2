#include "server/http/bounded_task_queue.h"

#include <utility>

namespace transerve::http {

BoundedTaskQueue::BoundedTaskQueue(int threads, int capacity)
    : capacity_(static_cast<size_t>(capacity > 0 ? capacity : 1)) {
  for (int i = 0; i < (threads > 0 ? threads : 1); ++i) threads_.emplace_back([this] { Work(); });
}

BoundedTaskQueue::~BoundedTaskQueue() { shutdown(); }

void BoundedTaskQueue::enqueue(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || queue_.size() < capacity_;
  };
  mu_.Await(absl::Condition(&room));
  // A connection accepted while stopping still runs: its task closes its socket.
  queue_.push_back(std::move(fn));
}

void BoundedTaskQueue::shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  // httplib's listen loop calls this once it stops; the destructor again (then a no-op).
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void BoundedTaskQueue::Work() {
  for (;;) {
    std::function<void()> fn;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and nothing left to run
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

}  // namespace transerve::http
