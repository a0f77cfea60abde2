// The emulator's internals shared by its runtime (runtime.cc), scheduler (grid.cc) and cuBLAS
// (cublas.cc).
#pragma once

#include <cstddef>

#include "cuda_runtime.h"

namespace transerve_cuda_emulator {

// Prints `what` and aborts: a misuse a GPU would answer with a fault or a hang.
[[noreturn]] void Fail(const char* what);

// Keeps `error` for cudaGetLastError and returns it.
cudaError_t RecordError(cudaError_t error);

// cudaSuccess, or the sticky error a test broke the device with
// (transerve_emulator_break_device): every call then fails with it, as on a GPU whose context
// a kernel fault has broken.
cudaError_t StickyError();

// Whether [ptr, ptr + bytes) lies inside one live device allocation.
bool IsDeviceRange(const void* ptr, size_t bytes);

// Device memory is mapped without access, as host code cannot read a GPU's memory; an object
// of this type opens it for a kernel or a copy, and closes it again when destroyed.
class DeviceAccess {
 public:
  DeviceAccess();
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;
};

}  // namespace transerve_cuda_emulator
