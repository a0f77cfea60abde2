// OpenBLAS 0.3.21 picks its kernels from the CPU model number and falls back to the SSE3
// "Prescott" kernels on models it does not know (Intel Emerald Rapids, for one): 10-20x slower
// GEMMs. The choice is made while the library loads, before main(), so the only cure is an
// environment variable set before the process starts.
#pragma once

namespace transerve {

// Call first thing in main(). When OPENBLAS_CORETYPE is unset and OpenBLAS settled on its
// generic fallback although the CPU has AVX-512 or AVX2, sets OPENBLAS_CORETYPE to the matching
// kernel family and re-executes the program with the same arguments. Otherwise returns.
void EnsureFastBlasKernel(char** argv);

}  // namespace transerve
