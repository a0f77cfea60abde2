// Reads pytorch_model.bin as torch.save writes it, without running any of its pickle: the zip
// archive (PyTorch >= 1.6) and the legacy stream (_use_new_zipfile_serialization=False). The
// file is memory-mapped and tensors point at their storages in place.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/loader/checkpoint_file.h"
#include "model/loader/mapped_file.h"
#include "model/loader/restricted_unpickler.h"

namespace transerve {

class PytorchCheckpoint final : public CheckpointFile {
 public:
  // The root object must be a dict (a state dict) of name -> tensor; tensors are F32, F16 or
  // BF16 storages, contiguous row-major, inside their storage. Several names may share one
  // storage (tied weights). Errors are INVALID_ARGUMENT naming the file and what was refused
  // (NOT_FOUND when there is no file).
  static absl::StatusOr<std::unique_ptr<PytorchCheckpoint>> Open(const std::string& path);

  const CheckpointTensorInfo* Find(std::string_view name) const override;
  std::vector<std::string> Names() const override;
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  const std::string& path() const override { return path_; }
  absl::Status ReadAsFloat32(std::string_view name, std::span<float> out) const override;

  // "zip" or "legacy".
  const std::string& format() const { return format_; }

  struct Tensor {
    CheckpointTensorInfo info;
    std::span<const uint8_t> bytes;  // little-endian elements inside the mapping
  };

 private:
  PytorchCheckpoint() = default;
  absl::Status ReadZip();
  absl::Status ReadLegacy();
  // Turns the unpickled state dict into tensors; `storages` maps each storage key to its bytes.
  struct Storage {
    std::string dtype;
    std::span<const uint8_t> bytes;
  };
  using Storages = std::map<std::string, Storage, std::less<>>;
  // Every storage the pickle names, with its dtype and numel (bytes not yet attached).
  absl::StatusOr<std::map<std::string, std::pair<std::string, int64_t>>> StoragesOf(
      const Unpickled& pickle) const;
  absl::Status TakeStateDict(const Unpickled& pickle, const Storages& storages);

  std::string path_, format_;
  MappedFile mapping_;
  std::map<std::string, Tensor, std::less<>> tensors_;
  std::map<std::string, std::string> metadata_;  // always empty
};

}  // namespace transerve
