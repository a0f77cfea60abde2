// The HTTP server's workers: a fixed number of threads and a bounded queue of accepted
// connections. When both are full, the accept loop waits (cpp-httplib's own pool queues without
// bound), so the connections in the process stay bounded and the rest wait in the kernel's
// listen backlog.
#pragma once

#include <httplib.h>

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace transerve::http {

class BoundedTaskQueue final : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(int threads, int capacity);
  ~BoundedTaskQueue() override;

  void enqueue(std::function<void()> fn) override;  // waits while the queue is full
  void shutdown() override;                         // runs what is queued, then joins

 private:
  void Work();

  const size_t capacity_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace transerve::http
