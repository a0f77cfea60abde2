#include "server/http/libretranslate_api.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <variant>

#include "absl/strings/str_cat.h"
#include "server/http/libretranslate_languages.h"
#include "server/http/libretranslate_request.h"
#include "text/language_code.h"
#include "text/language_detector.h"
#include "text/utf8_chars.h"

namespace transerve::http {
namespace {

using Json = nlohmann::json;

HttpReply JsonReply(int status, const Json& body) {
  HttpReply r;
  r.status = status;
  r.content_type = "application/json";
  // Replacement characters for invalid UTF-8 (echoed fields, a backend's text) rather than a throw.
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return r;
}

// A caller's value in a message, cut so an error never carries a megabyte back.
std::string Shown(const std::string& s) {
  constexpr size_t kShown = 64;
  return s.size() <= kShown ? s : s.substr(0, kShown) + "...";
}

// LibreTranslate's 0..100 from the detector's 0..1.
double Percent(float confidence) {
  return std::round(std::clamp(static_cast<double>(confidence), 0.0, 1.0) * 100.0);
}

CallOptions CallOptionsFor(const HttpInput& input, const std::string& api_key) {
  CallOptions o;
  o.bearer_token = LtBearerToken(input, api_key);
  o.timeout_ms = input.timeout_ms;
  return o;
}

// The models (for the language checks), or the reply that ends the request.
std::variant<v1::ListModelsResponse, HttpReply> ListModels(TranslatorBackend& backend,
                                                           const CallOptions& options) {
  v1::ListModelsResponse models;
  const grpc::Status s = backend.ListModels(options, &models);
  if (!s.ok()) return LtBackendError(s, !options.bearer_token.empty());
  return models;
}

std::optional<HttpReply> CheckLimits(const LtTranslateArgs& a, const LtSettings& settings) {
  const long long most_alternatives = std::max(0, settings.max_beam_size - 1);
  if (a.alternatives > most_alternatives) {
    return LtErrorReply(400, absl::StrCat("Invalid request: alternatives parameter must be <= ",
                                          most_alternatives));
  }
  if (a.batch && settings.batch_limit != -1 &&
      a.q.size() > static_cast<size_t>(std::max(0, settings.batch_limit))) {
    return LtErrorReply(400, absl::StrCat("Invalid request: request (", a.q.size(),
                                          ") exceeds text limit (", settings.batch_limit, ")"));
  }
  if (settings.char_limit != -1) {
    for (const std::string& text : a.q) {
      const auto n = static_cast<size_t>(text::CountCodePoints(text));
      if (n > static_cast<size_t>(std::max(0, settings.char_limit))) {
        // LibreTranslate's words; 413 rather than its 400, as the text itself is too large.
        return LtErrorReply(413, absl::StrCat("Invalid request: request (", n,
                                              ") exceeds text limit (", settings.char_limit, ")"));
      }
    }
  }
  return std::nullopt;
}

// LibreTranslate's checks of the languages and the format, in its order. `source` is the one
// asked for or, with "auto", the one detected.
std::optional<HttpReply> CheckLanguages(const LtTranslateArgs& a, const LtLanguageTable& table,
                                        const std::string& source, const std::string& target) {
  // LibreTranslate names the source as sent ("auto" too) when it lists no such language.
  if (!table.AcceptsSource(source)) {
    return LtErrorReply(400, absl::StrCat(Shown(a.source), " is not supported"));
  }
  if (!table.Lists(target)) {
    return LtErrorReply(400, absl::StrCat(Shown(a.target), " is not supported"));
  }
  if (!a.format.empty() && a.format != "text" && a.format != "html") {
    return LtErrorReply(400, absl::StrCat(Shown(a.format), " format is not supported"));
  }
  if (!table.Serves(source, target)) {
    return LtErrorReply(400, absl::StrCat(text::LanguageName(target), " (", target,
                                          ") is not available as a target language from ",
                                          text::LanguageName(source), " (", source, ")"));
  }
  return std::nullopt;
}

v1::TranslateRequest BuildRequest(const LtTranslateArgs& a, const LtSettings& settings,
                                  const std::string& source, const std::string& target) {
  v1::TranslateRequest r;
  for (const std::string& text : a.q) r.add_texts(text);
  r.set_source_language(source);
  r.set_target_language(target);
  if (a.format == "html") r.mutable_document()->set_format(v1::DocumentOptions::FORMAT_HTML);
  r.mutable_document()->set_glossary_id(a.glossary_id);
  if (a.alternatives > 0) {
    // Within max_beam_size - 1 (CheckLimits), so the casts and the sum cannot overflow.
    const int hypotheses = static_cast<int>(a.alternatives) + 1;
    const int beam = std::min(settings.alternatives_beam_size, settings.max_beam_size);
    r.mutable_options()->set_num_hypotheses(hypotheses);
    r.mutable_options()->set_beam_size(std::max(hypotheses, beam));
  }
  return r;
}

// The other hypotheses of a translation, as LibreTranslate filters them: no repeat, not the
// best one, not empty.
Json Alternatives(const v1::Translation& t) {
  Json out = Json::array();
  std::vector<std::string> seen = {t.text(), ""};
  for (int i = 1; i < t.hypotheses_size(); ++i) {
    const std::string& h = t.hypotheses(i).text();
    if (std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    seen.push_back(h);
    out.push_back(h);
  }
  return out;
}

// `detected`: {confidence, language} when the source was "auto".
HttpReply TranslateReply(const LtTranslateArgs& a, const v1::TranslateResponse& response,
                         const Json& detected) {
  if (static_cast<size_t>(response.translations_size()) != a.q.size()) {
    return LtErrorReply(500, absl::StrCat("Cannot translate text: the server answered ",
                                          response.translations_size(), " translations for ",
                                          a.q.size(), " texts"));
  }
  Json body = Json::object();
  if (a.batch) {
    Json texts = Json::array(), alternatives = Json::array();
    for (const v1::Translation& t : response.translations()) {
      texts.push_back(t.text());
      alternatives.push_back(Alternatives(t));
    }
    body["translatedText"] = std::move(texts);
    if (a.source == "auto") {
      body["detectedLanguage"] = Json::array();
      for (size_t i = 0; i < a.q.size(); ++i) body["detectedLanguage"].push_back(detected);
    }
    if (a.alternatives > 0) body["alternatives"] = std::move(alternatives);
  } else {
    const v1::Translation& t = response.translations(0);
    body["translatedText"] = t.text();
    if (a.source == "auto") body["detectedLanguage"] = detected;
    if (a.alternatives > 0) body["alternatives"] = Alternatives(t);
  }
  return JsonReply(200, body);
}

struct Merged {
  double confidence_sum = 0;
  int count = 0;
  size_t length = 0;  // characters of the texts it was found in
  size_t first_seen = 0;
};

// Detections of several texts as LibreTranslate merges them: a language's confidence is its mean
// over the texts it was found in; the order is by that confidence times those texts' length.
Json MergedDetections(const std::vector<std::vector<text::DetectedLanguage>>& per_text,
                      const std::vector<std::string>& texts) {
  std::map<std::string, Merged> merged;
  for (size_t i = 0; i < per_text.size(); ++i) {
    for (const text::DetectedLanguage& d : per_text[i]) {
      auto [it, inserted] = merged.try_emplace(d.code);
      if (inserted) it->second.first_seen = merged.size();
      it->second.confidence_sum += Percent(d.confidence);
      it->second.count += 1;
      it->second.length += static_cast<size_t>(text::CountCodePoints(texts[i]));
    }
  }
  std::vector<std::pair<std::string, Merged>> order(merged.begin(), merged.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    const double kx = x.second.confidence_sum / x.second.count * x.second.length;
    const double ky = y.second.confidence_sum / y.second.count * y.second.length;
    if (kx != ky) return kx > ky;
    return x.second.first_seen < y.second.first_seen;
  });
  Json out = Json::array();
  for (const auto& [code, m] : order) {
    out.push_back({{"confidence", m.confidence_sum / m.count}, {"language", code}});
  }
  // LibreTranslate's answer when nothing was detected.
  if (out.empty()) out.push_back({{"confidence", 0.0}, {"language", "en"}});
  return out;
}

// LibreTranslate's detect_languages(): each text's detections among the languages the server
// lists (any language when a model reads any), merged.
Json DetectAmongListed(const LtLanguageTable& table, const std::vector<std::string>& texts,
                       bool is_html) {
  const bool any = table.ReadsAnyLanguage();
  std::vector<std::string> candidates;
  for (const LtLanguage& l : table.list()) candidates.push_back(l.code);
  std::vector<std::vector<text::DetectedLanguage>> per_text;
  for (const std::string& q : texts) {
    per_text.push_back(any ? text::DetectLanguages(q, is_html)
                           : text::DetectLanguagesAmong(q, candidates, is_html));
  }
  return MergedDetections(per_text, texts);
}

}  // namespace

HttpReply LtErrorReply(int status, const std::string& message) {
  return JsonReply(status, Json{{"error", message}});
}

HttpReply LtBackendError(const grpc::Status& status, bool api_key_given) {
  const std::string& m = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::OUT_OF_RANGE:
      return LtErrorReply(400, m);
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return LtErrorReply(403, api_key_given
                                   ? "Invalid API key"
                                   : "Please contact the server operator to get an API key");
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return LtErrorReply(429, absl::StrCat("Slowdown: ", m));
    case grpc::StatusCode::UNAVAILABLE:
      return LtErrorReply(503, m);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return LtErrorReply(504, m.empty() ? "Deadline exceeded" : m);
    case grpc::StatusCode::CANCELLED:
      return LtErrorReply(499, m.empty() ? "Cancelled" : m);
    default:
      return LtErrorReply(500, absl::StrCat("Cannot translate text: ", m));
  }
}

