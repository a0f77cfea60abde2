// What a model directory holds, read without loading it: whether it is a model at all, its
// config.json, and how many bytes its weights will take once loaded. For whoever must decide
// about a model before paying for its load (the server's model repository).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "model/loader/model_config.h"

namespace transerve {

// config.json and a checkpoint the loader reads (model.safetensors or pytorch_model.bin).
bool HoldsModel(const std::string& dir);

// config.json, as the loader reads it.
absl::StatusOr<MarianConfig> ReadModelConfig(const std::string& dir);

// The weights' bytes once loaded as float32, from the checkpoint's header (model.safetensors's
// element counts), else pytorch_model.bin's size (float32 storage assumed); 0 when it cannot
// tell.
int64_t EstimateWeightBytes(const std::string& dir);

}  // namespace transerve
