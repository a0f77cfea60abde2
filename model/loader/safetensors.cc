// Safetensors reader: mmap, header validation mirroring safetensors' read_metadata/validate, and
// float32 conversion.
#include "model/loader/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/loader/strict_json.h"
#include "model/loader/widen_floats.h"

namespace transerve {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kHeaderLengthBytes = 8;

// Quotes a tensor name for messages, escaping control bytes. (Debian's Abseil does not alias
// absl::string_view to std::string_view, hence the explicit conversion.)
std::string Q(std::string_view s) {
  return absl::StrCat("\"", absl::Utf8SafeCHexEscape(absl::string_view(s.data(), s.size())), "\"");
}

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF — the same
// set Rust's str::from_utf8 accepts. Returns the offset of the first bad byte, or npos.
std::size_t FindInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // Allowed range of the second byte.
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // Overlong.
      if (c == 0xED) hi = 0x9F;  // Surrogates.
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // Overlong.
      if (c == 0xF4) hi = 0x8F;  // Above U+10FFFF.
    } else {
      return i;
    }
    if (n - i < len) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

// A JSON number that is a non-negative integer representable in 64 bits.
std::optional<uint64_t> AsU64(const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

int SafetensorsDtypeBits(std::string_view dtype) {
  // The reference's Dtype enum (serde names).
  static constexpr std::pair<std::string_view, int> kDtypes[] = {
      {"BOOL", 8},    {"U8", 8},          {"I8", 8},          {"F8_E5M2", 8}, {"F8_E4M3", 8},
      {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},    {"U16", 16},
      {"F16", 16},    {"BF16", 16},       {"I32", 32},        {"U32", 32},    {"F32", 32},
      {"F64", 64},    {"I64", 64},        {"U64", 64},        {"C64", 64},    {"F4", 4},
      {"F6_E2M3", 6}, {"F6_E3M2", 6},
  };
  for (const auto& [name, bits] : kDtypes) {
    if (name == dtype) return bits;
  }
  return 0;
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  auto mapping = MappedFile::Open(path);
  if (!mapping.ok()) return mapping.status();
  const uint64_t file_size = mapping->bytes().size();
  if (file_size < kHeaderLengthBytes) {
    return absl::DataLossError(absl::StrCat(path, ": file is ", file_size,
                                            " bytes, too short for the 8-byte header length"));
  }
  SafetensorsFile file;
  file.path_ = path;
  file.mapping_ = *std::move(mapping);
  if (absl::Status s = file.ParseHeader(); !s.ok()) return s;
  return file;
}

absl::Status SafetensorsFile::ParseHeader() {
  const uint8_t* bytes = mapping_.bytes().data();
  const uint64_t file_size = mapping_.bytes().size();

  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  if (n > kSafetensorsMaxHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": header length ", n,
                                                   " exceeds the limit of ",
                                                   kSafetensorsMaxHeaderBytes, " bytes"));
  }
  // n is small here, so the sum cannot overflow.
  if (kHeaderLengthBytes + n > file_size) {
    return absl::DataLossError(absl::StrCat(path_, ": header length ", n,
                                            " runs past the end of the file (", file_size,
                                            " bytes); the file is truncated or corrupt"));
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes + kHeaderLengthBytes), n);
  if (const std::size_t bad = FindInvalidUtf8(header); bad != std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": header is not valid UTF-8 (bad byte at header offset ", bad, ")"));
  }
  if (header.empty() || header.front() != '{') {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": header does not start with '{' (not a JSON object)"));
  }
  absl::StatusOr<Json> parsed = ParseJsonStrict(header, absl::StrCat(path_, ": header"));
  if (!parsed.ok()) return parsed.status();
  // Starting with '{' and parsing as a single value makes it an object.

  std::vector<const SafetensorsTensorInfo*> by_offset;
  for (auto& [key, value] : parsed->get_ref<Json::object_t&>()) {
    if (key == "__metadata__") {
      if (value.is_null()) continue;  // The reference treats null as "no metadata".
      if (!value.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path_, ": __metadata__ must be an object of strings, got ", DescribeJsonValue(value)));
      }
      for (auto& [mkey, mvalue] : value.get_ref<Json::object_t&>()) {
        if (!mvalue.is_string()) {
          return absl::InvalidArgumentError(absl::StrCat(path_, ": __metadata__ entry ", Q(mkey),
                                                         " must be a string, got ",
                                                         DescribeJsonValue(mvalue)));
        }
        metadata_.emplace(mkey, mvalue.get<std::string>());
      }
      continue;
    }

    const std::string where = absl::StrCat(path_, ": tensor ", Q(key));
    if (!value.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": entry must be an object, got ", DescribeJsonValue(value)));
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!value.contains(field)) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": missing \"", field, "\""));
      }
    }
    // Other fields are ignored, as the reference's deserializer does.
    SafetensorsTensorInfo info;
    info.name = key;

    const Json& dtype = value["dtype"];
    if (!dtype.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": dtype must be a string, got ", DescribeJsonValue(dtype)));
    }
    info.dtype = dtype.get<std::string>();
    const int bits = SafetensorsDtypeBits(info.dtype);
    if (bits == 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": unknown dtype ", Q(info.dtype)));
    }

    const Json& shape = value["shape"];
    if (!shape.is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": shape must be an array, got ", DescribeJsonValue(shape)));
    }
    uint64_t elements = 1;
    bool overflow = false;
    for (const Json& dim : shape) {
      const std::optional<uint64_t> d = AsU64(dim);
      if (!d.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": shape entries must be non-negative integers, got ", DescribeJsonValue(dim)));
      }
      if (*d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": shape dimension ", *d, " is too large"));
      }
      info.shape.push_back(static_cast<int64_t>(*d));
      overflow = overflow || __builtin_mul_overflow(elements, *d, &elements);
    }

    const Json& offsets = value["data_offsets"];
    std::optional<uint64_t> begin, end;
    if (offsets.is_array() && offsets.size() == 2) {
      begin = AsU64(offsets[0]);
      end = AsU64(offsets[1]);
    }
    if (!begin.has_value() || !end.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": data_offsets must be [begin, end] non-negative integers, got ",
                       offsets.dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 80)));
    }
    info.begin = *begin;
    info.end = *end;
    if (info.end < info.begin) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": data_offsets [", info.begin, ", ",
                                                     info.end, "] end before they begin"));
    }

    // Overflow in a size computation is a corrupt header, as in the reference.
    uint64_t nbits = 0;
    overflow = overflow || __builtin_mul_overflow(elements, static_cast<uint64_t>(bits), &nbits);
    if (overflow) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": shape ", ShapeText(info.shape),
                                                     " of ", info.dtype,
                                                     " overflows 64-bit size arithmetic"));
    }
    if (nbits % 8 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": shape ", ShapeText(info.shape),
                                                     " of ", info.dtype, " (", bits,
                                                     "-bit) is not a whole number of bytes"));
    }
    if (info.end - info.begin != nbits / 8) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": data_offsets [", info.begin, ", ", info.end, "] span ", info.end - info.begin,
          " bytes but shape ", ShapeText(info.shape), " of ", info.dtype, " needs ", nbits / 8));
    }
    // The JSON parser already rejected duplicate names, so this insert always succeeds.
    auto it = tensors_.emplace(key, std::move(info)).first;
    by_offset.push_back(&it->second);
  }

  // Tile check, in offset order as the reference does (files may list tensors in any order).
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsTensorInfo* a, const SafetensorsTensorInfo* b) {
              return std::tie(a->begin, a->end, a->name) < std::tie(b->begin, b->end, b->name);
            });
  uint64_t covered = 0;
  const SafetensorsTensorInfo* previous = nullptr;
  for (const SafetensorsTensorInfo* t : by_offset) {
    if (t->begin > covered) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": tensor ", Q(t->name), ": data_offsets [", t->begin, ", ", t->end,
                       "] leave a gap: bytes [", covered, ", ", t->begin,
                       ") of the data buffer belong to ", "no tensor"));
    }
    if (t->begin < covered) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": tensor ", Q(t->name), ": data_offsets [", t->begin, ", ", t->end,
                       "] overlap tensor ", Q(previous->name), " which ends at ", covered));
    }
    covered = t->end;
    previous = t;
  }
  data_start_ = kHeaderLengthBytes + n;
  const uint64_t buffer_size = file_size - data_start_;
  if (covered != buffer_size) {
    return absl::DataLossError(absl::StrCat(
        path_, ": the tensors cover ", covered, " bytes of data but the file holds ", buffer_size,
        " after the header", covered > buffer_size ? " (truncated file?)" : " (trailing bytes)"));
  }
  return absl::OkStatus();
}

