// The directory of a zip archive whose entries are all stored (uncompressed), as torch.save
// writes them: each entry's name and where its bytes lie in the file.
//
// Our own reader rather than Debian's libzip or minizip: both hand out entry contents through
// their own read calls into a buffer, while we want the offset of each stored entry so the
// tensors can be used where they lie in the memory-mapped file. That needs only the end record,
// the central directory and each local header, about a hundred lines, and refusing everything
// else (compression, encryption, multi-disk archives) keeps it strict.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace transerve {

struct StoredZipEntry {
  std::string name;
  uint64_t offset = 0;  // of the entry's data in the file
  uint64_t size = 0;
};

// Reads the end of central directory record (ZIP64 too), the central directory and each
// entry's local header. INVALID_ARGUMENT naming `path` for anything malformed, compressed,
// encrypted, split over disks, duplicated or out of the file's bounds.
absl::StatusOr<std::vector<StoredZipEntry>> ReadStoredZip(std::span<const uint8_t> file,
                                                          const std::string& path);

}  // namespace transerve
