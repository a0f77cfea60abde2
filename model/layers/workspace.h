// Scratch tensors reused from one forward call to the next, so the decode loop does not
// allocate. One workspace per thread running the model.
#pragma once

#include <cstdint>
#include <vector>

#include "model/core/tensor.h"

namespace transerve {

struct Workspace {
  Tensor hidden;      // [rows, D] residual stream
  Tensor qkv;         // [rows, 3D]
  Tensor query;       // [rows, D]
  Tensor context;     // [rows, D] attention output before out_proj
  Tensor projected;   // [rows, D] sub-layer output before the residual
  Tensor normed;      // [rows, D] a pre-norm sublayer's normalised input
  Tensor ffn_hidden;  // [rows, F]
  std::vector<int32_t> ids;
  std::vector<int32_t> positions;
};

}  // namespace transerve
