// The web page's files are compiled into the binary: each one of server/http/web is served byte
// for byte, with the content type its kind needs, and nothing else is.
#include "server/http/web_assets.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "tests/testing/paths.h"

namespace transerve::http {
namespace {

const std::filesystem::path kWebDir =
    std::filesystem::path(testing::SourceDir()) / "server/http/web";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string UrlOf(const std::string& name) {
  return name == "index.html" ? "/" : "/static/" + name;
}

// The types a browser needs to run the page (a script served as text/plain is refused).
std::string ExpectedType(const std::filesystem::path& file) {
  static const std::map<std::string, std::string> kTypes = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
  };
  const auto type = kTypes.find(file.extension().string());
  return type == kTypes.end() ? "" : type->second;
}

TEST(WebAssets, EveryFileServedByteForByteWithItsType) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kWebDir)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    const std::string bytes = ReadFile(entry.path());
    ASSERT_FALSE(bytes.empty());
    const WebAsset* asset = FindWebAsset(UrlOf(name));
    ASSERT_NE(asset, nullptr);
    EXPECT_EQ(asset->body, bytes);
    EXPECT_EQ(asset->content_type, ExpectedType(entry.path()));
    ++files;
  }
  EXPECT_GE(files, 3);  // index.html, app.js, style.css
  // Nothing embedded that the folder no longer has.
  EXPECT_EQ(EmbeddedWebFiles().size(), static_cast<size_t>(files));
}

TEST(WebAssets, IndexLinksResolve) {
  const WebAsset* index = FindWebAsset("/");
  ASSERT_NE(index, nullptr);
  const std::string html(index->body);
  const std::regex link(R"re((?:src|href)="(/static/[^"]+)")re");
  int links = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), link); it != std::sregex_iterator();
       ++it) {
    const std::string url = (*it)[1];
    EXPECT_NE(FindWebAsset(url), nullptr) << url;
    ++links;
  }
  EXPECT_EQ(links, 2);  // the script and the style sheet
}

TEST(WebAssets, OtherPathsFindNothing) {
  for (const char* path :
       {"", "/index.html", "/static/", "/static", "/static/missing.js", "/static/../index.html",
        "/static/sub/app.js", "/app.js", "/static/APP.JS", "/static/app.js/"}) {
    EXPECT_EQ(FindWebAsset(path), nullptr) << path;
  }
}

TEST(WebAssets, UnknownExtensionIsOctetStream) {
  EXPECT_EQ(WebContentType("data.bin"), "application/octet-stream");
  EXPECT_EQ(WebContentType("noextension"), "application/octet-stream");
  EXPECT_EQ(WebContentType("icon.svg"), "image/svg+xml");
}

}  // namespace
}  // namespace transerve::http
