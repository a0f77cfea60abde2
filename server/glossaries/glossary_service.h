// The transerve.v1.Glossaries service (proto/transerve/v1/glossaries.proto) over the server's
// GlossaryStore, behind the Translator service's bearer tokens.
#pragma once

#include <grpcpp/impl/service_type.h>

#include <memory>

#include "server/service_context.h"

namespace transerve {

// `context` (and its glossary store) must outlive the service.
std::unique_ptr<grpc::Service> MakeGlossaryService(ServiceContext* context);

}  // namespace transerve
