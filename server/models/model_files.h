// What a model repository directory holds, read from the file system alone (no model loaded):
// which subdirectories are models (model/translator/model_directory.h says what a model
// directory is), and a fingerprint that changes when any of a model's files is replaced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace transerve {

// Names, sizes, modification times and inodes of a directory's regular files: equal
// fingerprints mean nothing was written or renamed into place in between.
using FilesFingerprint = std::string;
FilesFingerprint FingerprintOf(const std::string& dir);

struct RepositoryEntry {
  std::string name;  // the subdirectory's name
  std::string dir;   // its path
  FilesFingerprint fingerprint;
};

// The model subdirectories of `root`, by name; hidden ones (".name", where a writer stages a
// new model before renaming it into place) are skipped. A missing or unreadable root is empty.
std::vector<RepositoryEntry> ScanRepository(const std::string& root);

}  // namespace transerve
