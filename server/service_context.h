// What the Translator service's calls share with the server that runs them: the configuration,
// the model repository, the metrics and the count of calls in flight (which the drain waits on).
#pragma once

#include <grpcpp/support/status.h>

namespace grpc {
class CallbackServerContext;
}  // namespace grpc

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/glossaries/glossary_store.h"
#include "server/metrics.h"
#include "server/models/model_repository.h"
#include "server/server.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

class ServiceContext {
 public:
  explicit ServiceContext(ServerConfig config) : config(std::move(config)) {}
  ServiceContext(const ServiceContext&) = delete;
  ServiceContext& operator=(const ServiceContext&) = delete;

  const ServerConfig config;
  ServerMetrics metrics;
  // Every model, loaded or not; set once, before `ready`.
  std::unique_ptr<ModelRepository> repository;
  // The glossaries (--data_dir, or memory); set before anything listens.
  std::unique_ptr<GlossaryStore> glossaries;
  std::atomic<bool> ready{false};

  // A translation call starts / has finished (its reactor's OnDone).
  void Enter();
  void Leave();
  // Until no call is in flight or `deadline`; true when none is.
  bool AwaitIdle(absl::Time deadline);

  // Counts one answered call in the metrics (and a debug log line), before its status leaves,
  // so a caller that got its answer sees it counted.
  void Record(const char* method, grpc::StatusCode code, const std::string& model,
              const grpc::CallbackServerContext* ctx, absl::Time start, int texts);

 private:
  absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace transerve
