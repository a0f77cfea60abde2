// CTranslate2 model.bin writer: validation first, then the records back to back, little-endian.
#include "model/loader/ctranslate2_model_bin_writer.h"

#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model/core/read_file.h"

namespace transerve {
namespace {

constexpr std::size_t kMaxStringBytes = std::numeric_limits<uint16_t>::max() - 1;  // + the NUL

void AppendLE(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// Length (counting the NUL) and bytes. The converters count characters, which is the same for the
// ASCII names they write; bytes is what the reader checks.
void AppendString(std::string* out, std::string_view s) {
  AppendLE(out, s.size() + 1, 2);
  out->append(s);
  out->push_back('\0');
}

absl::Status CheckString(absl::string_view what, std::string_view s, bool may_be_empty) {
  if (s.empty() && !may_be_empty) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": empty name"));
  }
  if (s.size() > kMaxStringBytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.size(), " bytes, more than the ",
                                                   kMaxStringBytes, " a u16 length allows"));
  }
  if (s.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": holds a NUL"));
  }
  return absl::OkStatus();
}

absl::Status CheckVariable(const Ct2NamedVariable& v, uint32_t version) {
  const std::string where = absl::StrCat("variable \"", v.name, "\"");
  if (absl::Status s = CheckString(where, v.name, false); !s.ok()) return s;
  const std::size_t width = Ct2DtypeSize(v.dtype);
  if (width == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": unknown dtype id ", static_cast<int>(v.dtype)));
  }
  if (version < 4 && v.dtype != Ct2Dtype::kFloat32 && v.dtype != Ct2Dtype::kInt16 &&
      v.dtype != Ct2Dtype::kInt8) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": binary version ", version,
                                                   " stores only float32, int16 and int8, not ",
                                                   Ct2DtypeName(v.dtype)));
  }
  if (v.shape.size() > static_cast<std::size_t>(kCt2MaxRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": rank ", v.shape.size(), " exceeds the limit of ", kCt2MaxRank));
  }
  uint64_t elements = 1;
  for (int64_t d : v.shape) {
    if (d < 0 || d > std::numeric_limits<uint32_t>::max() ||
        __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": bad shape dimension ", d));
    }
  }
  uint64_t needed = 0;
  if (__builtin_mul_overflow(elements, width, &needed) || needed != v.bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": shape needs ", elements, " ",
                                                   Ct2DtypeName(v.dtype), " elements, got ",
                                                   v.bytes.size(), " bytes"));
  }
  // Version 4 on stores the byte count in 32 bits, older ones the element count.
  if ((version >= 4 ? needed : elements) > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", needed, " bytes do not fit the 32-bit count"));
  }
  return absl::OkStatus();
}

absl::Status CheckAliases(const Ct2ModelBinContents& model,
                          const std::set<std::string, std::less<>>& names) {
  std::map<std::string_view, std::string_view> targets;
  for (const auto& [alias, target] : model.aliases) {
    const std::string where = absl::StrCat("alias \"", alias, "\"");
    if (absl::Status s = CheckString(where, alias, false); !s.ok()) return s;
    if (absl::Status s = CheckString(absl::StrCat(where, " target"), target, false); !s.ok()) {
      return s;
    }
    if (names.contains(alias) || !targets.emplace(alias, target).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the name is taken"));
    }
  }
  // A chain longer than the number of aliases has looped.
  for (const auto& [alias, target] : targets) {
    std::string_view at = target;
    for (std::size_t steps = 0; !names.contains(at); ++steps) {
      auto next = targets.find(at);
      if (next == targets.end() || steps > targets.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("alias \"", std::string(alias),
                         "\": does not resolve to a variable (missing or a cycle)"));
      }
      at = next->second;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> SerializeCt2ModelBin(const Ct2ModelBinContents& model) {
  const uint32_t version = model.binary_version;
  if (version < kCt2OldestBinaryVersion || version > kCt2NewestBinaryVersion) {
    return absl::InvalidArgumentError(absl::StrCat("binary version ", version, " is not 1 to 6"));
  }
  if (version < 2 && (!model.spec_name.empty() || model.spec_revision != 1)) {
    return absl::InvalidArgumentError(
        "binary version 1 has no spec name and no revision (it means revision 1)");
  }
  if (version < 3 && !model.aliases.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("binary version ", version, " has no aliases (they start at 3)"));
  }
  if (absl::Status s = CheckString("spec name", model.spec_name, true); !s.ok()) return s;
  if (model.variables.size() > std::numeric_limits<uint32_t>::max() ||
      model.aliases.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError("more variables or aliases than a 32-bit count holds");
  }
  std::set<std::string, std::less<>> names;
  for (const Ct2NamedVariable& v : model.variables) {
    if (absl::Status s = CheckVariable(v, version); !s.ok()) return s;
    if (!names.insert(v.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("variable \"", v.name, "\" appears twice"));
    }
  }
  if (absl::Status s = CheckAliases(model, names); !s.ok()) return s;

  std::string out;
  AppendLE(&out, version, 4);
  if (version >= 2) {
    AppendString(&out, model.spec_name);
    AppendLE(&out, model.spec_revision, 4);
  }
  AppendLE(&out, model.variables.size(), 4);
  for (const Ct2NamedVariable& v : model.variables) {
    AppendString(&out, v.name);
    AppendLE(&out, v.shape.size(), 1);
    for (int64_t d : v.shape) AppendLE(&out, static_cast<uint64_t>(d), 4);
    const std::size_t width = Ct2DtypeSize(v.dtype);
    if (version >= 4) {
      AppendLE(&out, static_cast<uint8_t>(v.dtype), 1);
      AppendLE(&out, v.bytes.size(), 4);
    } else {
      AppendLE(&out, width, 1);
      AppendLE(&out, v.bytes.size() / width, 4);
    }
    out += v.bytes;
  }
  if (version >= 3) {
    AppendLE(&out, model.aliases.size(), 4);
    for (const auto& [alias, target] : model.aliases) {
      AppendString(&out, alias);
      AppendString(&out, target);
    }
  }
  return out;
}

absl::Status WriteCt2ModelBin(const std::string& path, const Ct2ModelBinContents& model) {
  absl::StatusOr<std::string> bytes = SerializeCt2ModelBin(model);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(), absl::StrCat(path, ": ", bytes.status().message()));
  }
  return WriteWholeFile(path, *bytes);
}

}  // namespace transerve
