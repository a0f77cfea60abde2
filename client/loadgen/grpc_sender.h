// The load generator's calls over gRPC (the callback API: no thread per call), round-robin over
// several channels (several channels make several connections).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "client/loadgen/request_sender.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {

struct GrpcSenderOptions {
  bool stream = false;                             // TranslateStream, else Translate
  std::string auth_token;                          // sent as "authorization: Bearer ..."
  absl::Duration deadline = absl::ZeroDuration();  // per call; zero: none
};

class GrpcSender : public RequestSender {
 public:
  GrpcSender(std::vector<std::shared_ptr<grpc::Channel>> channels, GrpcSenderOptions options);

  absl::Status WaitUntilReachable(absl::Duration timeout) override;
  std::unique_ptr<SentCall> NewCall(CallRecord* record) override;

 private:
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::Translator::Stub>> stubs_;
  std::atomic<size_t> next_stub_{0};
  const GrpcSenderOptions options_;
};

}  // namespace transerve
