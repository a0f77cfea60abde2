// Token embedding gather with scale plus sinusoidal positions, on the CPU.
#include <stdexcept>
#include <string>

#include "model/ops/cpu/cpu_ops.h"

namespace transerve::ops::cpu {

namespace {

void CheckLookup(int32_t id, int64_t vocab, int32_t pos, int64_t positions) {
  if (id < 0 || id >= vocab) {
    throw std::out_of_range("EmbedTokens: token id " + std::to_string(id) + " outside [0, " +
                            std::to_string(vocab) + ")");
  }
  if (pos < 0 || pos >= positions) {
    throw std::out_of_range("EmbedTokens: position " + std::to_string(pos) + " outside [0, " +
                            std::to_string(positions) + ")");
  }
}

}  // namespace

void EmbedTokens(const Tensor& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out) {
  const int64_t d = table.dim(1);
  const int64_t rows = static_cast<int64_t>(ids.size());
  out->Resize({rows, d});
  for (int64_t r = 0; r < rows; ++r) {
    CheckLookup(ids[r], table.dim(0), positions[r], position_table.dim(0));
    const float* e = table.f32() + ids[r] * d;
    const float* p = position_table.f32() + positions[r] * d;
    float* o = out->f32() + r * d;
    for (int64_t j = 0; j < d; ++j) o[j] = e[j] * scale + p[j];
  }
}

void EmbedTokens(const PackedMatrix& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out) {
  const int64_t d = table.cols;
  const int64_t rows = static_cast<int64_t>(ids.size());
  out->Resize({rows, d});
  for (int64_t r = 0; r < rows; ++r) {
    CheckLookup(ids[r], table.rows, positions[r], position_table.dim(0));
    float* o = out->f32() + r * d;
    cpu::UnpackRow(table, ids[r], o);
    const float* p = position_table.f32() + positions[r] * d;
    for (int64_t j = 0; j < d; ++j) o[j] = o[j] * scale + p[j];
  }
}

}  // namespace transerve::ops::cpu
