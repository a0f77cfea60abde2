// The one place absl statuses become gRPC statuses, and the names metrics and logs give codes.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace transerve {

// The codes are numerically the same; the message is kept.
grpc::Status ToGrpcStatus(const absl::Status& s);

// "OK", "UNAVAILABLE", ...
std::string CodeName(grpc::StatusCode code);

// A sentence's error as its call reports it: a cancellation that reaches us this close to the
// call's deadline is the deadline (see kDeadlineTransitSlack in the .cc).
absl::Status SentenceError(const absl::Status& s, absl::Time deadline);

}  // namespace transerve
