// oneDNN's matmul in one weight format, for the kernel benchmark (gemm_bench.cc): the library
// the engine's own packed kernels were measured against. Built only where Debian's libdnnl-dev
// is installed; elsewhere Create returns null and the benchmark leaves the columns out.
#pragma once

#include <memory>
#include <string>

#include "model/core/tensor.h"
#include "model/ops/ops.h"

namespace transerve::bench {

class OneDnnMatmul {
 public:
  // y[rows, N] = x[rows, K] · weightᵀ + bias, weight [N, K] reordered once into the layout the
  // primitive chose. int8: weights per output feature and the source per call (one scale for
  // the whole source: oneDNN 2.6's matmul takes no per-row source scale), int32 sums, float out.
  static std::unique_ptr<OneDnnMatmul> Create(const Tensor& weight, const Tensor& bias,
                                              ops::WeightFormat format, int64_t rows);
  virtual ~OneDnnMatmul() = default;
  // Converts x to the format (timed with the product, as the engine's own conversion is).
  virtual void Run(const Tensor& x, Tensor* y) = 0;
};

// "oneDNN <version>" or why it is not there.
std::string OneDnnDescription();

}  // namespace transerve::bench
