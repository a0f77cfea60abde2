// Loads a Hugging Face Marian (OPUS-MT) checkpoint directory into the engine's Transformer:
// config.json, optional generation_config.json and model.safetensors or, without it,
// pytorch_model.bin (F32/F16/BF16, upcast to F32), with the name-resolution rules of
// docs/marian-format.md section 3.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "model/layers/transformer_weights.h"
#include "model/loader/checkpoint_file.h"
#include "model/loader/model_config.h"

namespace transerve {

struct MarianModel {
  std::string model_dir;
  MarianConfig config;
  GenerationDefaults generation;
  TransformerConfig transformer;
  TransformerWeights weights;
};

// Every problem (missing file, missing or mis-shaped tensor, unsupported dtype or setting,
// truncated file) is an error that names the file and the tensor; nothing here crashes on input.
// `pack`: pack the weights for the CPU kernels in that format (PackWeights), each part as it is
// read; nullopt keeps them row-major in float32 (a GPU model uploads them so).
// The directory's weights file: model.safetensors when present, else pytorch_model.bin (read
// without running its pickle).
absl::StatusOr<std::unique_ptr<CheckpointFile>> OpenWeights(const std::string& model_dir);

absl::StatusOr<std::unique_ptr<MarianModel>> LoadMarianModel(
    const std::string& model_dir,
    std::optional<ops::WeightFormat> pack = ops::WeightFormat::kFloat32);

}  // namespace transerve
