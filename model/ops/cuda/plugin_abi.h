// The C interface between the engine and the CUDA backend plugin (libtranserve_cuda.so).
// The plugin is loaded with dlopen at run time, so the same binaries run on machines without
// a CUDA driver or toolkit libraries: they then simply stay on the CPU (docs/cuda.md).
// Plain C types only: the plugin and the engine may be built by different compilers.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRANSERVE_CUDA_PLUGIN_ABI 1

// Returns TRANSERVE_CUDA_PLUGIN_ABI.
typedef int (*TranserveCudaAbiFn)(void);

// Whether a usable CUDA device exists: returns the device count (0 when none is usable) and
// writes the first device's name, or why none is usable ("CUDA driver is insufficient ...",
// "no CUDA-capable device ..."), into `message` (NUL-terminated, at most `capacity` bytes).
typedef int (*TranserveCudaProbeFn)(char* message, size_t capacity);

// Runs a kernel on device 0 and checks its result against the host: 1 when it matched, else 0
// with the reason in `message`. Proves the toolchain, the driver and the architecture list.
typedef int (*TranserveCudaSelfTestFn)(char* message, size_t capacity);

#ifdef __cplusplus
}
#endif
