// The transerve.v1.Admin service (proto/transerve/v1/admin.proto) over the model repository:
// list, load, unload, reload. Behind its own bearer tokens (ServerConfig::admin_tokens); with
// none configured every call is PERMISSION_DENIED.
#pragma once

#include <grpcpp/impl/service_type.h>

#include <memory>

#include "server/service_context.h"

namespace transerve {

// `context` must outlive the service.
std::unique_ptr<grpc::Service> MakeAdminService(ServiceContext* context);

}  // namespace transerve
