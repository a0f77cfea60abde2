#include "server/service_context.h"

#include "model/core/logging.h"
#include "server/grpc_status.h"

namespace transerve {

void ServiceContext::Enter() {
  absl::MutexLock lock(&mu_);
  ++in_flight_;
}

void ServiceContext::Leave() {
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

bool ServiceContext::AwaitIdle(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

void ServiceContext::Record(const char* method, grpc::StatusCode code, const std::string& model,
                            absl::Time start, int texts) {
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const std::string code_name = CodeName(code);
  metrics.RecordRequest(method, code_name, model, seconds);
  Log().debug("rpc method={} model={} texts={} code={} seconds={:.6f}", method, model, texts,
              code_name, seconds);
}

}  // namespace transerve
