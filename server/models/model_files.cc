#include "server/models/model_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "model/translator/model_directory.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

}  // namespace

FilesFingerprint FingerprintOf(const std::string& dir) {
  std::vector<std::string> parts;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (stat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    parts.push_back(absl::StrCat(it->path().filename().string(), ":", st.st_size, ":",
                                 st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ":", st.st_ino));
  }
  std::sort(parts.begin(), parts.end());
  FilesFingerprint out;
  for (const std::string& p : parts) absl::StrAppend(&out, p, ";");
  return out;
}

std::vector<RepositoryEntry> ScanRepository(const std::string& root) {
  std::vector<RepositoryEntry> found;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.' || !it->is_directory(ec)) continue;
    const std::string dir = it->path().string();
    if (!HoldsModel(dir)) continue;
    found.push_back({name, dir, FingerprintOf(dir)});
  }
  std::sort(found.begin(), found.end(),
            [](const RepositoryEntry& a, const RepositoryEntry& b) { return a.name < b.name; });
  return found;
}

}  // namespace transerve
