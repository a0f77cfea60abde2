#include <cblas.h>
#include <cpuid.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "model/core/logging.h"
#include "model/ops/blas_kernel.h"

extern "C" char* openblas_get_corename(void);

namespace transerve {
namespace {

// The OpenBLAS kernel family this CPU can run, from its feature flags (not its model number).
const char* KernelForCpu() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return nullptr;
  const bool avx512f = ebx & (1u << 16);
  const bool avx2 = ebx & (1u << 5);
  unsigned bf16_eax = 0, unused;
  __get_cpuid_count(7, 1, &bf16_eax, &unused, &unused, &unused);
  const bool avx512_bf16 = bf16_eax & (1u << 5);
  if (avx512f) return avx512_bf16 ? "Cooperlake" : "SkylakeX";
  if (avx2) return "Haswell";
  return nullptr;
}

}  // namespace

void EnsureFastBlasKernel(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the caller's choice stands
  const char* core = openblas_get_corename();
  if (core == nullptr || std::strcmp(core, "Prescott") != 0) return;
  const char* kernel = KernelForCpu();
  if (kernel == nullptr) return;
  setenv("OPENBLAS_CORETYPE", kernel, 1);
  execv("/proc/self/exe", argv);
  // Only reached if the re-exec failed: go on, slowly, and say why.
  Log().warn(
      "OpenBLAS chose its generic Prescott kernel on this CPU; re-running with "
      "OPENBLAS_CORETYPE={} failed: set it yourself for 10x faster matrix products",
      kernel);
}

}  // namespace transerve
