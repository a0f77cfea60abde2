// Safetensors writer: validation, float rounding, and the reference writer's layout.
#include "model/loader/safetensors_writer.h"

#include <algorithm>
#include <bit>
#include <exception>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "model/core/read_file.h"
#include "model/loader/safetensors.h"

namespace transerve {
namespace {

using Json = nlohmann::json;

void AppendLE(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

absl::StatusOr<std::string> SerializeSafetensors(
    const std::vector<NamedTensor>& tensors, const std::map<std::string, std::string>& metadata) {
  struct Prepared {
    const NamedTensor* tensor;
    int bits;
    std::string bytes;
  };
  std::vector<Prepared> prepared;
  std::set<std::string> names;
  for (const NamedTensor& t : tensors) {
    const std::string where = absl::StrCat("tensor \"", t.name, "\"");
    if (t.name == "__metadata__") {
      return absl::InvalidArgumentError("\"__metadata__\" is reserved and cannot name a tensor");
    }
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, " appears twice"));
    }
    const int bits = SafetensorsDtypeBits(t.dtype);
    if (bits == 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": unknown dtype \"", t.dtype, "\""));
    }
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0 || __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements)) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": bad shape dimension ", d));
      }
    }
    Prepared p{&t, bits, {}};
    if (t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16") {
      if (t.values.size() != elements || !t.raw.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": shape needs ", elements,
                                                       " values, got ", t.values.size(),
                                                       t.raw.empty() ? "" : " (and raw bytes)"));
      }
      p.bytes.reserve(elements * bits / 8);
      for (float v : t.values) {
        if (t.dtype == "F32") {
          AppendLE(&p.bytes, std::bit_cast<uint32_t>(v), 4);
        } else if (t.dtype == "F16") {
          AppendLE(&p.bytes, FloatToHalf(v), 2);
        } else {
          AppendLE(&p.bytes, FloatToBFloat16(v), 2);
        }
      }
    } else {
      uint64_t nbits = 0;
      if (__builtin_mul_overflow(elements, static_cast<uint64_t>(bits), &nbits) || nbits % 8 != 0 ||
          nbits / 8 != t.raw.size() || !t.values.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": ", t.dtype, " data must be given as ", nbits / 8, " raw bytes, got ",
            t.raw.size(), t.values.empty() ? "" : " (and float values)"));
      }
      p.bytes = t.raw;
    }
    prepared.push_back(std::move(p));
  }
  // The reference writer's order (largest element first, then name) keeps the data aligned.
  std::sort(prepared.begin(), prepared.end(), [](const Prepared& a, const Prepared& b) {
    return std::tie(b.bits, a.tensor->name) < std::tie(a.bits, b.tensor->name);
  });

  Json header = Json::object();
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "pt");  // No-op when the caller set one.
  header["__metadata__"] = meta;
  uint64_t offset = 0;
  for (const Prepared& p : prepared) {
    header[p.tensor->name] = {{"dtype", p.tensor->dtype},
                              {"shape", p.tensor->shape},
                              {"data_offsets", {offset, offset + p.bytes.size()}}};
    offset += p.bytes.size();
  }
  std::string header_text;
  try {
    header_text = header.dump();  // Throws on names or metadata that are not valid UTF-8.
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot encode the header: ", e.what()));
  }
  // Pad so the data starts 8-byte aligned, as the reference writer does.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  if (header_text.size() > kSafetensorsMaxHeaderBytes) {
    return absl::InvalidArgumentError("header exceeds the 100,000,000-byte limit");
  }

  std::string out;
  out.reserve(8 + header_text.size() + offset);
  AppendLE(&out, header_text.size(), 8);
  out += header_text;
  for (const Prepared& p : prepared) out += p.bytes;
  return out;
}

absl::Status WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  absl::StatusOr<std::string> bytes = SerializeSafetensors(tensors, metadata);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(), absl::StrCat(path, ": ", bytes.status().message()));
  }
  return WriteWholeFile(path, *bytes);
}

}  // namespace transerve
