#include "model/loader/pytorch_checkpoint.h"

#include <bit>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/core/half.h"
#include "model/loader/safetensors.h"
#include "model/loader/stored_zip.h"

namespace transerve {
namespace {

// torch.serialization's MAGIC_NUMBER 0x1950a86a20f9469cfc6c, as LONG1's little-endian bytes.
constexpr std::string_view kLegacyMagic = "\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
constexpr int64_t kLegacyProtocolVersion = 1001;

std::string Q(std::string_view s) {
  return absl::StrCat("'", absl::Utf8SafeCHexEscape(absl::string_view(s.data(), s.size())), "'");
}

int64_t WidthOf(std::string_view dtype) { return dtype == "F32" ? 4 : 2; }

const PickleValue* DictGet(const Unpickled& p, const PickleValue& dict, std::string_view key) {
  for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const PickleValue& k = p.values[dict.items[i]];
    if (k.kind == PickleKind::kString && k.text == key) return &p.values[dict.items[i + 1]];
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PytorchCheckpoint>> PytorchCheckpoint::Open(
    const std::string& path) {
  absl::StatusOr<MappedFile> mapping = MappedFile::Open(path);
  if (!mapping.ok()) return mapping.status();
  std::unique_ptr<PytorchCheckpoint> file(new PytorchCheckpoint());
  file->path_ = path;
  file->mapping_ = *std::move(mapping);
  const std::span<const uint8_t> bytes = file->mapping_.bytes();
  absl::Status s;
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "PK\x03\x04", 4) == 0) {
    file->format_ = "zip";
    s = file->ReadZip();
  } else if (bytes.size() >= 2 && bytes[0] == 0x80) {
    file->format_ = "legacy";
    s = file->ReadLegacy();
  } else {
    s = absl::InvalidArgumentError(
        absl::StrCat(path, ": neither a torch.save zip archive nor a legacy torch.save pickle"));
  }
  if (!s.ok()) return s;
  return file;
}

absl::StatusOr<std::map<std::string, std::pair<std::string, int64_t>>>
PytorchCheckpoint::StoragesOf(const Unpickled& pickle) const {
  std::map<std::string, std::pair<std::string, int64_t>> out;
  for (const PickleValue& v : pickle.values) {
    if (v.kind != PickleKind::kStorage) continue;
    auto [it, added] = out.emplace(v.text, std::make_pair(v.dtype, v.number));
    if (!added && it->second != std::make_pair(v.dtype, v.number)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": storage ", Q(v.text), " is declared twice with different types or sizes"));
    }
  }
  return out;
}

absl::Status PytorchCheckpoint::ReadZip() {
  const std::span<const uint8_t> file = mapping_.bytes();
  auto entries = ReadStoredZip(file, path_);
  if (!entries.ok()) return entries.status();
  // torch.save puts everything under one folder (its name varies): <folder>/data.pkl.
  const StoredZipEntry* pickle_entry = nullptr;
  std::map<std::string_view, const StoredZipEntry*> by_name;
  for (const StoredZipEntry& e : *entries) {
    by_name.emplace(e.name, &e);
    const std::size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash) == "/data.pkl") {
      if (pickle_entry != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(path_, ": more than one data.pkl"));
      }
      pickle_entry = &e;
    }
  }
  if (pickle_entry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": zip archive without <folder>/data.pkl: not a torch.save file"));
  }
  const std::string folder = pickle_entry->name.substr(0, pickle_entry->name.find('/'));
  if (auto it = by_name.find(folder + "/byteorder"); it != by_name.end()) {
    const std::string_view order(reinterpret_cast<const char*>(file.data() + it->second->offset),
                                 it->second->size);
    if (order != "little") {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": byteorder is ", Q(order), "; only little-endian is read"));
    }
  }
  auto pickle = RestrictedUnpickle(file.subspan(pickle_entry->offset, pickle_entry->size),
                                   path_ + ": data.pkl");
  if (!pickle.ok()) return pickle.status();
  auto declared = StoragesOf(*pickle);
  if (!declared.ok()) return declared.status();
  Storages storages;
  for (const auto& [key, type] : *declared) {
    auto it = by_name.find(absl::StrCat(folder, "/data/", key));
    if (it == by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": storage ", Q(key), " has no entry in the archive"));
    }
    const int64_t width = WidthOf(type.first);
    if (static_cast<uint64_t>(type.second) > it->second->size / width ||
        static_cast<uint64_t>(type.second * width) != it->second->size) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": storage ", Q(key), " declares ", type.second, " ", type.first,
                       " elements but its entry holds ", it->second->size, " bytes"));
    }
    storages[key] = {type.first, file.subspan(it->second->offset, it->second->size)};
  }
  return TakeStateDict(*pickle, storages);
}

