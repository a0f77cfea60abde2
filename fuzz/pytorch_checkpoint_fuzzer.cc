// Fuzz target: the pytorch_model.bin reader (zip directory and local headers, the restricted
// unpickler, storages, tensor bounds) on arbitrary bytes. The reader maps files, so each input
// goes into an in-memory file (memfd) opened by path.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/loader/pytorch_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("pytorch_fuzz", 0);
  if (fd < 0) return 0;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  if (written == size) {
    auto file = transerve::PytorchCheckpoint::Open("/proc/self/fd/" + std::to_string(fd));
    if (file.ok()) {
      // Every accepted tensor lies inside the file by the checks: reading it must succeed.
      for (const std::string& name : (*file)->Names()) {
        const transerve::CheckpointTensorInfo* info = (*file)->Find(name);
        size_t n = 1;
        for (int64_t d : info->shape) n *= static_cast<size_t>(d);
        std::vector<float> out(n);
        if (!(*file)->ReadAsFloat32(name, out).ok()) __builtin_trap();
      }
    }
  }
  close(fd);
  return 0;
}
