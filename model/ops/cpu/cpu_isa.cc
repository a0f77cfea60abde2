#include "model/ops/cpu/cpu_isa.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/core/logging.h"

namespace transerve::ops::cpu {
namespace {

struct Level {
  const char* name;
  KernelSet kernels;
};

// Lowest first. A level's kernels run on every CPU that has its features (cpu_supports).
const Level kLevels[] = {
    {"avx2",
     {"avx2 fma", avx2::FloatPanel, "avx2 widened to float", avx2::Bf16Panel, "avx2 vpmaddwd",
      avx2::Int8Panel, Int8Activations::kInt16}},
    {"avx512",
     {"avx512 fma", avx512::FloatPanel, "avx512 widened to float", avx512::Bf16Panel,
      "avx512 vpmaddwd", avx512::Int8Panel, Int8Activations::kInt16}},
    {"avx512_vnni",
     {"avx512 fma", avx512::FloatPanel, "avx512 widened to float", avx512::Bf16Panel,
      "avx512_vnni vpdpbusd", avx512_vnni::Int8Panel, Int8Activations::kUnsignedBytes}},
    {"avx512_bf16",
     {"avx512 fma", avx512::FloatPanel, "avx512_bf16 vdpbf16ps", avx512_bf16::Bf16Panel,
      "avx512_vnni vpdpbusd", avx512_vnni::Int8Panel, Int8Activations::kUnsignedBytes}},
};
constexpr int kLevelCount = sizeof(kLevels) / sizeof(kLevels[0]);

bool Supports(int level) {
  switch (level) {
    case 0:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case 1:
      return Supports(0) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
    case 2:
      return Supports(1) && __builtin_cpu_supports("avx512vnni");
    case 3:
      return Supports(2) && __builtin_cpu_supports("avx512bf16");
    default:
      return false;
  }
}

int HighestSupported() {
  int level = 0;  // AVX2 is the build's floor: a CPU without it cannot run the binary at all
  while (level + 1 < kLevelCount && Supports(level + 1)) ++level;
  return level;
}

int Find(std::string_view name) {
  for (int i = 0; i < kLevelCount; ++i) {
    if (name == kLevels[i].name) return i;
  }
  return -1;
}

int InitialLevel() {
  const int highest = HighestSupported();
  const char* forced = std::getenv("TRANSERVE_CPU_ISA");
  if (forced == nullptr || *forced == '\0') return highest;
  const int level = Find(forced);
  if (level < 0 || level > highest) {
    Log().warn("TRANSERVE_CPU_ISA={} is not one of this CPU's levels ({}); using {}", forced,
               absl::StrJoin(SupportedCpuIsas(), ", "), kLevels[highest].name);
    return highest;
  }
  return level;
}

std::atomic<int>& CurrentLevel() {
  static std::atomic<int> level{InitialLevel()};
  return level;
}

}  // namespace

const KernelSet& ActiveKernels() {
  return kLevels[CurrentLevel().load(std::memory_order_relaxed)].kernels;
}

std::vector<std::string> SupportedCpuIsas() {
  std::vector<std::string> names;
  for (int i = 0; i <= HighestSupported(); ++i) names.emplace_back(kLevels[i].name);
  return names;
}

absl::Status SetCpuIsa(const std::string& name) {
  const int level = Find(name);
  if (level < 0 || level > HighestSupported()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CPU instruction-set level '", name,
                     "' is not one of this CPU's: ", absl::StrJoin(SupportedCpuIsas(), ", ")));
  }
  CurrentLevel().store(level, std::memory_order_relaxed);
  return absl::OkStatus();
}

std::string CpuIsa() { return kLevels[CurrentLevel().load(std::memory_order_relaxed)].name; }

std::string CpuKernelDescription() {
  const Level& level = kLevels[CurrentLevel().load(std::memory_order_relaxed)];
  return absl::StrCat("CPU kernels ", level.name, ": float32 ", level.kernels.float_name,
                      ", bfloat16 ", level.kernels.bf16_name, ", int8 ", level.kernels.int8_name);
}

}  // namespace transerve::ops::cpu
