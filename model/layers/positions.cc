#include <cmath>
#include <vector>

#include "model/layers/transformer_weights.h"

namespace transerve {

Tensor SinusoidalPositions(int64_t rows, int64_t dim) {
  Tensor table({rows, dim});
  const int64_t sin_columns = (dim + 1) / 2;
  float* out = table.f32();
  for (int64_t pos = 0; pos < rows; ++pos) {
    for (int64_t j = 0; j < dim; ++j) {
      // Column j < sin_columns holds sin(pos / 10000^(2j/D)); the rest hold the cosines of the
      // same frequencies (HF's table is built from numpy float64 this way).
      const int64_t k = j < sin_columns ? j : j - sin_columns;
      const double angle =
          static_cast<double>(pos) / std::pow(10000.0, 2.0 * static_cast<double>(k) / dim);
      out[pos * dim + j] = static_cast<float>(j < sin_columns ? std::sin(angle) : std::cos(angle));
    }
  }
  return table;
}

Tensor M2mSinusoidalPositions(int64_t first, int64_t rows, int64_t dim) {
  Tensor table({rows, dim});
  const int64_t half = dim / 2;
  // The reference's float32 arithmetic: the step in double, each product and function in float.
  const float step = static_cast<float>(std::log(10000.0) / static_cast<double>(half - 1));
  std::vector<float> frequency(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) frequency[j] = std::exp(static_cast<float>(j) * -step);
  float* out = table.f32();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t pos = first + r;
    float* row = out + r * dim;
    row[dim - 1] = 0.0f;  // the odd column, if any
    for (int64_t j = 0; j < half; ++j) {
      const float angle = static_cast<float>(pos) * frequency[j];
      row[j] = std::sin(angle);
      row[half + j] = std::cos(angle);
    }
  }
  return table;
}

}  // namespace transerve
