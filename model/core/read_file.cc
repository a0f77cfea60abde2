// Whole-file reads with POSIX calls: errno gives the reason for a failure, and fstat lets a
// file that is not a regular one (a directory, a FIFO, /dev/zero) be refused before reading it,
// instead of failing late, blocking or never ending.
#include "model/core/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace transerve {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what) {
  auto error = [&](int err, const char* reason) {
    const std::string msg = absl::StrCat("cannot read ", what, " ", path, ": ",
                                         reason != nullptr ? reason : std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::InvalidArgumentError(msg);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error(errno, nullptr);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return error(err, nullptr);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(0, S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file");
  }
  std::string data;
  data.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return error(err, nullptr);
    }
    data.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

absl::Status WriteWholeFile(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

bool IsRegularFile(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

}  // namespace transerve
