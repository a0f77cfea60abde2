#include "bench/echo_service.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace transerve {
namespace {

// The value after `key=` in the text's first word, if any.
bool FirstWordValue(const std::string& text, absl::string_view key, std::string* value) {
  const absl::string_view first = absl::string_view(text).substr(0, text.find(' '));
  if (!absl::StartsWith(first, key) || first.size() <= key.size() || first[key.size()] != '=') {
    return false;
  }
  *value = std::string(first.substr(key.size() + 1));
  return true;
}

grpc::Status RequestedStatus(const v1::TranslateRequest& request) {
  for (const std::string& text : request.texts()) {
    std::string name;
    if (!FirstWordValue(text, "status", &name)) continue;
    for (int code = 1; code <= 16; ++code) {
      if (absl::StatusCodeToString(static_cast<absl::StatusCode>(code)) == name) {
        return grpc::Status(static_cast<grpc::StatusCode>(code), "asked for by the text");
      }
    }
  }
  return grpc::Status::OK;
}

v1::Translation Echo(const std::string& text) {
  v1::Translation t;
  t.set_text(text);
  const std::vector<absl::string_view> words = absl::StrSplit(text, ' ', absl::SkipEmpty());
  t.set_source_token_count(static_cast<int32_t>(words.size()) + 1);  // EOS
  t.set_target_token_count(static_cast<int32_t>(words.size()) + 1);
  return t;
}

}  // namespace

EchoTranslator::EchoTranslator(Options options)
    : options_(options), timer_([this] { TimerLoop(); }) {}

EchoTranslator::~EchoTranslator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  timer_.join();
}

EchoTranslator::Clock::time_point EchoTranslator::AnswerTime(const v1::TranslateRequest& request) {
  std::chrono::microseconds delay = options_.default_delay;
  for (const std::string& text : request.texts()) {
    std::string value;
    int64_t ms = 0;
    if (FirstWordValue(text, "sleep_ms", &value) && absl::SimpleAtoi(value, &ms)) {
      delay = std::max<std::chrono::microseconds>(delay, std::chrono::milliseconds(ms));
    }
  }
  const Clock::time_point now = Clock::now();
  if (!options_.serial) return now + delay;
  std::lock_guard<std::mutex> lock(mu_);
  serial_free_at_ = std::max(serial_free_at_, now) + delay;
  return serial_free_at_;
}

void EchoTranslator::At(Clock::time_point when, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push({when, next_order_++, std::move(task)});
  }
  wake_.notify_all();
}

void EchoTranslator::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (stop_) return;
    if (tasks_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const Clock::time_point when = tasks_.top().when;
    if (Clock::now() < when) {
      wake_.wait_until(lock, when);
      continue;
    }
    std::function<void()> run = tasks_.top().run;
    tasks_.pop();
    lock.unlock();
    run();
    lock.lock();
  }
}

grpc::ServerUnaryReactor* EchoTranslator::Translate(grpc::CallbackServerContext* context,
                                                    const v1::TranslateRequest* request,
                                                    v1::TranslateResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const grpc::Status status = RequestedStatus(*request);
  if (status.ok()) {
    for (const std::string& text : request->texts()) *response->add_translations() = Echo(text);
    response->set_model("echo");
  }
  At(AnswerTime(*request), [reactor, status] { reactor->Finish(status); });
  return reactor;
}

// The first word at once, the rest (and the final translation) when the request is answered.
class EchoTranslator::StreamWriter : public grpc::ServerWriteReactor<v1::TranslateStreamResponse> {
 public:
  StreamWriter(EchoTranslator* service, const v1::TranslateRequest& request) {
    status_ = RequestedStatus(request);
    first_.set_index(0);
    first_.set_text_delta(
        request.texts_size() > 0 ? request.texts(0).substr(0, request.texts(0).find(' ')) : "");
    for (int i = 0; i < request.texts_size(); ++i) {
      v1::TranslateStreamResponse& last = finals_.emplace_back();
      last.set_index(i);
      last.set_done(true);
      *last.mutable_translation() = Echo(request.texts(i));
    }
    if (status_.ok()) {
      writing_ = true;
      StartWrite(&first_);
    }
    service->At(service->AnswerTime(request), [this] {
      std::unique_lock<std::mutex> lock(mu_);
      due_ = true;
      Next(lock);
    });
  }
  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      finals_.clear();  // the client went away: finish at the due time
      status_ = grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    }
    Next(lock);
  }
  void OnDone() override { delete this; }

 private:
  // Starts the next write, or finishes, when nothing is being written and the answer is due.
  // Releases the lock before Finish: OnDone may delete this at once.
  void Next(std::unique_lock<std::mutex>& lock) {
    if (writing_ || !due_ || finished_) return;
    if (!status_.ok() || sent_ == finals_.size()) {
      finished_ = true;
      const grpc::Status status = status_;
      lock.unlock();
      Finish(status);
      return;
    }
    writing_ = true;
    StartWrite(&finals_[sent_++]);
  }

  std::mutex mu_;
  grpc::Status status_;
  v1::TranslateStreamResponse first_;
  std::vector<v1::TranslateStreamResponse> finals_;
  size_t sent_ = 0;
  bool writing_ = false;
  bool due_ = false;
  bool finished_ = false;
};

grpc::ServerWriteReactor<v1::TranslateStreamResponse>* EchoTranslator::TranslateStream(
    grpc::CallbackServerContext*, const v1::TranslateRequest* request) {
  return new StreamWriter(this, *request);
}

grpc::ServerUnaryReactor* EchoTranslator::ListModels(grpc::CallbackServerContext* context,
                                                     const v1::ListModelsRequest*,
                                                     v1::ListModelsResponse* response) {
  response->add_models()->set_name("echo");
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace transerve
