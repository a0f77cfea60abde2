#include "client/loadgen/http_api.h"

#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"

namespace transerve {
namespace {

using nlohmann::json;

// The error of a failed answer: v1's {"error": {"status": NAME, "message": ...}} or
// LibreTranslate's {"error": "message"}; the HTTP status when the body says nothing usable.
absl::Status ErrorFromBody(HttpApi api, int http_status, std::string_view body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  std::string message = absl::StrCat("HTTP ", http_status);
  absl::StatusCode code = api == HttpApi::kV1 ? StatusCodeFromV1Http(http_status)
                                              : StatusCodeFromLibreHttp(http_status);
  if (j.is_object() && j.contains("error")) {
    const json& error = j["error"];
    if (error.is_string()) {
      absl::StrAppend(&message, ": ", error.get<std::string>());
    } else if (error.is_object()) {
      if (error.contains("message") && error["message"].is_string()) {
        absl::StrAppend(&message, ": ", error["message"].get<std::string>());
      }
      if (api == HttpApi::kV1 && error.contains("status") && error["status"].is_string()) {
        code = StatusCodeFromName(error["status"].get<std::string>());
      }
    }
  }
  // A failure the server itself marks OK would count as a success: keep it an error.
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  return absl::Status(code, message);
}

absl::Status ReadV1Answer(std::string_view body, CallRecord* record) {
  v1::TranslateResponse response;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(std::string(body), &response, options).ok()) {
    return absl::InternalError("a 200 answer that is not TranslateResponse JSON");
  }
  for (const auto& t : response.translations()) record->Count(t);
  return absl::OkStatus();
}

absl::Status ReadLibreAnswer(std::string_view body, CallRecord* record) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("translatedText")) {
    return absl::InternalError("a 200 answer without translatedText");
  }
  const json& text = j["translatedText"];
  if (text.is_string()) {
    ++record->sentences;
  } else if (text.is_array()) {
    record->sentences += static_cast<int64_t>(text.size());
  } else {
    return absl::InternalError("translatedText is neither a string nor an array");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HttpApi> ParseHttpApi(std::string_view name) {
  if (name == "v1") return HttpApi::kV1;
  if (name == "libretranslate") return HttpApi::kLibreTranslate;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown HTTP API '", std::string(name), "' (v1 or libretranslate)"));
}

std::string TranslatePath(HttpApi api, bool stream) {
  if (api == HttpApi::kLibreTranslate) return "/translate";
  return stream ? "/v1/translate/stream" : "/v1/translate";
}

std::string RequestBody(HttpApi api, const v1::TranslateRequest& request,
                        const std::string& source_language, const std::string& target_language) {
  if (api == HttpApi::kV1) {
    std::string body;
    // Serialising a message the program built cannot fail.
    (void)google::protobuf::util::MessageToJsonString(request, &body);
    return body;
  }
  json q = request.texts_size() == 1
               ? json(request.texts(0))
               : json(std::vector<std::string>(request.texts().begin(), request.texts().end()));
  return json{{"q", std::move(q)}, {"source", source_language}, {"target", target_language}}.dump();
}

absl::Status ReadAnswer(HttpApi api, int http_status, std::string_view body, CallRecord* record) {
  if (http_status != 200) return ErrorFromBody(api, http_status, body);
  return api == HttpApi::kV1 ? ReadV1Answer(body, record) : ReadLibreAnswer(body, record);
}

absl::StatusCode StatusCodeFromName(std::string_view name) {
  for (int c = 0; c <= 16; ++c) {
    const auto code = static_cast<absl::StatusCode>(c);
    if (absl::StatusCodeToString(code) == name) return code;
  }
  return absl::StatusCode::kUnknown;
}

absl::StatusCode StatusCodeFromV1Http(int http_status) {
  switch (http_status) {
    case 200:
      return absl::StatusCode::kOk;
    case 400:
    case 413:  // a body over the limit
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 499:
      return absl::StatusCode::kCancelled;
    case 501:
      return absl::StatusCode::kUnimplemented;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    case 500:
      return absl::StatusCode::kInternal;
    default:
      return absl::StatusCode::kUnknown;
  }
}

absl::StatusCode StatusCodeFromLibreHttp(int http_status) {
  switch (http_status) {
    case 200:
      return absl::StatusCode::kOk;
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 403:
      return absl::StatusCode::kUnauthenticated;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 500:
      return absl::StatusCode::kInternal;
    default:
      return absl::StatusCode::kUnknown;
  }
}

void SseReader::Feed(std::string_view bytes) {
  pending_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(pending_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Line(line);
  }
  pending_.erase(0, start);
}

void SseReader::Line(std::string_view line) {
  if (line.empty()) {  // the end of an event
    if (has_data_) on_event_(event_.empty() ? "message" : event_, data_);
    event_.clear();
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // a comment (keep-alive)
  const size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "event") {
    event_ = std::string(value);
  } else if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  }
}

V1StreamReader::V1StreamReader(CallRecord* record)
    : record_(record),
      sse_([this](std::string_view event, std::string_view data) { Event(event, data); }) {}

void V1StreamReader::Event(std::string_view event, std::string_view data) {
  if (ended_) return;
  if (event == "done") {
    ended_ = true;
    return;
  }
  if (event == "error") {
    ended_ = true;
    status_ = ErrorFromBody(HttpApi::kV1, 500, data);
    return;
  }
  if (!record_->first_chunk_seen) {
    record_->first_chunk_seen = true;
    record_->first_chunk = std::chrono::steady_clock::now();
  }
  v1::TranslateStreamResponse message;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(std::string(data), &message, options).ok()) {
    ended_ = true;
    status_ = absl::InternalError("a stream message that is not TranslateStreamResponse JSON");
    return;
  }
  if (message.done()) record_->Count(message.translation());
}

absl::Status V1StreamReader::Finish() const {
  if (!ended_) return absl::UnavailableError("the stream ended before its done event");
  return status_;
}

}  // namespace transerve
