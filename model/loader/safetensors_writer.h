// A small safetensors writer (F32, and F16/BF16 rounded from float) for tests and tools; it lays
// files out as the reference writer does so SafetensorsFile and transformers both accept them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/core/half.h"

namespace transerve {

struct NamedTensor {
  std::string name;
  // "F32", "F16" or "BF16": encoded from `values` (F16/BF16 round to nearest even). Any other
  // known dtype ("I64", "U8", ...) is written from `raw` (little-endian bytes), which lets tests
  // build files with dtypes the reader refuses to convert.
  std::string dtype = "F32";
  std::vector<int64_t> shape;  // [] is a scalar.
  std::vector<float> values;   // product(shape) values, row-major.
  std::string raw;             // For non-float dtypes only.
};

// The whole file as bytes: 8-byte header length, JSON header padded with spaces to a multiple of 8,
// then the data ordered by element size (largest first) and name. `metadata` goes to
// "__metadata__", with "format": "pt" added when absent because transformers refuses files without
// it. INVALID_ARGUMENT for duplicate or reserved names, unknown dtypes, negative dims, or a
// values/raw size that does not match the shape.
absl::StatusOr<std::string> SerializeSafetensors(
    const std::vector<NamedTensor>& tensors, const std::map<std::string, std::string>& metadata);

// SerializeSafetensors, written to `path` (replaced if it exists).
absl::Status WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata);

}  // namespace transerve
