// The encoder stack over a batch of packed sequences (no padding rows are computed).
#pragma once

#include <cstdint>
#include <span>

#include "model/layers/transformer_weights.h"
#include "model/layers/workspace.h"

namespace transerve {

// ids holds all source tokens back to back; sequence b is ids[offsets[b] .. offsets[b+1]).
// Writes the last layer's output, [total tokens, D], to *out.
void EncodePacked(const TransformerConfig& config, const TransformerWeights& weights,
                  std::span<const int32_t> ids, std::span<const int32_t> offsets,
                  Workspace* workspace, Tensor* out);

}  // namespace transerve
