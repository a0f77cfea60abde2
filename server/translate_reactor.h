// The unary Translate call: one reactor per call that queues the request's sentences and
// answers once every sentence is back (results in input order, or the first error).
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "server/service_context.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

// Starts serving `request`; the reactor deletes itself when the call is done. The response is
// written to `response` (the raw method's buffer) before the call finishes.
grpc::ServerUnaryReactor* StartTranslate(ServiceContext* context, grpc::CallbackServerContext* ctx,
                                         v1::TranslateRequest request, grpc::ByteBuffer* response);

}  // namespace transerve