HttpReply LtTranslate(const HttpInput& input, TranslatorBackend& backend,
                      const LtSettings& settings) {
  // The key first (ListModels checks it), as LibreTranslate checks it before the fields.
  const auto key = ReadLtApiKey(input);
  if (const auto* e = std::get_if<LtError>(&key)) return LtErrorReply(e->status, e->message);
  const CallOptions options = CallOptionsFor(input, std::get<std::string>(key));
  auto models = ListModels(backend, options);
  if (auto* reply = std::get_if<HttpReply>(&models)) return *reply;
  const auto& served = std::get<v1::ListModelsResponse>(models);
  auto parsed = ParseLtTranslate(input);
  if (const auto* e = std::get_if<LtError>(&parsed)) return LtErrorReply(e->status, e->message);
  const LtTranslateArgs& a = std::get<LtTranslateArgs>(parsed);
  if (auto reply = CheckLimits(a, settings)) return *reply;
  const LtLanguageTable table(served);
  // "auto": detected here as LibreTranslate does (among the listed languages, all texts merged,
  // "en" with confidence 0 when nothing is found), then translated from the best one.
  Json detected;
  std::string source;
  if (a.source == "auto") {
    detected = DetectAmongListed(table, a.q, a.format == "html").front();
    source = detected["language"].get<std::string>();
  } else {
    source = text::CanonicalLanguage(a.source);
  }
  const std::string target = text::CanonicalLanguage(a.target);
  if (auto reply = CheckLanguages(a, table, source, target)) return *reply;
  v1::TranslateResponse response;
  const grpc::Status s =
      backend.Translate(BuildRequest(a, settings, source, target), options, &response);
  if (!s.ok()) return LtBackendError(s, !options.bearer_token.empty());
  return TranslateReply(a, response, detected);
}

