// Whole-file reads through stdio, so errno gives the reason for a failure.
#include "model/core/read_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace transerve {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what) {
  auto error = [&](int err) {
    const std::string msg = absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::InvalidArgumentError(msg);
  };
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) return error(errno);
  std::string data;
  errno = 0;
  char buffer[1 << 16];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof(buffer), file.get());
    data.append(buffer, n);
    if (n < sizeof(buffer)) break;
  }
  // Reading a directory "opens" fine on Linux and fails here with EISDIR.
  if (std::ferror(file.get())) return error(errno != 0 ? errno : EIO);
  return data;
}

}  // namespace transerve
