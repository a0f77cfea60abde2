// The server-streaming TranslateStream call: partial text per sentence as tokens are produced,
// then each sentence's final result (serialized TranslateStreamResponse messages).
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "server/service_context.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

// Starts serving `request`; the reactor deletes itself when the call is done.
grpc::ServerWriteReactor<grpc::ByteBuffer>* StartTranslateStream(ServiceContext* context,
                                                                 grpc::CallbackServerContext* ctx,
                                                                 v1::TranslateRequest request);

}  // namespace transerve
