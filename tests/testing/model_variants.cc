#include "tests/testing/model_variants.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "model/loader/safetensors.h"
#include "model/loader/safetensors_writer.h"
#include "tests/testing/paths.h"

namespace transerve::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kWeightsFile[] = "model.safetensors";

absl::Status FileError(const std::string& what, const fs::path& path, const std::error_code& ec) {
  return absl::InternalError(absl::StrCat(what, " ", path.string(), ": ", ec.message()));
}

// A fresh directory beside dest's parent, on the same file system, outside any repository.
absl::StatusOr<fs::path> MakeStagingDirectory(const fs::path& dest) {
  static std::atomic<int> counter{0};
  const fs::path parent = dest.parent_path();
  const fs::path staging =
      fs::path(parent.string() + ".staging") /
      absl::StrCat(dest.filename().string(), "-", getpid(), "-", counter.fetch_add(1));
  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (ec) return FileError("cannot create", staging, ec);
  return staging;
}

absl::Status CopyFixtureFiles(const fs::path& fixture_dir, const fs::path& to) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fixture_dir, ec)) {
    if (!entry.is_regular_file()) continue;
    fs::copy_file(entry.path(), to / entry.path().filename(), fs::copy_options::overwrite_existing,
                  ec);
    if (ec) return FileError("cannot copy", entry.path(), ec);
  }
  if (ec) return FileError("cannot list", fixture_dir, ec);
  return absl::OkStatus();
}

// Renames the staged directory into place: whole when `dest` is new, else file by file with
// the weights last (model_variants.h says why).
absl::Status Publish(const fs::path& staged, const fs::path& dest) {
  std::error_code ec;
  if (!fs::exists(dest)) {
    fs::rename(staged, dest, ec);
    if (ec) return FileError("cannot rename into place", dest, ec);
    return absl::OkStatus();
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(staged, ec)) files.push_back(entry.path());
  if (ec) return FileError("cannot list", staged, ec);
  std::stable_partition(files.begin(), files.end(),
                        [](const fs::path& p) { return p.filename() != kWeightsFile; });
  for (const fs::path& file : files) {
    fs::rename(file, dest / file.filename(), ec);
    if (ec) return FileError("cannot rename into place", dest / file.filename(), ec);
  }
  fs::remove(staged, ec);
  return absl::OkStatus();
}

absl::Status PerturbWeights(const fs::path& from, const fs::path& to, uint32_t seed, float spread) {
  auto file = SafetensorsFile::Open(from.string());
  if (!file.ok()) return file.status();
  std::mt19937 rng(seed);
  std::normal_distribution<float> factor(1.0f, spread);
  std::vector<NamedTensor> tensors;
  for (const std::string& name : file->Names()) {
    const SafetensorsTensorInfo& info = *file->Find(name);
    NamedTensor t{.name = name, .dtype = info.dtype, .shape = info.shape};
    const bool is_float = info.dtype == "F32" || info.dtype == "F16" || info.dtype == "BF16";
    if (!is_float) {
      const auto bytes = file->RawBytes(info);
      t.raw.assign(bytes.begin(), bytes.end());
    } else {
      auto values = file->ReadAsFloat32(name);
      if (!values.ok()) return values.status();
      t.values = *std::move(values);
      if (name.find("embed_positions") == std::string::npos) {
        for (float& v : t.values) v *= factor(rng);
      }
    }
    tensors.push_back(std::move(t));
  }
  return WriteSafetensors(to.string(), tensors, file->metadata());
}

}  // namespace

fs::path TinyFixtureModel() { return fs::path(SourceDir()) / "tests/fixtures/tiny-marian/model"; }

absl::Status WriteModelVariant(const fs::path& fixture_dir, const fs::path& dest, uint32_t seed,
                               float spread) {
  auto staged = MakeStagingDirectory(dest);
  if (!staged.ok()) return staged.status();
  if (auto s = CopyFixtureFiles(fixture_dir, *staged); !s.ok()) return s;
  if (auto s = PerturbWeights(fixture_dir / kWeightsFile, *staged / kWeightsFile, seed, spread);
      !s.ok()) {
    return s;
  }
  return Publish(*staged, dest);
}

absl::Status WriteBrokenModel(const fs::path& fixture_dir, const fs::path& dest) {
  auto staged = MakeStagingDirectory(dest);
  if (!staged.ok()) return staged.status();
  if (auto s = CopyFixtureFiles(fixture_dir, *staged); !s.ok()) return s;
  const fs::path weights = *staged / kWeightsFile;
  std::error_code ec;
  const auto size = fs::file_size(weights, ec);
  if (!ec) fs::resize_file(weights, size / 2, ec);
  if (ec) return FileError("cannot truncate", weights, ec);
  return Publish(*staged, dest);
}

absl::Status RemoveModelDirectory(const fs::path& dest) {
  auto aside = MakeStagingDirectory(dest);
  if (!aside.ok()) return aside.status();
  std::error_code ec;
  fs::remove(*aside, ec);
  fs::rename(dest, *aside, ec);
  if (ec) return FileError("cannot move away", dest, ec);
  fs::remove_all(*aside, ec);
  if (ec) return FileError("cannot delete", *aside, ec);
  return absl::OkStatus();
}

}  // namespace transerve::testing
