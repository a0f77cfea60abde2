#include "server/grpc_status.h"

namespace transerve {
namespace {

// The client gives up at its own deadline and cancels the call; that cancellation can reach us
// before our copy of the deadline (the client's timeout counted from when the call arrived,
// so later by the transit time) has passed. A cancellation this close to the deadline is the
// deadline, and is answered and counted as such.
constexpr absl::Duration kDeadlineTransitSlack = absl::Milliseconds(250);

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

absl::Status SentenceError(const absl::Status& s, absl::Time deadline) {
  if (s.code() == absl::StatusCode::kCancelled && absl::Now() + kDeadlineTransitSlack >= deadline) {
    return absl::DeadlineExceededError("the request's deadline passed while it was translated");
  }
  return s;
}

}  // namespace transerve
