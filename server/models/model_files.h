// What a model repository directory holds, read from the file system alone (no model loaded):
// which entries are models (model/translator/model_directory.h says what a model directory is;
// an Argos Translate archive, NAME.argosmodel, is one once unpacked), and a fingerprint that
// changes when any of a model's files is replaced.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace transerve {

// Names, sizes, modification times and inodes of a directory's regular files (and of its model/
// folder's, where an Argos package keeps its weights): equal fingerprints mean nothing was
// written or renamed into place in between.
using FilesFingerprint = std::string;
FilesFingerprint FingerprintOf(const std::string& dir);

// The repository's Argos archives, each version of each unpacked once into a private folder
// (under the system's temporary directory) that is removed with this object. A version that
// fails to unpack is not tried again until the file changes.
class UnpackedArchives {
 public:
  UnpackedArchives() = default;
  ~UnpackedArchives();
  UnpackedArchives(const UnpackedArchives&) = delete;
  UnpackedArchives& operator=(const UnpackedArchives&) = delete;

  // The package folder of the archive `path`, served as the model `name`.
  absl::StatusOr<std::string> PackageFolder(const std::string& name, const std::string& path);

 private:
  struct Unpacked {
    std::string stamp;  // the archive's size, modification time and inode
    absl::StatusOr<std::string> folder;
  };
  absl::Mutex mu_;
  std::string root_ ABSL_GUARDED_BY(mu_);  // created on the first archive
  int64_t unpacked_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Unpacked> by_name_ ABSL_GUARDED_BY(mu_);
};

struct RepositoryEntry {
  std::string name;  // the subdirectory's name, or the archive's without .argosmodel
  std::string dir;   // its path (an archive's: its unpacked package folder)
  FilesFingerprint fingerprint;
};

// The models of `root`, by name: its model subdirectories, and its Argos archives unpacked by
// `archives` (a folder of the same name wins over an archive). Hidden entries (".name", where a
// writer stages a new model before renaming it into place) are skipped. A missing or unreadable
// root is empty.
std::vector<RepositoryEntry> ScanRepository(const std::string& root, UnpackedArchives* archives);

}  // namespace transerve
