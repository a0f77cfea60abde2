// A whole file mapped read-only, for readers that point at tensor bytes in place.
#pragma once

#include <algorithm>
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

  // Calls convert(first, count) over the elements of `width` bytes in `range`, 4 MiB at a time,
  // releasing each part's pages as soon as it is converted: reading a tensor never holds its
  // file pages and its copy both whole (a 58k-row float32 table would otherwise need 240 MB).
  template <typename Convert>
  static void ConvertReleasing(std::span<const uint8_t> range, std::size_t width,
                               const Convert& convert) {
    constexpr std::size_t kChunkBytes = std::size_t{4} << 20;
    const std::size_t elements = range.size() / width;
    const std::size_t chunk = std::max<std::size_t>(1, kChunkBytes / width);  // wide elements: one
    for (std::size_t first = 0; first < elements; first += chunk) {
      const std::size_t count = std::min(chunk, elements - first);
      convert(first, count);
      ReleasePages(range.subspan(first * width, count * width));
    }
    ReleasePages(range);  // the pages the parts' edges shared
  }

 private:
  void Reset();
  const uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace transerve
