#include "client/loadgen/grpc_sender.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace transerve {
namespace {

absl::Status ToAbsl(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// The state every gRPC call needs for its life: its context, request and answer. It lives in
// the SentCall the load loop owns, so the context is never destroyed inside gRPC's own
// completion of the call.
class GrpcCall : public SentCall {
 public:
  GrpcCall(v1::Translator::Stub* stub, CallRecord* record, const GrpcSenderOptions& options)
      : stub_(stub), record_(record), stream_(options.stream) {
    if (options.deadline > absl::ZeroDuration()) {
      context_.set_deadline(std::chrono::system_clock::now() +
                            absl::ToChronoNanoseconds(options.deadline));
    }
    if (!options.auth_token.empty()) {
      context_.AddMetadata("authorization", "Bearer " + options.auth_token);
    }
  }

  void Start(std::function<void(const absl::Status&)> done) override {
    done_ = std::move(done);
    if (stream_) {
      reader_ = std::make_unique<StreamReader>(this);
      return;
    }
    stub_->async()->Translate(&context_, &record_->request, &response_,
                              [this](grpc::Status status) {
                                if (status.ok()) {
                                  for (const auto& t : response_.translations()) record_->Count(t);
                                }
                                done_(ToAbsl(status));
                              });
  }

  void Cancel() override { context_.TryCancel(); }

 private:
  // TranslateStream: notes the first chunk and counts the final translations.
  class StreamReader : public grpc::ClientReadReactor<v1::TranslateStreamResponse> {
   public:
    explicit StreamReader(GrpcCall* call) : call_(call) {
      call_->stub_->async()->TranslateStream(&call_->context_, &call_->record_->request, this);
      StartRead(&message_);
      StartCall();
    }
    void OnReadDone(bool ok) override {
      if (!ok) return;
      CallRecord* record = call_->record_;
      if (!record->first_chunk_seen) {
        record->first_chunk_seen = true;
        record->first_chunk = std::chrono::steady_clock::now();
      }
      if (message_.done()) record->Count(message_.translation());
      StartRead(&message_);
    }
    void OnDone(const grpc::Status& status) override { call_->done_(ToAbsl(status)); }

   private:
    GrpcCall* call_;
    v1::TranslateStreamResponse message_;
  };

  v1::Translator::Stub* stub_;
  CallRecord* record_;
  const bool stream_;
  grpc::ClientContext context_;
  v1::TranslateResponse response_;
  std::unique_ptr<StreamReader> reader_;
  std::function<void(const absl::Status&)> done_;
};

}  // namespace

GrpcSender::GrpcSender(std::vector<std::shared_ptr<grpc::Channel>> channels,
                       GrpcSenderOptions options)
    : channels_(std::move(channels)), options_(std::move(options)) {
  for (const auto& channel : channels_) stubs_.push_back(v1::Translator::NewStub(channel));
}

absl::Status GrpcSender::WaitUntilReachable(absl::Duration timeout) {
  if (channels_.empty()) return absl::InvalidArgumentError("no channel to send on");
  const auto by = std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout);
  for (const auto& channel : channels_) {
    if (!channel->WaitForConnected(by)) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to the server within ", absl::FormatDuration(timeout)));
    }
  }
  return absl::OkStatus();
}

std::unique_ptr<SentCall> GrpcSender::NewCall(CallRecord* record) {
  return std::make_unique<GrpcCall>(stubs_[next_stub_.fetch_add(1) % stubs_.size()].get(), record,
                                    options_);
}

}  // namespace transerve
