// The transerve.v1.Translator service over gRPC's callback API: one reactor per call, completed
// by the schedulers, no thread per request.
#pragma once

#include <grpcpp/impl/service_type.h>

#include <memory>

#include "server/service_context.h"

namespace transerve {

// The service, to register with a grpc::ServerBuilder; `context` must outlive it.
std::unique_ptr<grpc::Service> MakeTranslatorService(ServiceContext* context);

}  // namespace transerve