HttpReply LtDetect(const HttpInput& input, TranslatorBackend& backend) {
  const auto key = ReadLtApiKey(input);
  if (const auto* e = std::get_if<LtError>(&key)) return LtErrorReply(e->status, e->message);
  auto models = ListModels(backend, CallOptionsFor(input, std::get<std::string>(key)));
  if (auto* reply = std::get_if<HttpReply>(&models)) return *reply;
  auto parsed = ParseLtDetect(input);
  if (const auto* e = std::get_if<LtError>(&parsed)) return LtErrorReply(e->status, e->message);
  const LtDetectArgs& a = std::get<LtDetectArgs>(parsed);
  const LtLanguageTable table(std::get<v1::ListModelsResponse>(models));
  // Among the languages it lists, as LibreTranslate (argos' installed languages: those its
  // models read and those they write), libretranslate/language.py detect_languages().
  return JsonReply(200, DetectAmongListed(table, a.q, false));
}

HttpReply LtLanguages(const HttpInput& input, TranslatorBackend& backend) {
  CallOptions options = CallOptionsFor(input, ParseLtApiKey(input));
  options.as_server = true;  // open to anyone, as LibreTranslate has it
  auto models = ListModels(backend, options);
  if (auto* reply = std::get_if<HttpReply>(&models)) return *reply;
  Json out = Json::array();
  const LtLanguageTable table(std::get<v1::ListModelsResponse>(models));
  for (const LtLanguage& l : table.list()) {
    out.push_back({{"code", l.code}, {"name", l.name}, {"targets", l.targets}});
  }
  return JsonReply(200, out);
}

HttpReply LtFrontendSettings(const HttpInput& input, TranslatorBackend& backend,
                             const LtSettings& settings) {
  // Best effort: the page still gets its settings when the languages cannot be listed.
  v1::ListModelsResponse models;
  CallOptions options = CallOptionsFor(input, ParseLtApiKey(input));
  options.as_server = true;
  if (!backend.ListModels(options, &models).ok()) {
    models.Clear();
  }
  const LtLanguageTable table(models);
  const std::string first = table.list().empty() ? "en" : table.list().front().code;
  Json source;
  if (settings.frontend_language_source == "auto") {
    source = {{"code", "auto"}, {"name", "Auto Detect"}};
  } else {
    std::string code = text::CanonicalLanguage(settings.frontend_language_source);
    if (!table.AcceptsSource(code)) code = first;
    source = {{"code", code}, {"name", text::LanguageName(code)}};
  }
  std::string target = text::CanonicalLanguage(settings.frontend_language_target);
  if (!table.Lists(target))
    target = table.default_target().empty() ? first : table.default_target();
  const bool keys = backend.KeyRequired();
  Json body = {
      {"charLimit", settings.char_limit},
      {"frontendTimeout", settings.frontend_timeout_ms},
      {"apiKeys", keys},
      {"keyRequired", keys},
      {"suggestions", false},
      {"filesTranslation", false},
      {"supportedFilesFormat", Json::array()},
      {"language",
       {{"source", source}, {"target", {{"code", target}, {"name", text::LanguageName(target)}}}}},
  };
  return JsonReply(200, body);
}

}  // namespace transerve::http
