#include "server/http/web_assets.h"

#include <array>
#include <utility>
#include <vector>

namespace transerve::http {
namespace {

constexpr std::string_view kIndex = "index.html";
constexpr std::string_view kStaticPrefix = "/static/";

struct NamedAsset {
  std::string_view name;
  WebAsset asset;
};

// Every embedded file with its content type, built once (thread-safe static initialization).
const std::vector<NamedAsset>& Assets() {
  static const std::vector<NamedAsset>* const assets = [] {
    auto* list = new std::vector<NamedAsset>;
    for (const EmbeddedFile& file : EmbeddedWebFiles()) {
      list->push_back({file.name, {WebContentType(file.name), file.bytes}});
    }
    return list;
  }();
  return *assets;
}

const WebAsset* FindByName(std::string_view name) {
  for (const NamedAsset& named : Assets()) {
    if (named.name == name) return &named.asset;
  }
  return nullptr;
}

}  // namespace

std::string_view WebContentType(std::string_view file_name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kTypes = {{
      {".html", "text/html; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
  }};
  for (const auto& [extension, type] : kTypes) {
    if (file_name.ends_with(extension)) return type;
  }
  return "application/octet-stream";
}

const WebAsset* FindWebAsset(std::string_view path) {
  if (path == "/") return FindByName(kIndex);
  if (!path.starts_with(kStaticPrefix)) return nullptr;
  const std::string_view name = path.substr(kStaticPrefix.size());
  // Names are flat: nothing below /static/ names a folder (so no "..", no "a/b").
  if (name.empty() || name.find('/') != std::string_view::npos) return nullptr;
  return FindByName(name);
}

}  // namespace transerve::http
