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

// The weights' bytes once loaded as float32, from the checkpoint's tensor shapes (tied tables
// once), without reading the tensors; 0 when the checkpoint cannot be opened. An estimate: the
// engine's packing and fused projections change it a little.
int64_t EstimateWeightBytes(const std::string& dir);

}  // namespace transerve
