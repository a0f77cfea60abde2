// The HTTP front end's translation APIs as the load generator speaks them (HTTP_CONTRACT.md):
// the native v1 API (proto3 JSON of translator.proto) and the LibreTranslate-compatible one.
// Request bodies, answers read into a CallRecord, and HTTP failures mapped to gRPC's status
// codes, so both protocols' errors land in the same buckets. No I/O here.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/loadgen/request_sender.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

enum class HttpApi { kV1, kLibreTranslate };

// "v1" or "libretranslate"; INVALID_ARGUMENT otherwise.
absl::StatusOr<HttpApi> ParseHttpApi(std::string_view name);

// The route a translation goes to: /v1/translate, /v1/translate/stream or /translate.
std::string TranslatePath(HttpApi api, bool stream);

// The JSON body of one request. LibreTranslate carries only the texts (one: "q" a string;
// several: an array) and the language pair; model and decoding options are v1's.
std::string RequestBody(HttpApi api, const v1::TranslateRequest& request,
                        const std::string& source_language, const std::string& target_language);

// Reads an answer with HTTP status `http_status`: OK with the translations counted into
// `record` for a 200 that says what the API promises; otherwise the error's gRPC code (v1: the
// error's "status" name, else the HTTP status; LibreTranslate: its HTTP status) and message.
absl::Status ReadAnswer(HttpApi api, int http_status, std::string_view body, CallRecord* record);

// gRPC's code for its name ("RESOURCE_EXHAUSTED"); UNKNOWN for a name gRPC does not have.
absl::StatusCode StatusCodeFromName(std::string_view name);
// The v1 API's HTTP status for each code, read backwards (a 200 is OK).
absl::StatusCode StatusCodeFromV1Http(int http_status);
// LibreTranslate's HTTP statuses: 400 INVALID_ARGUMENT, 403 UNAUTHENTICATED, 429
// RESOURCE_EXHAUSTED, 503 UNAVAILABLE, 500 INTERNAL, anything else unexpected UNKNOWN.
absl::StatusCode StatusCodeFromLibreHttp(int http_status);

// Splits a text/event-stream into events as its bytes arrive in any pieces: each event's name
// ("message" when it has none) and its data lines joined by "\n".
class SseReader {
 public:
  using OnEvent = std::function<void(std::string_view event, std::string_view data)>;
  explicit SseReader(OnEvent on_event) : on_event_(std::move(on_event)) {}
  void Feed(std::string_view bytes);

 private:
  void Line(std::string_view line);
  OnEvent on_event_;
  std::string pending_;  // an incomplete line
  std::string event_;
  std::string data_;
  bool has_data_ = false;
};

// Follows one /v1/translate/stream answer's events: notes the first message, counts the final
// translations, and ends with the stream's status.
class V1StreamReader {
 public:
  explicit V1StreamReader(CallRecord* record);
  void Feed(std::string_view bytes) { sse_.Feed(bytes); }
  // The status once the bytes have ended: OK after the "done" event, the error of an "error"
  // event, else UNAVAILABLE (the stream was cut) or INTERNAL (a message was not JSON).
  absl::Status Finish() const;

 private:
  void Event(std::string_view event, std::string_view data);
  CallRecord* record_;
  SseReader sse_;
  bool ended_ = false;
  absl::Status status_;
};

}  // namespace transerve
