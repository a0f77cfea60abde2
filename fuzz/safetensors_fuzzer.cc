// Fuzz target: the safetensors reader (header JSON, offsets, dtypes, sizes) on arbitrary bytes.
// The reader maps files, so each input goes into an in-memory file (memfd) opened by path.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/loader/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("safetensors_fuzz", 0);
  if (fd < 0) return 0;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  if (written == size) {
    auto file = transerve::SafetensorsFile::Open("/proc/self/fd/" + std::to_string(fd));
    if (file.ok()) {
      // Every accepted tensor must read back (its bytes lie inside the file by the checks).
      for (const std::string& name : file->Names()) {
        if (!file->ReadAsFloat32(name).ok()) {
          // Unsupported dtypes are refused with a status; nothing else may go wrong.
        }
      }
    }
  }
  close(fd);
  return 0;
}
