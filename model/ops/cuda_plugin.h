// Finds and loads the CUDA backend plugin (libtranserve_cuda.so) at run time. The engine's
// binaries never link the CUDA libraries themselves: on a machine without a GPU, driver or
// plugin, the probe says why and the engine stays on the CPU (docs/cuda.md).
#pragma once

#include <string>

#include "model/ops/cuda/plugin_abi.h"

namespace transerve {

struct CudaProbe {
  bool plugin_loaded = false;  // libtranserve_cuda.so found and of the expected ABI
  int devices = 0;             // usable CUDA devices
  std::string detail;          // device 0's name, or why there is no usable device
};

// Loads the plugin once (thread-safe) and asks it for devices. Where it looks:
// $TRANSERVE_CUDA_PLUGIN, then ../lib/ next to the running executable (the build and install
// layout), then the dynamic loader's search path.
const CudaProbe& ProbeCuda();

// Runs the plugin's self-test kernel on device 0 (once per process, on the legacy default
// stream); true when it computed the right result.
bool CudaSelfTest(std::string* message);

// The plugin's primitives when a usable device exists, else nullptr. The first call registers
// the device allocator for Device::kCuda, so Tensors can live there: they are allocated for the
// calling thread's current stream.
const TranserveCudaApi* CudaApi();

// The stream the calling thread's device work and allocations go to (ops::StreamScope sets
// it); nullptr: the plugin's default stream.
TranserveCudaStream* CurrentCudaStream();
void SetCurrentCudaStream(TranserveCudaStream* stream);

}  // namespace transerve