const SafetensorsTensorInfo* SafetensorsFile::Find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsFile::Names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, info] : tensors_) names.push_back(name);
  return names;
}

std::span<const uint8_t> SafetensorsFile::RawBytes(const SafetensorsTensorInfo& info) const {
  // Offsets were validated against the file size in Open().
  return mapping_.bytes().subspan(data_start_ + info.begin, info.end - info.begin);
}

absl::StatusOr<std::vector<float>> SafetensorsFile::ReadAsFloat32(std::string_view name) const {
  const SafetensorsTensorInfo* info = Find(name);
  if (info == nullptr) {
    return absl::NotFoundError(absl::StrCat(path_, ": no tensor named ", Q(name)));
  }
  const std::size_t width = info->dtype == "F32" ? 4 : 2;
  std::vector<float> out((info->end - info->begin) / width);
  if (absl::Status s = ReadAsFloat32(name, out); !s.ok()) return s;
  return out;
}

absl::Status SafetensorsFile::ReadAsFloat32(std::string_view name, std::span<float> out) const {
  const SafetensorsTensorInfo* info = Find(name);
  if (info == nullptr) {
    return absl::NotFoundError(absl::StrCat(path_, ": no tensor named ", Q(name)));
  }
  if (info->dtype != "F32" && info->dtype != "F16" && info->dtype != "BF16") {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor ", Q(name), " has dtype ",
                                                   info->dtype,
                                                   "; only F32, F16 and BF16 convert to float32"));
  }
  const std::span<const uint8_t> raw = RawBytes(*info);
  const std::size_t width = info->dtype == "F32" ? 4 : 2;
  if (raw.size() / width != out.size()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor ", Q(name), " has ",
                                                   raw.size() / width, " elements, the buffer ",
                                                   out.size()));
  }
  const StoredFloat kind = info->dtype == "F32"   ? StoredFloat::kFloat32
                           : info->dtype == "F16" ? StoredFloat::kFloat16
                                                  : StoredFloat::kBFloat16;
  MappedFile::ConvertReleasing(raw, width, [&](std::size_t first, std::size_t count) {
    WidenFloats(kind, raw.data() + width * first, count, out.data() + first);
  });
  return absl::OkStatus();
}

}  // namespace transerve