absl::Status PytorchCheckpoint::ReadLegacy() {
  const std::span<const uint8_t> file = mapping_.bytes();
  std::size_t at = 0;
  const auto next = [&](const char* what) -> absl::StatusOr<Unpickled> {
    auto p = RestrictedUnpickle(file.subspan(at), absl::StrCat(path_, ": legacy ", what));
    if (p.ok()) at += p->end;
    return p;
  };
  const auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": legacy torch.save file: ", why));
  };
  auto magic = next("magic number");
  if (!magic.ok()) return magic.status();
  const PickleValue& m = magic->values[magic->root];
  if (m.kind != PickleKind::kBigInt || m.text != kLegacyMagic) {
    return bad("the first pickle is not torch's magic number");
  }
  auto protocol = next("protocol version");
  if (!protocol.ok()) return protocol.status();
  const PickleValue& v = protocol->values[protocol->root];
  if (v.kind != PickleKind::kInt || v.number != kLegacyProtocolVersion) {
    return bad("protocol version is not 1001");
  }
  auto sys_info = next("sys_info");
  if (!sys_info.ok()) return sys_info.status();
  const PickleValue& info = sys_info->values[sys_info->root];
  const PickleValue* little =
      info.kind == PickleKind::kDict ? DictGet(*sys_info, info, "little_endian") : nullptr;
  if (little == nullptr || little->kind != PickleKind::kBool || little->number != 1) {
    return bad("sys_info does not say little_endian: True; only little-endian files are read");
  }
  auto pickle = next("state dict");
  if (!pickle.ok()) return pickle.status();
  auto declared = StoragesOf(*pickle);
  if (!declared.ok()) return declared.status();
  auto keys = next("storage keys");
  if (!keys.ok()) return keys.status();
  const PickleValue& list = keys->values[keys->root];
  if (list.kind != PickleKind::kList) return bad("the storage keys are not a list");

  // Each storage follows in key order: an int64 element count, then the elements.
  Storages storages;
  for (uint32_t item : list.items) {
    const PickleValue& key = keys->values[item];
    if (key.kind != PickleKind::kString) return bad("a storage key is not a string");
    auto type = declared->find(key.text);
    if (type == declared->end()) {
      return bad(absl::StrCat("storage ", Q(key.text), " is not used by the pickle"));
    }
    if (file.size() - at < 8) return bad(absl::StrCat("storage ", Q(key.text), " is cut short"));
    uint64_t count = 0;
    for (int i = 0; i < 8; ++i) count |= static_cast<uint64_t>(file[at + i]) << (8 * i);
    at += 8;
    const uint64_t width = static_cast<uint64_t>(WidthOf(type->second.first));
    if (count != static_cast<uint64_t>(type->second.second)) {
      return bad(absl::StrCat("storage ", Q(key.text), " holds ", count, " elements, declared ",
                              type->second.second));
    }
    if (count > (file.size() - at) / width) {
      return bad(absl::StrCat("storage ", Q(key.text), " runs past the end of the file"));
    }
    if (!storages.emplace(key.text, Storage{type->second.first, file.subspan(at, count * width)})
             .second) {
      return bad(absl::StrCat("storage ", Q(key.text), " is listed twice"));
    }
    at += count * width;
  }
  if (at != file.size()) {
    return bad(absl::StrCat(file.size() - at, " bytes follow the last storage"));
  }
  return TakeStateDict(*pickle, storages);
}

