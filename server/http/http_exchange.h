// One HTTP request and its answer as plain values, so that the APIs over HTTP (LibreTranslate's,
// the native JSON one) are functions from one to the other, tested and fuzzed without sockets.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace transerve::http {

struct HttpInput {
  std::string method;        // "GET", "POST", ...
  std::string path;          // without the query
  std::string content_type;  // the header as sent ("application/json; charset=utf-8")
  std::string body;          // raw bytes (JSON bodies are parsed by the API)
  // Query parameters, then the fields of a form body (urlencoded or multipart), as the HTTP
  // library parsed them; a name may repeat (q=a&q=b).
  std::multimap<std::string, std::string> params;
  std::string authorization;  // the Authorization header ("" when absent)
  long timeout_ms = 0;        // X-Request-Timeout-Ms; 0: none
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// The token of an "Authorization: Bearer <token>" header (the scheme in any case); "" for any
// other header. Both APIs read the key this way.
inline std::string BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!authorization.empty() && space(authorization.front())) authorization.remove_prefix(1);
  while (!authorization.empty() && space(authorization.back())) authorization.remove_suffix(1);
  if (authorization.size() <= kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if ((authorization[i] | 0x20) != kScheme[i]) return "";
  }
  authorization.remove_prefix(kScheme.size());
  while (!authorization.empty() && space(authorization.front())) authorization.remove_prefix(1);
  return std::string(authorization);
}

}  // namespace transerve::http
