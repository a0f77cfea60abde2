#include "model/translator/model_directory.h"

#include <filesystem>
#include <system_error>

#include "model/loader/safetensors.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

bool HoldsModel(const std::string& dir) {
  const fs::path d(dir);
  return IsFile(d / "config.json") &&
         (IsFile(d / "model.safetensors") || IsFile(d / "pytorch_model.bin"));
}

absl::StatusOr<MarianConfig> ReadModelConfig(const std::string& dir) {
  return LoadMarianConfig((fs::path(dir) / "config.json").string());
}

int64_t EstimateWeightBytes(const std::string& dir) {
  const fs::path d(dir);
  if (IsFile(d / "model.safetensors")) {
    auto file = SafetensorsFile::Open((d / "model.safetensors").string());
    if (!file.ok()) return 0;
    int64_t elements = 0;
    for (const std::string& name : file->Names()) {
      int64_t n = 1;
      for (int64_t s : file->Find(name)->shape) n *= s;
      elements += n;
    }
    return elements * static_cast<int64_t>(sizeof(float));
  }
  std::error_code ec;
  const auto size = fs::file_size(d / "pytorch_model.bin", ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

}  // namespace transerve
