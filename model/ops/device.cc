// Choosing the device a translator runs on, and naming it in logs.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/core/logging.h"
#include "model/ops/cuda_plugin.h"
#include "model/ops/ops.h"

namespace transerve::ops {

absl::StatusOr<Device> ResolveDevice(const std::string& name) {
  if (name == "cpu") return Device::kCpu;
  if (name == "auto" || name == "cuda") {
    const CudaProbe& probe = ProbeCuda();
    std::string why = probe.detail;
    if (probe.devices > 0 && CudaApi() != nullptr) {
      std::string self_test;
      if (CudaSelfTest(&self_test)) {
        Log().info("device {}: CUDA device {}", name, probe.detail);
        return Device::kCuda;
      }
      why = absl::StrCat("CUDA device ", probe.detail, " failed the self-test: ", self_test);
    }
    if (name == "cuda") {
      return absl::FailedPreconditionError(
          absl::StrCat("--device=cuda: ", why, "; use --device=cpu or auto"));
    }
    Log().info("device auto: {}; using the CPU", why);
    return Device::kCpu;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device '", name, "' (expected auto, cpu or cuda)"));
}

std::string DeviceDescription(Device device) {
  return device == Device::kCpu ? BlasDescription() : ProbeCuda().detail;
}

}  // namespace transerve::ops
