// CTranslate2 model.bin reader: a bounds-checked cursor over the mapping, the per-version record
// layout, and alias resolution.
#include "model/loader/ctranslate2_model_bin.h"

#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace transerve {
namespace {

// The smallest records the encoding allows: a string takes at least its length and NUL (3), a
// variable adds rank (1), dtype or item size (1) and byte or element count (4), an alias is two
// strings. A record count is checked against these before anything is reserved.
constexpr uint64_t kMinStringBytes = 2 + 1;
constexpr uint64_t kMinVariableRecordBytes = kMinStringBytes + 1 + 1 + 4;
constexpr uint64_t kMinAliasRecordBytes = 2 * kMinStringBytes;

// Quotes a name for messages, escaping control and non-UTF-8 bytes. (Debian's Abseil does not
// alias absl::string_view to std::string_view, hence the explicit conversion.)
std::string Q(std::string_view s) {
  return absl::StrCat("\"", absl::Utf8SafeCHexEscape(absl::string_view(s.data(), s.size())), "\"");
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// Reads little-endian fields front to back; every read checks the bytes left first, so nothing
// past the mapping is touched and a truncated file names the field it was cut in.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  uint64_t offset() const { return pos_; }
  uint64_t left() const { return bytes_.size() - pos_; }

  // INVALID_ARGUMENT at byte `at`, naming `what`.
  absl::Status Malformed(uint64_t at, absl::string_view what, absl::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": byte ", at, ": ", what, ": ", problem));
  }

  absl::StatusOr<uint64_t> Uint(int width, absl::string_view what) {
    if (absl::Status s = Need(width, what); !s.ok()) return s;
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= static_cast<uint64_t>(bytes_[pos_ + i]) << (8 * i);
    pos_ += width;
    return v;
  }

  absl::StatusOr<std::span<const uint8_t>> Bytes(uint64_t n, absl::string_view what) {
    if (absl::Status s = Need(n, what); !s.ok()) return s;
    const std::span<const uint8_t> out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  // A u16 length that counts the terminating NUL, then the bytes. The converters always write
  // the NUL; one missing, or a NUL inside, means the length is wrong (the Python writer counts
  // characters, not bytes, so a non-ASCII name desynchronizes the file right here).
  absl::StatusOr<std::string> String(absl::string_view what) {
    const uint64_t at = pos_;
    absl::StatusOr<uint64_t> length = Uint(2, what);
    if (!length.ok()) return length.status();
    if (*length == 0) return Malformed(at, what, "string length 0 (it must count the final NUL)");
    absl::StatusOr<std::span<const uint8_t>> bytes = Bytes(*length, what);
    if (!bytes.ok()) return bytes.status();
    const std::string_view text(reinterpret_cast<const char*>(bytes->data()), *length - 1);
    if (bytes->back() != 0) {
      const std::string_view all(reinterpret_cast<const char*>(bytes->data()), bytes->size());
      return Malformed(at, what,
                       absl::StrCat("string of ", *length, " bytes ", Q(all.substr(0, 64)),
                                    " does not end in NUL"));
    }
    if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
      return Malformed(
          at, what,
          absl::StrCat("string ", Q(text.substr(0, 64)), " holds a NUL at position ", nul));
    }
    return std::string(text);
  }

 private:
  absl::Status Need(uint64_t n, absl::string_view what) const {
    if (n <= left()) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat(path_, ": truncated at byte ", pos_, ": ", what,
                                            " needs ", n, " bytes, the file (", bytes_.size(),
                                            " bytes) has ", left(), " left"));
  }

  std::span<const uint8_t> bytes_;
  const std::string& path_;
  uint64_t pos_ = 0;
};

// A dtype from the version 4+ id, or from the item size older files stored instead (CTranslate2
// read 4, 2 and 1 bytes as float32, int16 and int8).
std::optional<Ct2Dtype> DtypeFromId(uint64_t id) {
  if (id > static_cast<uint64_t>(Ct2Dtype::kBFloat16)) return std::nullopt;
  return static_cast<Ct2Dtype>(id);
}

