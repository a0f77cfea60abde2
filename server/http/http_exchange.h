// One HTTP request and its answer as plain values, so that the APIs over HTTP (LibreTranslate's,
// the native JSON one) are functions from one to the other, tested and fuzzed without sockets.
#pragma once

#include <map>
#include <string>

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

}  // namespace transerve::http
