// Which packed-weight kernels run: the instruction-set level, detected once and lowered by
// TRANSERVE_CPU_ISA or ops::SetCpuIsa (declared in model/ops/ops.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/ops/cpu/packed_kernels.h"

namespace transerve::ops::cpu {

// The kernels of the level in use.
const KernelSet& ActiveKernels();

std::vector<std::string> SupportedCpuIsas();
absl::Status SetCpuIsa(const std::string& name);
std::string CpuIsa();
std::string CpuKernelDescription();

}  // namespace transerve::ops::cpu
