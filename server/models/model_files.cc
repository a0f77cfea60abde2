#include "server/models/model_files.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "model/core/logging.h"
#include "model/translator/argos_package.h"
#include "model/translator/model_directory.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

constexpr char kArchiveSuffix[] = ".argosmodel";

// Size, modification time and inode of a regular file ("" when it is not one).
std::string StampOf(const fs::path& file) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  return absl::StrCat(st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ":", st.st_ino);
}

void AddFilesOf(const fs::path& dir, const std::string& prefix, std::vector<std::string>* parts) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string stamp = StampOf(it->path());
    if (!stamp.empty()) parts->push_back(prefix + it->path().filename().string() + ":" + stamp);
  }
}

}  // namespace

FilesFingerprint FingerprintOf(const std::string& dir) {
  std::vector<std::string> parts;
  AddFilesOf(dir, "", &parts);
  AddFilesOf(fs::path(dir) / "model", "model/", &parts);
  std::sort(parts.begin(), parts.end());
  FilesFingerprint out;
  for (const std::string& p : parts) absl::StrAppend(&out, p, ";");
  return out;
}

UnpackedArchives::~UnpackedArchives() {
  absl::MutexLock lock(&mu_);
  std::error_code ec;
  if (!root_.empty()) fs::remove_all(root_, ec);
}

absl::StatusOr<std::string> UnpackedArchives::PackageFolder(const std::string& name,
                                                            const std::string& path) {
  const std::string stamp = StampOf(path);
  absl::MutexLock lock(&mu_);
  auto it = by_name_.find(name);
  if (it != by_name_.end() && it->second.stamp == stamp) return it->second.folder;
  if (root_.empty()) {
    std::string pattern = (fs::temp_directory_path() / "transerve-argos-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("cannot create a folder to unpack ", path, " in"));
    }
    root_ = pattern;
  }
  // Each version into a folder of its own: a model loaded from the previous one keeps its files.
  const std::string into = (fs::path(root_) / absl::StrCat(name, ".", ++unpacked_)).string();
  absl::StatusOr<std::string> folder = UnpackArgosArchive(path, into);
  if (folder.ok()) {
    Log().info("model '{}': unpacked {} into {}", name, path, *folder);
  } else {
    Log().error("model '{}': {}", name, std::string(folder.status().message()));
  }
  by_name_[name] = {stamp, folder};
  return folder;
}

std::vector<RepositoryEntry> ScanRepository(const std::string& root, UnpackedArchives* archives) {
  std::vector<RepositoryEntry> found;
  std::vector<fs::path> archive_paths;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (it->is_directory(ec)) {
      const std::string dir = it->path().string();
      if (HoldsModel(dir)) found.push_back({name, dir, FingerprintOf(dir)});
    } else if (IsArgosArchive(it->path().string())) {  // never ".argosmodel": hidden
      archive_paths.push_back(it->path());
    }
  }
  std::set<std::string> names;
  for (const RepositoryEntry& e : found) names.insert(e.name);
  for (const fs::path& path : archive_paths) {
    std::string name = path.filename().string();
    name.resize(name.size() - (sizeof(kArchiveSuffix) - 1));
    if (names.contains(name)) continue;  // the unpacked folder beside it is served
    auto folder = archives->PackageFolder(name, path.string());
    if (!folder.ok() || !HoldsModel(*folder)) continue;
    found.push_back({name, *folder, FingerprintOf(*folder)});
  }
  std::sort(found.begin(), found.end(),
            [](const RepositoryEntry& a, const RepositoryEntry& b) { return a.name < b.name; });
  return found;
}

}  // namespace transerve
