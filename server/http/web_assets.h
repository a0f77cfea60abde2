// The web page's files (server/http/web), compiled into the binary, looked up by URL path:
// "/" is index.html, "/static/NAME" any file of the folder.
#pragma once

#include <span>
#include <string_view>

namespace transerve::http {

struct WebAsset {
  std::string_view content_type;  // e.g. "text/css; charset=utf-8"
  std::string_view body;          // the file's bytes
};

// The asset a GET of `path` (without the query) serves; nullptr when there is none.
const WebAsset* FindWebAsset(std::string_view path);

// The content type the page serves a file name with, from its extension.
std::string_view WebContentType(std::string_view file_name);

// One embedded file as the build wrote it (a generated source defines EmbeddedWebFiles).
struct EmbeddedFile {
  std::string_view name;   // the base name, e.g. "app.js"
  std::string_view bytes;  // its content
};
std::span<const EmbeddedFile> EmbeddedWebFiles();

}  // namespace transerve::http
