// The fields of a LibreTranslate request (/translate, /detect) read out of an HttpInput as
// LibreTranslate reads them: from a JSON object when the body is JSON, else from the query and
// form fields (the first value of a repeated name). Parsing only: no limits, no languages.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/http/http_exchange.h"

namespace transerve::http {

// An answer of LibreTranslate's shape, {"error": message}, with its HTTP status.
struct LtError {
  int status = 400;
  std::string message;
};

struct LtTranslateArgs {
  std::vector<std::string> q;  // one text, or the texts of an array q
  bool batch = false;          // q was an array: the answer's fields are arrays too
  std::string source;          // as sent ("auto" included)
  std::string target;
  std::string format;          // as sent; "" = "text"
  long long alternatives = 0;  // as sent, negative values raised to 0, huge ones saturated
  std::string api_key;         // "" when absent
  // transerve's extension: a stored glossary to apply (the Glossaries service); "" when absent.
  std::string glossary_id;
};

struct LtDetectArgs {
  std::vector<std::string> q;
  bool batch = false;
  std::string api_key;
};

// Whether `content_type` is JSON as Flask's request.is_json says: application/json or
// application/<anything>+json, parameters ignored.
bool IsJsonContentType(const std::string& content_type);

// The bearer token for the backend: the Authorization header's Bearer token when there is one,
// else the request's api_key.
std::string LtBearerToken(const HttpInput& input, const std::string& api_key);

// 400 with LibreTranslate's wording for a body that is not a JSON object, a missing q, source
// or target, an alternatives that is not a number; 400 too (LibreTranslate fails with 500) for
// fields of a JSON type it cannot use (q a number, an array with a non-string...).
std::variant<LtTranslateArgs, LtError> ParseLtTranslate(const HttpInput& input);
std::variant<LtDetectArgs, LtError> ParseLtDetect(const HttpInput& input);

// The api_key of /translate and /detect, which LibreTranslate reads before anything else: the
// JSON body's (else the query's), or the form's or query's; 400 for a JSON body that is not a
// JSON object.
std::variant<std::string, LtError> ReadLtApiKey(const HttpInput& input);

// The api_key of a request whose body needs no other field (/languages): the JSON body's, else
// the query's or form's; "" when none or when the body is not a JSON object.
std::string ParseLtApiKey(const HttpInput& input);

// Line breaks as Python's str.splitlines() finds them, each turned into "\n", and a break at the
// very end dropped: what LibreTranslate does to a form's q before it counts characters.
std::string NormalizeLineBreaks(const std::string& text);

// A decimal integer as Python's int() reads a string: surrounding whitespace, an optional sign,
// digits; saturated at the range of long long. nullopt when it is not one.
std::optional<long long> ParseLtInteger(const std::string& text);

}  // namespace transerve::http
