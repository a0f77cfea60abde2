#include "model/translator/model_directory.h"

#include <filesystem>
#include <set>
#include <system_error>
#include <vector>

#include "model/loader/marian_loader.h"

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
  auto file = OpenWeights(dir);
  if (!file.ok()) return 0;
  // A pickle may store the tied tables under several names sharing one storage: each shape of
  // those is counted once.
  static const std::set<std::string> kTiedNames = {
      "model.shared.weight", "model.encoder.embed_tokens.weight",
      "model.decoder.embed_tokens.weight", "lm_head.weight"};
  std::set<std::vector<int64_t>> tied_shapes;
  int64_t elements = 0;
  for (const std::string& name : (*file)->Names()) {
    const CheckpointTensorInfo* info = (*file)->Find(name);
    if (kTiedNames.contains(name) && !tied_shapes.insert(info->shape).second) continue;
    int64_t n = 1;
    for (int64_t s : info->shape) n *= s;
    elements += n;
  }
  return elements * static_cast<int64_t>(sizeof(float));
}

}  // namespace transerve
