// A whole file mapped read-only, for readers that point at tensor bytes in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace transerve {

class MappedFile {
 public:
  // NOT_FOUND when there is no file; INVALID_ARGUMENT when it cannot be opened or mapped or is
  // not a regular file. An empty file maps to an empty span.
  static absl::StatusOr<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

  // Hands the whole pages inside `range` (a part of bytes()) back to the kernel once they have
  // been copied; they fault back in from the file if read again.
  static void ReleasePages(std::span<const uint8_t> range);

 private:
  void Reset();
  const uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace transerve
