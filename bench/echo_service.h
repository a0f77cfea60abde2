// A stand-in transerve server for measuring the load generator itself: it answers Translate
// and TranslateStream by echoing the texts after a delay it is told, with nothing to compute.
// A text "sleep_ms=N ..." makes its request take N ms (the longest of its texts wins); a text
// "status=CODE_NAME ..." makes the request fail with that gRPC status (e.g. RESOURCE_EXHAUSTED).
// Serial mode answers one request at a time in arrival order: a server with a known capacity,
// whose queue a load generator must not hide. Used by bench/ and tests/client/.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {

class EchoTranslator final : public v1::Translator::CallbackService {
 public:
  struct Options {
    std::chrono::microseconds default_delay{0};  // for requests without sleep_ms
    bool serial = false;
  };
  explicit EchoTranslator(Options options);
  ~EchoTranslator() override;

  grpc::ServerUnaryReactor* Translate(grpc::CallbackServerContext* context,
                                      const v1::TranslateRequest* request,
                                      v1::TranslateResponse* response) override;
  grpc::ServerWriteReactor<v1::TranslateStreamResponse>* TranslateStream(
      grpc::CallbackServerContext* context, const v1::TranslateRequest* request) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;

 private:
  using Clock = std::chrono::steady_clock;
  class StreamWriter;
  // When a request arriving now is answered (serial mode queues it behind the others).
  Clock::time_point AnswerTime(const v1::TranslateRequest& request);
  // Runs `task` on the timer thread at `when`.
  void At(Clock::time_point when, std::function<void()> task);
  void TimerLoop();

  const Options options_;
  std::mutex mu_;
  std::condition_variable wake_;
  struct Task {
    Clock::time_point when;
    uint64_t order;  // FIFO among equal times
    std::function<void()> run;
    bool operator>(const Task& o) const { return when != o.when ? when > o.when : order > o.order; }
  };
  std::priority_queue<Task, std::vector<Task>, std::greater<>> tasks_;
  uint64_t next_order_ = 0;
  Clock::time_point serial_free_at_{};
  bool stop_ = false;
  std::thread timer_;
};

}  // namespace transerve