absl::Status PytorchCheckpoint::TakeStateDict(const Unpickled& pickle, const Storages& storages) {
  const PickleValue& root = pickle.values[pickle.root];
  if (root.kind != PickleKind::kDict) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": the pickled object is not a state dict (name -> tensor)"));
  }
  for (std::size_t i = 0; i + 1 < root.items.size(); i += 2) {
    const PickleValue& key = pickle.values[root.items[i]];
    const PickleValue& value = pickle.values[root.items[i + 1]];
    if (key.kind != PickleKind::kString) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": a state dict key is not a string"));
    }
    const std::string where = absl::StrCat(path_, ": tensor ", Q(key.text));
    if (value.kind != PickleKind::kTensor) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is not a tensor"));
    }
    const PickleValue& storage_ref = pickle.values[value.items[0]];
    auto storage = storages.find(storage_ref.text);
    if (storage == storages.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": storage ", Q(storage_ref.text), " has no data"));
    }
    // Contiguous row-major only: the stride of each dimension (of more than one element) is the
    // product of the later sizes.
    uint64_t numel = 1;
    bool overflow = false;
    for (int64_t d : value.shape) {
      if (d < 0) return absl::InvalidArgumentError(absl::StrCat(where, ": negative size"));
      overflow = overflow || __builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel);
    }
    if (overflow || numel > static_cast<uint64_t>(INT64_MAX)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": its size overflows"));
    }
    if (value.stride.size() != value.shape.size()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": shape and stride differ in rank"));
    }
    int64_t expected = 1;  // the product of the later sizes: at most numel, so no overflow
    for (std::size_t d = value.shape.size(); numel != 0 && d-- > 0;) {
      if (value.shape[d] != 1 && value.stride[d] != expected) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": stride [", absl::StrJoin(value.stride, ", "), "] for shape [",
                         absl::StrJoin(value.shape, ", "), "] is not contiguous row-major"));
      }
      expected *= value.shape[d];
    }
    const uint64_t width = static_cast<uint64_t>(WidthOf(storage->second.dtype));
    const uint64_t storage_numel = storage->second.bytes.size() / width;
    if (value.number < 0 || static_cast<uint64_t>(value.number) > storage_numel ||
        numel > storage_numel - static_cast<uint64_t>(value.number)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": offset ", value.number, " + ", numel,
                                                     " elements run past its storage of ",
                                                     storage_numel));
    }
    Tensor t;
    t.info.name = key.text;
    t.info.dtype = storage->second.dtype;
    t.info.shape = value.shape;
    t.bytes =
        storage->second.bytes.subspan(static_cast<uint64_t>(value.number) * width, numel * width);
    if (!tensors_.emplace(key.text, std::move(t)).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, " appears twice"));
    }
  }
  return absl::OkStatus();
}

const CheckpointTensorInfo* PytorchCheckpoint::Find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second.info;
}

std::vector<std::string> PytorchCheckpoint::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors_) names.push_back(name);
  return names;
}

absl::Status PytorchCheckpoint::ReadAsFloat32(std::string_view name, std::span<float> out) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, ": no tensor named ", Q(name)));
  }
  const Tensor& t = it->second;
  const std::size_t width = static_cast<std::size_t>(WidthOf(t.info.dtype));
  if (t.bytes.size() / width != out.size()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor ", Q(name), " has ",
                                                   t.bytes.size() / width, " elements, the buffer ",
                                                   out.size()));
  }
  const uint8_t* p = t.bytes.data();
  MappedFile::ConvertReleasing(t.bytes, width, [&](std::size_t first, std::size_t count) {
    for (std::size_t i = first; i < first + count; ++i) {
      if (width == 4) {
        const uint32_t u = static_cast<uint32_t>(p[4 * i]) |
                           (static_cast<uint32_t>(p[4 * i + 1]) << 8) |
                           (static_cast<uint32_t>(p[4 * i + 2]) << 16) |
                           (static_cast<uint32_t>(p[4 * i + 3]) << 24);
        out[i] = std::bit_cast<float>(u);
      } else {
        const auto u = static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
        out[i] = t.info.dtype == "F16" ? HalfToFloat(u) : BFloat16ToFloat(u);
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace transerve
