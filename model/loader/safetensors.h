// Read-only, memory-mapped safetensors reader that validates the header the way the reference
// (huggingface/safetensors) does and converts F32/F16/BF16 tensors to float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/core/half.h"
#include "model/loader/checkpoint_file.h"
#include "model/loader/mapped_file.h"

namespace transerve {

// The reference reader refuses headers above this size (MAX_HEADER_SIZE in safetensors).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// name, dtype (as written in the file, e.g. "F32", "F16", "BF16") and shape come from the base.
struct SafetensorsTensorInfo : CheckpointTensorInfo {
  uint64_t begin = 0, end = 0;  // Byte range relative to the start of the data buffer.
};

// Bits per element of a safetensors dtype name ("F32" -> 32, "F4" -> 4), 0 for unknown names.
// Names are case-sensitive, as in the reference.
int SafetensorsDtypeBits(std::string_view dtype);

class SafetensorsFile final : public CheckpointFile {
 public:
  // Maps the file read-only and validates the whole header:
  //  - header length N (u64 little-endian) <= 100,000,000 and 8 + N <= file size;
  //  - the header is UTF-8 JSON starting with '{' (trailing whitespace allowed), no duplicate keys;
  //  - each tensor entry has a known dtype, a shape of non-negative integers and two data_offsets;
  //  - the tensors, sorted by offsets, tile the data buffer from 0 with no gaps or overlaps, and
  //    each size equals product(shape) * element size (overflow-checked);
  //  - 8 + N + the last end == file size;
  //  - "__metadata__", if present and not null, is an object of string -> string.
  // Errors: NOT_FOUND (no file), DATA_LOSS (file too short or sizes disagree with the file),
  // INVALID_ARGUMENT (malformed header); messages name the file and, when relevant, the tensor.
  static absl::StatusOr<SafetensorsFile> Open(const std::string& path);

  SafetensorsFile(SafetensorsFile&& other) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept = default;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile() override = default;

  // nullptr if absent. The pointer stays valid while this object (or the one it is moved into)
  // lives.
  const SafetensorsTensorInfo* Find(std::string_view name) const override;
  // All tensor names, sorted.
  std::vector<std::string> Names() const override;
  std::size_t num_tensors() const { return tensors_.size(); }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  const std::string& path() const override { return path_; }

  // Copies the tensor as float32, converting F16 and BF16 exactly. Any other dtype is
  // INVALID_ARGUMENT naming the file, tensor and dtype; an unknown name is NOT_FOUND.
  absl::StatusOr<std::vector<float>> ReadAsFloat32(std::string_view name) const;
  // The same into `out`, which must hold exactly the tensor's element count. The pages the
  // tensor occupied are then handed back to the kernel, so loading a model does not hold the
  // file and its float copy in memory at once (they fault back in if read again).
  absl::Status ReadAsFloat32(std::string_view name, std::span<float> out) const override;

  // The tensor's little-endian bytes inside the mapping (no alignment guarantee), valid while the
  // mapping lives. `info` must come from this file's Find().
  std::span<const uint8_t> RawBytes(const SafetensorsTensorInfo& info) const;

 private:
  SafetensorsFile() = default;
  absl::Status ParseHeader();

  std::string path_;
  MappedFile mapping_;
  uint64_t data_start_ = 0;  // 8 + N: where tensor offsets start in the file.
  std::map<std::string, SafetensorsTensorInfo, std::less<>> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace transerve