std::optional<Ct2Dtype> DtypeFromItemSize(uint64_t size) {
  switch (size) {
    case 4:
      return Ct2Dtype::kFloat32;
    case 2:
      return Ct2Dtype::kInt16;
    case 1:
      return Ct2Dtype::kInt8;
    default:
      return std::nullopt;
  }
}

// One variable record: name, rank, dimensions, dtype (or item size) and count, then its bytes,
// which stay in the mapping.
absl::StatusOr<Ct2Variable> ReadVariable(Cursor& in, uint32_t version, uint64_t i) {
  const uint64_t record_at = in.offset();
  absl::StatusOr<std::string> name = in.String(absl::StrCat("variable ", i, " name"));
  if (!name.ok()) return name.status();
  const std::string where = absl::StrCat("variable ", i, " ", Q(*name));
  if (name->empty()) return in.Malformed(record_at, where, "empty name");

  const uint64_t rank_at = in.offset();
  absl::StatusOr<uint64_t> rank = in.Uint(1, absl::StrCat(where, " rank"));
  if (!rank.ok()) return rank.status();
  if (*rank > static_cast<uint64_t>(kCt2MaxRank)) {
    return in.Malformed(rank_at, where,
                        absl::StrCat("rank ", *rank, " exceeds the limit of ", kCt2MaxRank));
  }
  Ct2Variable v;
  v.name = *std::move(name);
  uint64_t elements = 1;
  bool overflow = false;
  for (uint64_t d = 0; d < *rank; ++d) {
    absl::StatusOr<uint64_t> dim = in.Uint(4, absl::StrCat(where, " dimension ", d));
    if (!dim.ok()) return dim.status();
    v.shape.push_back(static_cast<int64_t>(*dim));
    overflow = overflow || __builtin_mul_overflow(elements, *dim, &elements);
  }

  const uint64_t type_at = in.offset();
  uint64_t num_bytes = 0;
  if (version >= 4) {
    absl::StatusOr<uint64_t> id = in.Uint(1, absl::StrCat(where, " dtype"));
    if (!id.ok()) return id.status();
    const std::optional<Ct2Dtype> dtype = DtypeFromId(*id);
    if (!dtype.has_value()) {
      return in.Malformed(type_at, where,
                          absl::StrCat("unknown dtype id ", *id, " (known: 0 to 5)"));
    }
    v.dtype = *dtype;
    absl::StatusOr<uint64_t> n = in.Uint(4, absl::StrCat(where, " byte count"));
    if (!n.ok()) return n.status();
    num_bytes = *n;
  } else {
    absl::StatusOr<uint64_t> size = in.Uint(1, absl::StrCat(where, " item size"));
    if (!size.ok()) return size.status();
    const std::optional<Ct2Dtype> dtype = DtypeFromItemSize(*size);
    if (!dtype.has_value()) {
      return in.Malformed(type_at, where,
                          absl::StrCat("unknown item size ", *size, " (known: 1, 2, 4)"));
    }
    v.dtype = *dtype;
    absl::StatusOr<uint64_t> n = in.Uint(4, absl::StrCat(where, " element count"));
    if (!n.ok()) return n.status();
    num_bytes = *n * *size;  // Both fit in 32 bits: no overflow.
  }

  const std::size_t width = Ct2DtypeSize(v.dtype);
  uint64_t expected = 0;
  overflow = overflow || __builtin_mul_overflow(elements, width, &expected);
  if (overflow) {
    return in.Malformed(rank_at, where,
                        absl::StrCat("shape ", ShapeText(v.shape), " of ", Ct2DtypeName(v.dtype),
                                     " overflows 64-bit size arithmetic"));
  }
  if (num_bytes != expected) {
    return in.Malformed(type_at, where,
                        absl::StrCat("holds ", num_bytes, " bytes but shape ", ShapeText(v.shape),
                                     " of ", Ct2DtypeName(v.dtype), " needs ", expected));
  }
  v.file_offset = in.offset();
  absl::StatusOr<std::span<const uint8_t>> data = in.Bytes(num_bytes, absl::StrCat(where, " data"));
  if (!data.ok()) return data.status();
  v.data = std::as_bytes(*data);

  return v;
}

}  // namespace

