#include "server/service_context.h"

#include "model/core/logging.h"
#include "server/grpc_status.h"
#include "server/http/front_end_metadata.h"

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
                            const grpc::CallbackServerContext* ctx, absl::Time start, int texts) {
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const std::string code_name = CodeName(code);
  const char* protocol = FrontEndOf(*ctx);
  metrics.RecordRequest(method, code_name, model, protocol, seconds);
  Log().debug("rpc protocol={} method={} model={} texts={} code={} seconds={:.6f}", protocol,
              method, model, texts, code_name, seconds);
}

}  // namespace transerve
