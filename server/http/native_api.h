// The native JSON API: the Translator service's messages in proto3's JSON mapping
// (docs/http.md): POST /v1/translate, POST /v1/translate/stream (Server-Sent Events),
// GET /v1/models, GET /healthz and GET /readyz. Functions from an HttpInput to an HttpReply (the
// stream: to its first event), so they are tested and fuzzed without sockets.
#pragma once

#include <grpcpp/support/status.h>

#include <memory>
#include <optional>
#include <string>

#include "server/http/http_exchange.h"
#include "server/http/translator_backend.h"
#include "transerve/v1/translator.pb.h"

namespace transerve::http {

// The HTTP status for a gRPC code (docs/http.md): 400, 401, 403, 404, 429, 499, 501, 503, 504;
// 500 for the rest.
int HttpStatusOf(grpc::StatusCode code);

// {"error": {"code": 3, "status": "INVALID_ARGUMENT", "message": "..."}} with its HTTP status.
HttpReply ErrorReply(const grpc::Status& status);

// The call options of a request: its bearer token (the Authorization header's, else an
// `api_key` parameter, LibreTranslate's name for it) and its X-Request-Timeout-Ms.
CallOptions CallOptionsOf(const HttpInput& in);

// A JSON body as a TranslateRequest (lowerCamelCase or snake_case names; unknown fields are
// an error); INVALID_ARGUMENT with the parser's reason otherwise.
grpc::Status ParseTranslateRequest(const HttpInput& in, v1::TranslateRequest* request);

// 413 (INVALID_ARGUMENT in the error JSON) when a text is over `char_limit` code points (the
// server's --max_text_chars; -1: none), before anything is called: the text is too large.
std::optional<HttpReply> TextOverLimit(const v1::TranslateRequest& request, int char_limit);

HttpReply V1Translate(const HttpInput& in, TranslatorBackend& backend, int char_limit = -1);
HttpReply V1Models(const HttpInput& in, TranslatorBackend& backend);
HttpReply Healthz();
HttpReply Readyz(TranslatorBackend& backend);

// POST /v1/translate/stream up to its first event: either `error` (the request failed before
// any message, answered with its own HTTP status) or the open `stream` and the `first` event
// to send after the 200 and the event-stream header.
struct StreamStart {
  std::optional<HttpReply> error;
  std::unique_ptr<TranslatorBackend::Stream> stream;
  std::string first;
};
StreamStart OpenV1Stream(const HttpInput& in, TranslatorBackend& backend, int char_limit = -1);

// The Server-Sent Events of a stream: a message, the end, an error after the stream started.
std::string SseMessage(const v1::TranslateStreamResponse& message);
std::string SseDone();
std::string SseError(const grpc::Status& status);

}  // namespace transerve::http