const char* Ct2DtypeName(Ct2Dtype dtype) {
  switch (dtype) {
    case Ct2Dtype::kFloat32:
      return "float32";
    case Ct2Dtype::kInt8:
      return "int8";
    case Ct2Dtype::kInt16:
      return "int16";
    case Ct2Dtype::kInt32:
      return "int32";
    case Ct2Dtype::kFloat16:
      return "float16";
    case Ct2Dtype::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

std::size_t Ct2DtypeSize(Ct2Dtype dtype) {
  switch (dtype) {
    case Ct2Dtype::kFloat32:
      return 4;
    case Ct2Dtype::kInt8:
      return 1;
    case Ct2Dtype::kInt16:
      return 2;
    case Ct2Dtype::kInt32:
      return 4;
    case Ct2Dtype::kFloat16:
      return 2;
    case Ct2Dtype::kBFloat16:
      return 2;
  }
  return 0;
}

absl::StatusOr<Ct2ModelBin> Ct2ModelBin::Open(const std::string& path) {
  absl::StatusOr<MappedFile> mapping = MappedFile::Open(path);
  if (!mapping.ok()) return mapping.status();
  Ct2ModelBin model;
  model.path_ = path;
  model.mapping_ = *std::move(mapping);
  if (absl::Status s = model.Parse(); !s.ok()) return s;
  return model;
}

absl::Status Ct2ModelBin::Parse() {
  Cursor in(mapping_.bytes(), path_);

  absl::StatusOr<uint64_t> version = in.Uint(4, "binary version");
  if (!version.ok()) return version.status();
  if (*version < kCt2OldestBinaryVersion || *version > kCt2NewestBinaryVersion) {
    return in.Malformed(
        0, "binary version",
        absl::StrCat("version ", *version,
                     " is not supported (CTranslate2 4.x model.bin files are versions ",
                     kCt2OldestBinaryVersion, " to ", kCt2NewestBinaryVersion, ")"));
  }
  binary_version_ = static_cast<uint32_t>(*version);

  if (binary_version_ >= 2) {
    absl::StatusOr<std::string> spec = in.String("spec name");
    if (!spec.ok()) return spec.status();
    spec_name_ = *std::move(spec);
    absl::StatusOr<uint64_t> revision = in.Uint(4, "spec revision");
    if (!revision.ok()) return revision.status();
    spec_revision_ = static_cast<uint32_t>(*revision);
  }

  const uint64_t count_at = in.offset();
  absl::StatusOr<uint64_t> count = in.Uint(4, "variable count");
  if (!count.ok()) return count.status();
  if (*count > in.left() / kMinVariableRecordBytes) {
    return absl::DataLossError(absl::StrCat(
        path_, ": byte ", count_at, ": variable count ", *count, " cannot fit in the ", in.left(),
        " bytes left (each record takes at least ", kMinVariableRecordBytes, ")"));
  }
  variables_.reserve(*count);

  for (uint64_t i = 0; i < *count; ++i) {
    const uint64_t record_at = in.offset();
    absl::StatusOr<Ct2Variable> v = ReadVariable(in, binary_version_, i);
    if (!v.ok()) return v.status();
    if (const auto [it, added] = index_.emplace(v->name, variables_.size()); !added) {
      return in.Malformed(record_at, absl::StrCat("variable ", i, " ", Q(v->name)),
                          absl::StrCat("the name is already variable ", it->second, "'s"));
    }
    variables_.push_back(*std::move(v));
  }

  std::vector<std::pair<std::string, std::string>> written;
  std::vector<uint64_t> offsets;
  if (binary_version_ >= 3) {
    const uint64_t aliases_at = in.offset();
    absl::StatusOr<uint64_t> n = in.Uint(4, "alias count");
    if (!n.ok()) return n.status();
    if (*n > in.left() / kMinAliasRecordBytes) {
      return absl::DataLossError(absl::StrCat(
          path_, ": byte ", aliases_at, ": alias count ", *n, " cannot fit in the ", in.left(),
          " bytes left (each record takes at least ", kMinAliasRecordBytes, ")"));
    }
    written.reserve(*n);
    offsets.reserve(*n);
    for (uint64_t i = 0; i < *n; ++i) {
      offsets.push_back(in.offset());
      absl::StatusOr<std::string> alias = in.String(absl::StrCat("alias ", i, " name"));
      if (!alias.ok()) return alias.status();
      absl::StatusOr<std::string> target =
          in.String(absl::StrCat("alias ", i, " ", Q(*alias), " target"));
      if (!target.ok()) return target.status();
      written.emplace_back(*std::move(alias), *std::move(target));
    }
  }

  if (in.left() != 0) {
    return absl::DataLossError(absl::StrCat(path_, ": byte ", in.offset(), ": ", in.left(),
                                            " bytes follow the last record"));
  }
  return ResolveAliases(written, offsets);
}

absl::Status Ct2ModelBin::ResolveAliases(
    const std::vector<std::pair<std::string, std::string>>& written,
    const std::vector<uint64_t>& offsets) {
  std::map<std::string_view, std::size_t> position;  // alias name -> index in `written`
  for (std::size_t i = 0; i < written.size(); ++i) {
    const auto& [alias, target] = written[i];
    const std::string where =
        absl::StrCat(path_, ": byte ", offsets[i], ": alias ", i, " ", Q(alias));
    if (alias.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": empty name"));
    if (target.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": empty target"));
    if (index_.contains(alias)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the name is a variable's"));
    }
    if (const auto [it, added] = position.emplace(alias, i); !added) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the name is already alias ", it->second, "'s"));
    }
  }

  // Each chain is walked once: aliases met on the way get the chain's end, so a long chain costs
  // its length, not its square; meeting an alias of the walk in progress is a cycle.
  enum class State { kUnseen, kOnPath, kDone };
  std::vector<State> state(written.size(), State::kUnseen);
  std::vector<std::size_t> resolved(written.size());  // variables_ index
  for (std::size_t start = 0; start < written.size(); ++start) {
    std::vector<std::size_t> path;
    std::size_t i = start;
    std::size_t end = 0;
    while (true) {
      if (state[i] == State::kDone) {
        end = resolved[i];
        break;
      }
      if (state[i] == State::kOnPath) {
        std::vector<std::string> names;
        for (std::size_t p : path) names.push_back(written[p].first);
        names.push_back(written[i].first);
        return absl::InvalidArgumentError(absl::StrCat(
            path_, ": byte ", offsets[start], ": alias ", start, " ", Q(written[start].first),
            ": the aliases form a cycle: ", absl::StrJoin(names, " -> ")));
      }
      state[i] = State::kOnPath;
      path.push_back(i);
      const std::string& target = written[i].second;
      if (auto v = index_.find(target); v != index_.end()) {
        end = v->second;
        break;
      }
      auto next = position.find(target);
      if (next == position.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path_, ": byte ", offsets[i], ": alias ", i, " ", Q(written[i].first),
                         ": target ", Q(target), " is neither a variable nor an alias"));
      }
      i = next->second;
    }
    for (std::size_t p : path) {
      state[p] = State::kDone;
      resolved[p] = end;
    }
  }
  for (std::size_t i = 0; i < written.size(); ++i) {
    aliases_.emplace(written[i].first, variables_[resolved[i]].name);
  }
  return absl::OkStatus();
}

const Ct2Variable* Ct2ModelBin::FindVariable(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &variables_[it->second];
}

const Ct2Variable* Ct2ModelBin::Find(std::string_view name) const {
  if (const Ct2Variable* v = FindVariable(name)) return v;
  if (auto it = aliases_.find(name); it != aliases_.end()) return FindVariable(it->second);
  for (std::string_view suffix : {std::string_view("_scale"), std::string_view("_zero")}) {
    if (!name.ends_with(suffix)) continue;
    auto it = aliases_.find(name.substr(0, name.size() - suffix.size()));
    if (it != aliases_.end()) return FindVariable(std::string(it->second).append(suffix));
  }
  return nullptr;
}

}  // namespace transerve
