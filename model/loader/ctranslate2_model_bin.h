// Read-only, memory-mapped reader of CTranslate2's model.bin (binary versions 1 to 6, what
// CTranslate2 4.x reads): spec name and revision, every variable's dtype, shape and bytes in place,
// and the aliases resolved. docs/ctranslate2-format.md describes the layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/loader/mapped_file.h"

namespace transerve {

// The versions CTranslate2 4.x reads (it writes 6). The record layout changed at 2 (spec name and
// revision), 3 (aliases) and 4 (dtype id and byte count instead of an item size); 5 and 6 change
// only how CTranslate2 interprets the weights and config, not the bytes.
inline constexpr uint32_t kCt2OldestBinaryVersion = 1;
inline constexpr uint32_t kCt2NewestBinaryVersion = 6;
// CTranslate2 allows up to 255 dimensions; no converter writes more than 4, so more than 8 is a
// corrupt file rather than a model.
inline constexpr int kCt2MaxRank = 8;

// The id CTranslate2 stores for a variable's type (its DataType enum, in this order).
enum class Ct2Dtype : uint8_t {
  kFloat32 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kFloat16 = 4,
  kBFloat16 = 5,
};

// "float32", "int8", ... as CTranslate2 and numpy name them; "unknown" outside the enum.
const char* Ct2DtypeName(Ct2Dtype dtype);
// Bytes per element; 0 outside the enum.
std::size_t Ct2DtypeSize(Ct2Dtype dtype);

struct Ct2Variable {
  std::string name;
  Ct2Dtype dtype = Ct2Dtype::kFloat32;
  std::vector<int64_t> shape;  // [] is a scalar (one element).
  // The little-endian elements inside the mapping: no copy, no alignment guarantee (records are
  // packed), valid while the Ct2ModelBin (or the one it is moved into) lives.
  std::span<const std::byte> data;
  uint64_t file_offset = 0;  // Where `data` starts in the file, for messages.
};

class Ct2ModelBin {
 public:
  // Maps the file read-only and validates all of it before returning:
  //  - the binary version is 1..6 (anything else is INVALID_ARGUMENT naming the version);
  //  - strings are a u16 length counting a final NUL, then that many bytes ending in the NUL and
  //    holding no other; names are not empty;
  //  - rank <= 8; dtype ids 0..5 (item sizes 1, 2, 4 before version 4); the byte count equals
  //    product(shape) * element size, overflow-checked; names are unique;
  //  - aliases (version 3 on) name no variable and no earlier alias, and resolve, through other
  //    aliases if need be, to a variable: none points to a missing name or into a cycle;
  //  - the file ends exactly after the last record.
  // Counts are checked against the bytes left before anything is reserved. Errors: NOT_FOUND (no
  // file), DATA_LOSS (truncated, or bytes after the end), INVALID_ARGUMENT (malformed); messages
  // name the file, the byte offset and, when relevant, the variable or alias.
  static absl::StatusOr<Ct2ModelBin> Open(const std::string& path);

  Ct2ModelBin(Ct2ModelBin&& other) noexcept = default;
  Ct2ModelBin& operator=(Ct2ModelBin&& other) noexcept = default;
  Ct2ModelBin(const Ct2ModelBin&) = delete;
  Ct2ModelBin& operator=(const Ct2ModelBin&) = delete;

  const std::string& path() const { return path_; }
  uint32_t binary_version() const { return binary_version_; }
  // Empty before version 2 (CTranslate2 then assumes a Transformer).
  const std::string& spec_name() const { return spec_name_; }
  // 1 before version 2, as CTranslate2 assumes.
  uint32_t spec_revision() const { return spec_revision_; }

  // In file order (the converters write them sorted by name).
  const std::vector<Ct2Variable>& variables() const { return variables_; }
  // Alias name -> the variable it finally resolves to, as written (chains followed).
  const std::map<std::string, std::string, std::less<>>& aliases() const { return aliases_; }

  // The variable called `name`, or the one an alias of that name resolves to. Like CTranslate2,
  // an alias also stands for its target's "_scale" and "_zero" companions when those exist (the
  // converter aliases a weight before quantizing, so only the target gets a scale). nullptr if
  // none. Valid while this object (or the one it is moved into) lives.
  const Ct2Variable* Find(std::string_view name) const;

 private:
  Ct2ModelBin() = default;
  absl::Status Parse();
  absl::Status ResolveAliases(const std::vector<std::pair<std::string, std::string>>& written,
                              const std::vector<uint64_t>& offsets);
  const Ct2Variable* FindVariable(std::string_view name) const;

  std::string path_;
  MappedFile mapping_;
  uint32_t binary_version_ = 0;
  std::string spec_name_;
  uint32_t spec_revision_ = 1;
  std::vector<Ct2Variable> variables_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> variables_ position
  std::map<std::string, std::string, std::less<>> aliases_;
};

}  // namespace transerve
