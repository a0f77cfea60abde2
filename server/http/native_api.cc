#include "server/http/native_api.h"

#include <google/protobuf/util/json_util.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"
#include "text/utf8_chars.h"

namespace transerve::http {
namespace {

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  // Every message here is ours and serializable: a failure would be a bug, not input.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

HttpReply JsonReply(int status, std::string body) {
  HttpReply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

nlohmann::json ErrorJson(const grpc::Status& status) {
  return {{"error",
           {{"code", static_cast<int>(status.error_code())},
            {"status", CodeName(status.error_code())},
            {"message", status.error_message()}}}};
}

}  // namespace

int HttpStatusOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return 200;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
      return 400;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::NOT_FOUND:
      return 404;
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED:
      return 409;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 429;
    case grpc::StatusCode::CANCELLED:
      return 499;
    case grpc::StatusCode::UNIMPLEMENTED:
      return 501;
    case grpc::StatusCode::UNAVAILABLE:
      return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 504;
    default:
      return 500;
  }
}

HttpReply ErrorReply(const grpc::Status& status) {
  return JsonReply(
      HttpStatusOf(status.error_code()),
      ErrorJson(status).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

CallOptions CallOptionsOf(const HttpInput& in) {
  CallOptions options;
  options.bearer_token = BearerToken(in.authorization);
  if (options.bearer_token.empty()) {
    if (auto it = in.params.find("api_key"); it != in.params.end()) {
      options.bearer_token = it->second;
    }
  }
  options.timeout_ms = in.timeout_ms;
  return options;
}

grpc::Status ParseTranslateRequest(const HttpInput& in, v1::TranslateRequest* request) {
  if (in.body.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the body must be a TranslateRequest as JSON, e.g. "
                        "{\"texts\": [\"Hello.\"], \"targetLanguage\": \"de\"}");
  }
  // Any content type: `curl -d` sends JSON labelled as a form, and the body decides anyway.
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(in.body, request, options);
  if (!parsed.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("the body is not a TranslateRequest in JSON: ",
                                     std::string(parsed.message()).substr(0, 200)));
  }
  return grpc::Status::OK;
}

std::optional<HttpReply> TextOverLimit(const v1::TranslateRequest& request, int char_limit) {
  if (char_limit < 0) return std::nullopt;
  for (int i = 0; i < request.texts_size(); ++i) {
    const int64_t chars = text::CountCodePoints(request.texts(i));
    if (chars > char_limit) {
      // The same words as the gRPC answer; 413, since the text itself is what is too large.
      return JsonReply(
          413, ErrorJson(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                      absl::StrCat("texts[", i, "] has ", chars,
                                                   " characters; the limit is ", char_limit)))
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  return std::nullopt;
}

HttpReply V1Translate(const HttpInput& in, TranslatorBackend& backend, int char_limit) {
  v1::TranslateRequest request;
  if (auto s = ParseTranslateRequest(in, &request); !s.ok()) return ErrorReply(s);
  if (auto over = TextOverLimit(request, char_limit)) return *std::move(over);
  v1::TranslateResponse response;
  const grpc::Status s = backend.Translate(request, CallOptionsOf(in), &response);
  if (!s.ok()) return ErrorReply(s);
  return JsonReply(200, ToJson(response));
}

HttpReply V1Models(const HttpInput& in, TranslatorBackend& backend) {
  v1::ListModelsResponse response;
  const grpc::Status s = backend.ListModels(CallOptionsOf(in), &response);
  if (!s.ok()) return ErrorReply(s);
  return JsonReply(200, ToJson(response));
}

HttpReply Healthz() { return JsonReply(200, R"({"status":"SERVING"})"); }

HttpReply Readyz(TranslatorBackend& backend) {
  if (backend.Serving()) return JsonReply(200, R"({"status":"SERVING"})");
  return JsonReply(503, R"({"status":"NOT_SERVING"})");
}

StreamStart OpenV1Stream(const HttpInput& in, TranslatorBackend& backend, int char_limit) {
  StreamStart start;
  v1::TranslateRequest request;
  if (auto s = ParseTranslateRequest(in, &request); !s.ok()) {
    start.error = ErrorReply(s);
    return start;
  }
  if (auto over = TextOverLimit(request, char_limit)) {
    start.error = std::move(over);
    return start;
  }
  start.stream = backend.OpenStream(request, CallOptionsOf(in));
  v1::TranslateStreamResponse first;
  if (start.stream->Next(&first)) {
    start.first = SseMessage(first);
    return start;
  }
  const grpc::Status s = start.stream->Finish();
  start.stream.reset();
  // A stream of no message that ended well: an empty request has no texts, which the service
  // refuses, so this is only reached with an error; an OK end still gets its done event.
  if (!s.ok()) {
    start.error = ErrorReply(s);
  } else {
    start.first = SseDone();
  }
  return start;
}

std::string SseMessage(const v1::TranslateStreamResponse& message) {
  return absl::StrCat("data: ", ToJson(message), "\n\n");
}

std::string SseDone() { return "event: done\ndata: {}\n\n"; }

std::string SseError(const grpc::Status& status) {
  return absl::StrCat(
      "event: error\ndata: ",
      ErrorJson(status).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "\n\n");
}

}  // namespace transerve::http
