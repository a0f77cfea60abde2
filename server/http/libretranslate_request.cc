#include "server/http/libretranslate_request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace transerve::http {
namespace {

using Json = nlohmann::json;

std::string Missing(const char* name) {
  return absl::StrCat("Invalid request: missing ", name, " parameter");
}

// Python's truth value of a JSON value, which is how LibreTranslate tests "missing".
bool Truthy(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return false;
    case Json::value_t::boolean:
      return v.get<bool>();
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return v.get<double>() != 0;
    case Json::value_t::string:  // json::empty() is false for every string
      return !v.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object:
      return !v.empty();
    default:
      return true;
  }
}

// A value as LibreTranslate would print it in a message (str() of the Python value, roughly).
std::string Shown(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  // Not the contents of an array or object: printing one nested a million deep would recurse as
  // deep (and a message has no use for a megabyte).
  if (v.is_array()) return "[...]";
  if (v.is_object()) return "{...}";
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

const std::string* FirstParam(const HttpInput& input, const char* name) {
  const auto it = input.params.find(name);
  return it == input.params.end() ? nullptr : &it->second;
}

std::string ParamOrEmpty(const HttpInput& input, const char* name) {
  const std::string* v = FirstParam(input, name);
  return v == nullptr ? std::string() : *v;
}

// The body as a JSON object, or LibreTranslate's 400.
std::variant<Json, LtError> JsonObject(const HttpInput& input) {
  Json body;
  try {
    body = Json::parse(input.body);
  } catch (const Json::parse_error& e) {
    return LtError{400,
                   absl::StrCat("Failed to decode JSON object: syntax error at byte ", e.byte)};
  } catch (const Json::exception&) {  // out_of_range: a number beyond double's range (1e400)
    return LtError{400, "Failed to decode JSON object: a number out of range"};
  }
  if (!body.is_object()) return LtError{400, "Invalid JSON format"};
  return body;
}

std::string JsonString(const Json& body, const char* name) {
  const auto it = body.find(name);
  return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The body's api_key, else the query's (LibreTranslate reads only the body's).
std::string JsonApiKey(const HttpInput& input, const Json& body) {
  std::string key = JsonString(body, "api_key");
  return key.empty() ? ParamOrEmpty(input, "api_key") : key;
}

// q of a JSON body: a string or an array of strings.
std::optional<LtError> ReadJsonQ(const Json& body, std::vector<std::string>* q, bool* batch) {
  const auto it = body.find("q");
  if (it == body.end() || !Truthy(*it)) return LtError{400, Missing("q")};
  if (it->is_string()) {
    q->push_back(it->get<std::string>());
    return std::nullopt;
  }
  if (it->is_array()) {
    *batch = true;
    for (const Json& e : *it) {
      if (!e.is_string()) break;
      q->push_back(e.get<std::string>());
    }
    if (q->size() == it->size()) return std::nullopt;
  }
  return LtError{400, "Invalid request: q parameter must be a string or an array of strings"};
}

// A language field, or LibreTranslate's "missing". A value of another type is kept as printed,
// which is never a language code (nor "text" or "html"), so the API rejects it where
// LibreTranslate would: "<value> is not supported".
std::optional<LtError> ReadJsonLanguage(const Json& body, const char* name, std::string* out) {
  const auto it = body.find(name);
  if (it == body.end() || !Truthy(*it)) return LtError{400, Missing(name)};
  *out = Shown(*it);
  return std::nullopt;
}

std::string JsonFormat(const Json& body) {
  const auto it = body.find("format");
  return it == body.end() || !Truthy(*it) ? std::string() : Shown(*it);
}

long long Saturated(double d) {
  constexpr double kMax = static_cast<double>(std::numeric_limits<long long>::max());
  if (d >= kMax) return std::numeric_limits<long long>::max();
  if (d <= -kMax) return std::numeric_limits<long long>::min();
  return static_cast<long long>(d);  // toward zero, as Python's int()
}

// Python's int() of the JSON value (numbers, booleans, numeric strings).
std::optional<long long> JsonInteger(const Json& v) {
  switch (v.type()) {
    case Json::value_t::boolean:
      return v.get<bool>() ? 1 : 0;
    case Json::value_t::number_integer:
      return v.get<long long>();
    case Json::value_t::number_unsigned: {
      const auto u = v.get<unsigned long long>();
      constexpr auto kMax = static_cast<unsigned long long>(std::numeric_limits<long long>::max());
      return u > kMax ? std::numeric_limits<long long>::max() : static_cast<long long>(u);
    }
    case Json::value_t::number_float: {
      const double d = v.get<double>();
      if (!std::isfinite(d)) return std::nullopt;
      return Saturated(d);
    }
    case Json::value_t::string:
      return ParseLtInteger(v.get<std::string>());
    default:
      return std::nullopt;
  }
}

std::optional<LtError> ReadAlternatives(std::optional<long long> parsed, long long* out) {
  if (!parsed.has_value()) {
    return LtError{400, "Invalid request: alternatives parameter is not a number"};
  }
  *out = *parsed < 0 ? 0 : *parsed;
  return std::nullopt;
}

std::variant<LtTranslateArgs, LtError> FromJson(const HttpInput& input) {
  auto body = JsonObject(input);
  if (auto* e = std::get_if<LtError>(&body)) return *e;
  const Json& b = std::get<Json>(body);
  LtTranslateArgs a;
  a.api_key = JsonApiKey(input, b);
  if (auto e = ReadJsonQ(b, &a.q, &a.batch)) return *e;
  if (auto e = ReadJsonLanguage(b, "source", &a.source)) return *e;
  if (auto e = ReadJsonLanguage(b, "target", &a.target)) return *e;
  a.format = JsonFormat(b);
  a.glossary_id = JsonString(b, "glossary_id");
  const auto alt = b.find("alternatives");
  if (alt != b.end()) {
    if (auto e = ReadAlternatives(JsonInteger(*alt), &a.alternatives)) return *e;
  }
  return a;
}

std::variant<LtTranslateArgs, LtError> FromForm(const HttpInput& input) {
  LtTranslateArgs a;
  a.api_key = ParamOrEmpty(input, "api_key");
  const std::string q = ParamOrEmpty(input, "q");
  if (q.empty()) return LtError{400, Missing("q")};
  a.source = ParamOrEmpty(input, "source");
  if (a.source.empty()) return LtError{400, Missing("source")};
  a.target = ParamOrEmpty(input, "target");
  if (a.target.empty()) return LtError{400, Missing("target")};
  a.format = ParamOrEmpty(input, "format");
  a.glossary_id = ParamOrEmpty(input, "glossary_id");
  if (const std::string* alt = FirstParam(input, "alternatives")) {
    if (auto e = ReadAlternatives(ParseLtInteger(*alt), &a.alternatives)) return *e;
  }
  a.q.push_back(NormalizeLineBreaks(q));
  return a;
}

// The length of a line break of Python's str.splitlines() at `s[i]`, 0 when there is none.
size_t LineBreakAt(absl::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == '\r') return i + 1 < s.size() && s[i + 1] == '\n' ? 2 : 1;
  if (c == '\n' || c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e) return 1;
  const absl::string_view rest = s.substr(i);
  if (absl::StartsWith(rest, "\xC2\x85")) return 2;  // NEL
  if (absl::StartsWith(rest, "\xE2\x80\xA8") || absl::StartsWith(rest, "\xE2\x80\xA9")) {
    return 3;  // LINE SEPARATOR, PARAGRAPH SEPARATOR
  }
  return 0;
}

}  // namespace

bool IsJsonContentType(const std::string& content_type) {
  absl::string_view mime = content_type;
  mime = mime.substr(0, mime.find(';'));
  const std::string m = absl::AsciiStrToLower(absl::StripAsciiWhitespace(mime));
  return m == "application/json" ||
         (absl::StartsWith(m, "application/") && absl::EndsWith(m, "+json"));
}

std::string LtBearerToken(const HttpInput& input, const std::string& api_key) {
  std::string token = BearerToken(input.authorization);
  return token.empty() ? api_key : token;
}

std::variant<LtTranslateArgs, LtError> ParseLtTranslate(const HttpInput& input) {
  return IsJsonContentType(input.content_type) ? FromJson(input) : FromForm(input);
}

std::variant<LtDetectArgs, LtError> ParseLtDetect(const HttpInput& input) {
  LtDetectArgs a;
  if (IsJsonContentType(input.content_type)) {
    auto body = JsonObject(input);
    if (auto* e = std::get_if<LtError>(&body)) return *e;
    const Json& b = std::get<Json>(body);
    a.api_key = JsonApiKey(input, b);
    if (auto e = ReadJsonQ(b, &a.q, &a.batch)) return *e;
    return a;
  }
  a.api_key = ParamOrEmpty(input, "api_key");
  const std::string q = ParamOrEmpty(input, "q");
  if (q.empty()) return LtError{400, Missing("q")};
  a.q.push_back(q);
  return a;
}

std::variant<std::string, LtError> ReadLtApiKey(const HttpInput& input) {
  if (!IsJsonContentType(input.content_type)) return ParamOrEmpty(input, "api_key");
  auto body = JsonObject(input);
  if (auto* e = std::get_if<LtError>(&body)) return *e;
  return JsonApiKey(input, std::get<Json>(body));
}

std::string ParseLtApiKey(const HttpInput& input) {
  if (IsJsonContentType(input.content_type) && !input.body.empty()) {
    auto body = JsonObject(input);
    if (const Json* b = std::get_if<Json>(&body)) return JsonApiKey(input, *b);
  }
  return ParamOrEmpty(input, "api_key");
}

std::string NormalizeLineBreaks(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool ends_with_break = false;
  for (size_t i = 0; i < text.size();) {
    const size_t n = LineBreakAt(text, i);
    if (n > 0) {
      out += '\n';
      i += n;
      ends_with_break = true;
    } else {
      out += text[i++];
      ends_with_break = false;
    }
  }
  if (ends_with_break) out.pop_back();
  return out;
}

std::optional<long long> ParseLtInteger(const std::string& text) {
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i == s.size()) return std::nullopt;
  constexpr long long kMax = std::numeric_limits<long long>::max();
  long long value = 0;
  for (; i < s.size(); ++i) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    const int digit = s[i] - '0';
    value = value > (kMax - digit) / 10 ? kMax : value * 10 + digit;
  }
  return negative ? -value : value;
}

}  // namespace transerve::http
