// What the Marian loader needs from a weights file, whatever its format: safetensors
// (SafetensorsFile) or a torch.save pickle (PytorchCheckpoint).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace transerve {

struct CheckpointTensorInfo {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16" (safetensors spelling; others for safetensors).
  std::vector<int64_t> shape;  // [] is a scalar (one element).
};

class CheckpointFile {
 public:
  virtual ~CheckpointFile() = default;

  // nullptr if absent; valid while the file object lives.
  virtual const CheckpointTensorInfo* Find(std::string_view name) const = 0;
  // All tensor names, sorted.
  virtual std::vector<std::string> Names() const = 0;
  // Name aliases (safetensors' __metadata__); empty for formats without one.
  virtual const std::map<std::string, std::string>& metadata() const = 0;
  virtual const std::string& path() const = 0;
  // Copies the tensor as float32 into `out`, which must hold exactly its element count.
  virtual absl::Status ReadAsFloat32(std::string_view name, std::span<float> out) const = 0;
};

}  // namespace transerve
