// A CTranslate2 model.bin writer for tests and tools: the converters' layout for any binary version
// Ct2ModelBin reads, from variables given as raw bytes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/loader/ctranslate2_model_bin.h"

namespace transerve {

struct Ct2NamedVariable {
  std::string name;
  Ct2Dtype dtype = Ct2Dtype::kFloat32;
  std::vector<int64_t> shape;  // [] is a scalar.
  std::string bytes;           // product(shape) little-endian elements of `dtype`.
};

struct Ct2ModelBinContents {
  uint32_t binary_version = kCt2NewestBinaryVersion;
  std::string spec_name;                    // Written from version 2 on; must be empty before.
  uint32_t spec_revision = 1;               // Written from version 2 on; must be 1 before.
  std::vector<Ct2NamedVariable> variables;  // Written in this order (converters sort by name).
  std::vector<std::pair<std::string, std::string>> aliases;  // (alias, target); version 3 on.
};

// The whole file as bytes. INVALID_ARGUMENT for anything Ct2ModelBin::Open would refuse or the
// version cannot express: a version outside 1..6, a spec name or revision or aliases the version
// has no field for, a dtype other than float32/int16/int8 before version 4, empty names or names
// with a NUL or over 65,534 bytes, duplicate names, rank above 8, dimensions outside 32 bits, a
// byte count that does not match the shape or exceeds 32 bits, and aliases that shadow a name or
// do not resolve to a variable.
absl::StatusOr<std::string> SerializeCt2ModelBin(const Ct2ModelBinContents& model);

// SerializeCt2ModelBin, written to `path` (replaced if it exists).
absl::Status WriteCt2ModelBin(const std::string& path, const Ct2ModelBinContents& model);

}  // namespace transerve
