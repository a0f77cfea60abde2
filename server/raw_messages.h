// Translate and TranslateStream are raw gRPC methods (bytes in, bytes out) so that their request
// parses as LenientTranslateRequest (proto/transerve/internal/lenient_request.proto): invalid
// UTF-8 in a text then reaches validation, which names it, instead of failing the parse. These
// are the conversions between those bytes and the messages.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <optional>

#include "google/protobuf/message_lite.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

// The request a call's bytes carry; nullopt when they are no TranslateRequest at all.
std::optional<v1::TranslateRequest> ParseTranslateRequest(const grpc::ByteBuffer& raw);

// `message`'s wire bytes, for a raw method's response.
grpc::ByteBuffer SerializeMessage(const google::protobuf::MessageLite& message);

}  // namespace transerve
