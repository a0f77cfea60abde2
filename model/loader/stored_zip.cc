#include "model/loader/stored_zip.h"

#include <set>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace transerve {
namespace {

constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kEnd64Signature = 0x06064b50;
constexpr uint32_t kEnd64LocatorSignature = 0x07064b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr std::size_t kEndBytes = 22, kEnd64Bytes = 56, kLocatorBytes = 20;
constexpr std::size_t kCentralBytes = 46, kLocalBytes = 30;

uint64_t Le(std::span<const uint8_t> f, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(f[at + i]) << (8 * i);
  return v;
}

// [at, at + n) lies inside the file.
bool Inside(std::span<const uint8_t> f, uint64_t at, uint64_t n) {
  return at <= f.size() && n <= f.size() - at;
}

}  // namespace

absl::StatusOr<std::vector<StoredZipEntry>> ReadStoredZip(std::span<const uint8_t> f,
                                                          const std::string& path) {
  const auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": zip archive: ", why));
  };
  // The end record is the last 22 bytes plus a comment of up to 65535 bytes.
  if (f.size() < kEndBytes) return bad("too short for an end of central directory record");
  uint64_t end = f.size() - kEndBytes;
  const uint64_t lowest = end > 65535 ? end - 65535 : 0;
  while (!(Le(f, end, 4) == kEndSignature && end + kEndBytes + Le(f, end + 20, 2) == f.size())) {
    if (end == lowest) return bad("no end of central directory record");
    --end;
  }
  uint64_t disk = Le(f, end + 4, 2), cd_disk = Le(f, end + 6, 2);
  uint64_t count = Le(f, end + 10, 2), cd_size = Le(f, end + 12, 4), cd_at = Le(f, end + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_at == 0xFFFFFFFF) {
    if (end < kLocatorBytes || Le(f, end - kLocatorBytes, 4) != kEnd64LocatorSignature) {
      return bad("ZIP64 sizes without a ZIP64 end record locator");
    }
    const uint64_t at = Le(f, end - kLocatorBytes + 8, 8);
    if (!Inside(f, at, kEnd64Bytes) || Le(f, at, 4) != kEnd64Signature) {
      return bad("the ZIP64 end record is missing or out of bounds");
    }
    disk = Le(f, at + 16, 4);
    cd_disk = Le(f, at + 20, 4);
    count = Le(f, at + 32, 8);
    cd_size = Le(f, at + 40, 8);
    cd_at = Le(f, at + 48, 8);
  }
  if (disk != 0 || cd_disk != 0) return bad("multi-disk archives are not supported");
  if (!Inside(f, cd_at, cd_size)) return bad("the central directory lies outside the file");
  if (count > cd_size / kCentralBytes) return bad("more entries than the central directory holds");

  std::vector<StoredZipEntry> entries;
  std::set<std::string, std::less<>> names;
  uint64_t at = cd_at;
  const uint64_t cd_end = cd_at + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (cd_end - at < kCentralBytes || Le(f, at, 4) != kCentralSignature) {
      return bad(absl::StrCat("central directory entry ", i, " is malformed"));
    }
    const uint64_t flags = Le(f, at + 8, 2), method = Le(f, at + 10, 2);
    uint64_t csize = Le(f, at + 20, 4), usize = Le(f, at + 24, 4);
    const uint64_t name_len = Le(f, at + 28, 2), extra_len = Le(f, at + 30, 2);
    const uint64_t comment_len = Le(f, at + 32, 2), start_disk = Le(f, at + 34, 2);
    uint64_t local = Le(f, at + 42, 4);
    const uint64_t record = kCentralBytes + name_len + extra_len + comment_len;
    if (cd_end - at < record) return bad(absl::StrCat("central directory entry ", i, " is cut"));
    StoredZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(f.data() + at + kCentralBytes), name_len);
    const std::string quoted = absl::StrCat("entry '", absl::Utf8SafeCHexEscape(e.name), "'");
    // The ZIP64 extra field holds, in order, whichever of the three fields are 0xFFFFFFFF.
    for (uint64_t x = at + kCentralBytes + name_len, x_end = x + extra_len; x + 4 <= x_end;) {
      const uint64_t id = Le(f, x, 2), len = Le(f, x + 2, 2);
      if (x_end - x - 4 < len) return bad(absl::StrCat(quoted, ": malformed extra field"));
      if (id == 0x0001) {
        uint64_t y = x + 4;
        for (uint64_t* field : {&usize, &csize, &local}) {
          if (*field != 0xFFFFFFFF) continue;
          if (x + 4 + len - y < 8) return bad(absl::StrCat(quoted, ": short ZIP64 extra field"));
          *field = Le(f, y, 8);
          y += 8;
        }
      }
      x += 4 + len;
    }
    if (flags & 0x41) return bad(absl::StrCat(quoted, " is encrypted"));
    if (method != 0) {
      return bad(absl::StrCat(quoted, " is compressed (method ", method,
                              "); torch.save stores entries uncompressed"));
    }
    if (csize != usize) return bad(absl::StrCat(quoted, ": stored sizes disagree"));
    if (start_disk != 0) return bad(absl::StrCat(quoted, " starts on another disk"));
    if (!Inside(f, local, kLocalBytes) || Le(f, local, 4) != kLocalSignature) {
      return bad(absl::StrCat(quoted, ": no local header at offset ", local));
    }
    const uint64_t local_name = Le(f, local + 26, 2), local_extra = Le(f, local + 28, 2);
    if (Le(f, local + 8, 2) != 0 || local_name != name_len ||
        !Inside(f, local + kLocalBytes, local_name) ||
        std::string_view(reinterpret_cast<const char*>(f.data() + local + kLocalBytes),
                         local_name) != e.name) {
      return bad(absl::StrCat(quoted, ": the local header disagrees with the central directory"));
    }
    e.offset = local + kLocalBytes + local_name + local_extra;
    e.size = usize;
    // The data must lie before the central directory.
    if (e.offset > cd_at || e.size > cd_at - e.offset) {
      return bad(absl::StrCat(quoted, ": its data runs out of bounds"));
    }
    if (!names.insert(e.name).second) return bad(absl::StrCat(quoted, " appears twice"));
    entries.push_back(std::move(e));
    at += record;
  }
  return entries;
}

}  // namespace transerve
