// Fuzz target: the HTTP APIs' request handling, as functions from an HttpInput to an HttpReply
// (LibreTranslate's /translate, /detect, /languages, /frontend/settings; the native /v1/translate,
// /v1/translate/stream up to its first event, /v1/models; DeepL's routes and glossary routes
// under any method and path, and DeepLX's) over a fake backend
// whose answers are random but valid. Every reply must be JSON of the API's shape with one of
// the API's statuses, and 500 only when the backend itself failed (never for the input).
//
// Input: a header of a few bytes (which API, content type, what the backend answers, how many
// parameters), then length-prefixed parameters and Authorization header, then the body.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "server/http/deepl_api.h"
#include "server/http/http_exchange.h"
#include "server/http/libretranslate_api.h"
#include "server/http/native_api.h"
#include "server/http/translator_backend.h"

namespace {

using Json = nlohmann::json;
using transerve::http::CallOptions;
using transerve::http::HttpInput;
using transerve::http::HttpReply;
namespace v1 = transerve::v1;

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::string Bytes(size_t n) {
    n = std::min(n, size_ - pos_);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  std::string Short() { return Bytes(Byte()); }  // a length byte, then that many bytes
  std::string Rest() { return Bytes(size_ - pos_); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

grpc::StatusCode CodeOf(uint8_t b) {
  // Mostly OK, so that the API's own paths are reached.
  static constexpr grpc::StatusCode kCodes[] = {
      grpc::StatusCode::INVALID_ARGUMENT,   grpc::StatusCode::NOT_FOUND,
      grpc::StatusCode::UNAUTHENTICATED,    grpc::StatusCode::PERMISSION_DENIED,
      grpc::StatusCode::RESOURCE_EXHAUSTED, grpc::StatusCode::UNAVAILABLE,
      grpc::StatusCode::DEADLINE_EXCEEDED,  grpc::StatusCode::CANCELLED,
      grpc::StatusCode::INTERNAL,           grpc::StatusCode::UNKNOWN,
      grpc::StatusCode::OUT_OF_RANGE,       grpc::StatusCode::UNIMPLEMENTED};
  const size_t n = sizeof kCodes / sizeof kCodes[0];
  return b < 256 - n ? grpc::StatusCode::OK : kCodes[b - (256 - n)];
}

bool MapsTo500(grpc::StatusCode c) {
  return c == grpc::StatusCode::INTERNAL || c == grpc::StatusCode::UNKNOWN ||
         c == grpc::StatusCode::UNIMPLEMENTED;
}

v1::ModelInfo Model(const std::string& name, const std::string& source, const std::string& target,
                    const std::vector<std::string>& targets) {
  v1::ModelInfo m;
  m.set_name(name);
  m.set_source_language(source);
  m.set_target_language(target);
  for (const auto& t : targets) m.add_target_languages(t);
  return m;
}

// Answers every text, with up to num_hypotheses hypotheses; its statuses come from the input.
class FakeBackend : public transerve::http::TranslatorBackend {
 public:
  explicit FakeBackend(Reader& in) {
    list_code_ = CodeOf(in.Byte());
    translate_code_ = CodeOf(in.Byte());
    const uint8_t shape = in.Byte();
    key_required_ = shape & 1;
    static const char* const kDetected[] = {"", "en", "de", "fr", "xx", "mul"};
    detected_ = kDetected[(shape >> 1) % 6];
    confidence_ = static_cast<float>(in.Byte()) / 255.0f;
    *models_.add_models() = Model("opus-mt-en-de", "en", "de", {"de"});
    if (shape & 0x10) *models_.add_models() = Model("opus-mt-de-en", "de", "en", {});
    if (shape & 0x20) *models_.add_models() = Model("opus-mt-en-mul", "en", "mul", {"fr", "es"});
    if (shape & 0x40) *models_.add_models() = Model("opus-mt-mul-en", "mul", "en", {"en"});
    if (shape & 0x80) {
      // A model with arbitrary names and codes, read one field after another.
      const std::string name = in.Short(), source = in.Short(), target = in.Short();
      *models_.add_models() = Model(name, source, target, {in.Short()});
    }
    salt_ = in.Short();
  }

  grpc::Status Translate(const v1::TranslateRequest& request, const CallOptions&,
                         v1::TranslateResponse* response) override {
    translate_called = true;
    texts_sent = request.texts_size();
    used_code = translate_code_;
    if (translate_code_ != grpc::StatusCode::OK) return grpc::Status(translate_code_, salt_);
    response->set_model(models_.models(0).name());
    response->set_detected_language(detected_);
    response->set_detected_language_confidence(confidence_);
    for (const std::string& text : request.texts()) {
      v1::Translation* t = response->add_translations();
      t->set_text(salt_ + text.substr(0, 64));
      for (int h = 0; h < request.options().num_hypotheses(); ++h) {
        t->add_hypotheses()->set_text(h == 0 ? t->text() : salt_.substr(0, h));
      }
    }
    return grpc::Status::OK;
  }
  // A stream of one message per text (its translation as one chunk), then the input's status.
  class FakeStream : public Stream {
   public:
    FakeStream(int messages, grpc::Status end) : left_(messages), end_(std::move(end)) {}
    bool Next(v1::TranslateStreamResponse* m) override {
      if (left_ <= 0) return false;
      m->set_index(--left_);
      m->set_text_delta("chunk");
      m->set_done(true);
      return true;
    }
    void Cancel() override { left_ = 0; }
    grpc::Status Finish() override { return end_; }

   private:
    int left_;
    grpc::Status end_;
  };
  std::unique_ptr<Stream> OpenStream(const v1::TranslateRequest& request,
                                     const CallOptions&) override {
    translate_called = true;
    used_code = translate_code_;
    const bool ok = translate_code_ == grpc::StatusCode::OK;
    return std::make_unique<FakeStream>(
        ok ? request.texts_size() : 0,
        ok ? grpc::Status::OK : grpc::Status(translate_code_, salt_));
  }
  grpc::Status ListModels(const CallOptions&, v1::ListModelsResponse* response) override {
    if (list_code_ != grpc::StatusCode::OK) {
      if (MapsTo500(list_code_)) list_failed_500 = true;
      return grpc::Status(list_code_, salt_);
    }
    *response = models_;
    return grpc::Status::OK;
  }
  bool Serving() override { return true; }
  bool KeyRequired() const override { return key_required_; }

  bool translate_called = false;
  int texts_sent = 0;
  grpc::StatusCode used_code = grpc::StatusCode::OK;
  bool list_failed_500 = false;

 private:
  grpc::StatusCode list_code_, translate_code_;
  bool key_required_ = false;
  std::string detected_;
  float confidence_ = 0;
  v1::ListModelsResponse models_;
  std::string salt_;
};

const char* const kContentTypes[] = {"application/json",
                                     "application/x-www-form-urlencoded",
                                     "multipart/form-data; boundary=b",
                                     "",
                                     "application/json; charset=utf-8",
                                     "text/plain",
                                     "application/ld+json",
                                     "APPLICATION/JSON"};
const char* const kNames[] = {"q", "source", "target", "format", "alternatives", "api_key"};
const char* const kDeeplNames[] = {
    "text",      "target_lang", "source_lang", "tag_handling", "glossary_id",    "split_sentences",
    "formality", "ignore_tags", "name",        "entries",      "entries_format", "type"};

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

bool Has(const Json& object, const char* key) { return object.is_object() && object.contains(key); }

// The reply's body as JSON, after checking that its status is one of `statuses` and that it
// says it is JSON.
Json JsonReplyOrTrap(const HttpReply& reply, const std::set<int>& statuses) {
  Check(statuses.count(reply.status) == 1);
  Check(reply.content_type == "application/json");
  try {
    return Json::parse(reply.body);
  } catch (const Json::exception&) {
    __builtin_trap();
  }
}

// A native API reply: JSON, an API status; an error is {"error": {code, status, message}}, 500
// only for a backend failing so.
void CheckNativeReply(const HttpReply& reply, const FakeBackend& backend) {
  static const std::set<int> kStatuses = {200, 400, 401, 403, 404, 413,
                                          429, 499, 500, 501, 503, 504};
  const Json body = JsonReplyOrTrap(reply, kStatuses);
  if (reply.status == 200) return;
  Check(Has(body, "error") && body["error"].is_object() && body["error"]["code"].is_number() &&
        body["error"]["status"].is_string() && body["error"]["message"].is_string());
  if (reply.status == 500) {
    Check(backend.list_failed_500 || (backend.translate_called && MapsTo500(backend.used_code)));
  }
}

int FuzzNativeApi(HttpInput& input, FakeBackend& backend, int endpoint) {
  if (endpoint == 0) {
    input.path = "/v1/translate";
    CheckNativeReply(transerve::http::V1Translate(input, backend), backend);
  } else if (endpoint == 1) {
    input.path = "/v1/translate/stream";
    transerve::http::StreamStart start = transerve::http::OpenV1Stream(input, backend);
    if (start.error.has_value()) {
      CheckNativeReply(*start.error, backend);
    } else {
      // A first event, then the rest; the stream's end is done or an error event.
      Check(start.first.rfind("data: ", 0) == 0 || start.first.rfind("event: done\n", 0) == 0);
      v1::TranslateStreamResponse m;
      while (start.stream && start.stream->Next(&m)) {
        Check(transerve::http::SseMessage(m).rfind("data: {", 0) == 0);
      }
    }
  } else {
    input.path = "/v1/models";
    CheckNativeReply(transerve::http::V1Models(input, backend), backend);
  }
  return 0;
}

// DeepL's API: JSON with DeepL's statuses, {"message"} on errors ({"code", "message"} for
// DeepLX), a 204 with nothing, or a glossary's TSV; 500 or 501 only for a backend failing so
// (the fake keeps no glossaries: its glossary calls answer UNIMPLEMENTED).
int FuzzDeeplApi(HttpInput& input, FakeBackend& backend) {
  transerve::http::DeeplApi api(backend);
  static const char* const kPaths[] = {"/v2/glossaries",
                                       "/v3/glossaries",
                                       "/v2/glossaries/x",
                                       "/v3/glossaries/x/entries",
                                       "/v3/glossaries/x/dictionaries",
                                       "/v2/glossaries/x/entries",
                                       "/v3/x/glossaries",
                                       "/v2/glossaries/a/b/c"};
  static const char* const kMethods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  // The route and the method: the timeout byte's bits (the body took the rest of the input).
  const auto route = static_cast<uint8_t>(input.timeout_ms);
  HttpReply reply;
  bool glossary_route = false;
  switch (route % 6) {
    case 0:
      input.path = "/v2/translate";
      reply = api.Translate(input);
      break;
    case 1:
      reply = api.Languages(input);
      break;
    case 2:
      reply = api.Usage(input);
      break;
    case 3:
      reply = api.GlossaryLanguagePairs(input);
      break;
    case 4:
      input.path = kPaths[(route >> 3) % 8];
      input.method = kMethods[(route >> 6) % 5];
      reply = api.Glossaries(input);
      glossary_route = true;
      break;
    default:
      input.path = "/deeplx/translate";
      reply = api.DeeplxTranslate(input);
      break;
  }
  static const std::set<int> kStatuses = {200, 201, 204, 400, 403, 404, 405, 409,
                                          429, 456, 499, 500, 501, 503, 504};
  Check(kStatuses.count(reply.status) == 1);
  if (reply.status == 204) return 0;
  if (reply.content_type == "text/tab-separated-values") return 0;
  const Json body = JsonReplyOrTrap(reply, kStatuses);
  if (reply.status >= 400) {
    Check(Has(body, "message") && body["message"].is_string());
    if (route % 6 == 5) Check(Has(body, "code") && body["code"].is_number());
  }
  if (reply.status == 500 || reply.status == 501) {
    Check(glossary_route || backend.list_failed_500 ||
          (backend.translate_called && MapsTo500(backend.used_code)));
  }
  if (reply.status == 200 && route % 6 == 0) {
    Check(Has(body, "translations") && body["translations"].is_array() &&
          static_cast<int>(body["translations"].size()) == backend.texts_sent);
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  const uint8_t which = in.Byte();
  HttpInput input;
  input.method = (which & 0x40) ? "GET" : "POST";
  input.content_type = kContentTypes[(which >> 2) & 7];
  FakeBackend backend(in);
  const int params = in.Byte() & 7;
  const bool deepl = (which & 3) == 2 && (which & 0x20);
  for (int i = 0; i < params; ++i) {
    const uint8_t k = in.Byte();
    const std::string name = k >= 6 * 40 ? in.Short() : deepl ? kDeeplNames[k % 12] : kNames[k % 6];
    input.params.emplace(name, in.Short());
  }
  if (which & 0x80) input.authorization = in.Short();
  input.timeout_ms = in.Byte();
  input.body = in.Rest();

  transerve::http::LtSettings settings;
  settings.char_limit = (which & 0x20) ? 64 : -1;
  settings.batch_limit = (which & 0x20) ? 4 : -1;
  // The native API: in place of /frontend/settings with limits (a case the LT one barely needs).
  if ((which & 3) == 3 && (which & 0x20)) return FuzzNativeApi(input, backend, in.Byte() % 3);
  // DeepL's: in place of LibreTranslate's /languages with limits.
  if (deepl) return FuzzDeeplApi(input, backend);
  HttpReply reply;
  switch (which & 3) {
    case 0:
      input.path = "/translate";
      reply = transerve::http::LtTranslate(input, backend, settings);
      break;
    case 1:
      input.path = "/detect";
      reply = transerve::http::LtDetect(input, backend);
      break;
    case 2:
      input.path = "/languages";
      reply = transerve::http::LtLanguages(input, backend);
      break;
    default:
      input.path = "/frontend/settings";
      reply = transerve::http::LtFrontendSettings(input, backend, settings);
      break;
  }

  static const std::set<int> kStatuses = {200, 400, 403, 413, 429, 499, 500, 503, 504};
  const Json body = JsonReplyOrTrap(reply, kStatuses);
  if (reply.status != 200) {
    Check(Has(body, "error") && body.size() == 1 && body["error"].is_string());
  }
  // 500 only for a backend that failed so (or answered badly, which this one never does).
  if (reply.status == 500) {
    Check(backend.list_failed_500 || (backend.translate_called && MapsTo500(backend.used_code)));
  }
  if (reply.status != 200) return 0;
  switch (which & 3) {
    case 0: {
      Check(backend.translate_called && backend.used_code == grpc::StatusCode::OK);
      Check(Has(body, "translatedText"));
      const Json& t = body["translatedText"];
      Check(t.is_string() || (t.is_array() && static_cast<int>(t.size()) == backend.texts_sent));
      if (body.contains("detectedLanguage")) {
        const Json& d = body["detectedLanguage"];
        Check(d.is_object() || (d.is_array() && d.size() == t.size()));
      }
      break;
    }
    case 1:
      Check(body.is_array() && !body.empty());
      for (const Json& d : body) {
        Check(Has(d, "language") && Has(d, "confidence") && d["language"].is_string() &&
              d["confidence"].is_number());
        const double c = d["confidence"].get<double>();
        Check(c >= 0 && c <= 100);
      }
      break;
    case 2:
      Check(body.is_array());
      for (const Json& l : body) {
        Check(Has(l, "code") && Has(l, "name") && Has(l, "targets") && l["code"].is_string() &&
              l["name"].is_string() && l["targets"].is_array());
      }
      break;
    default:
      Check(Has(body, "charLimit") && Has(body, "language") && body["charLimit"].is_number() &&
            body["language"].is_object());
      break;
  }
  return 0;
}
