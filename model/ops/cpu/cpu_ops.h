// CPU implementations of the primitives declared in model/ops/ops.h (same signatures).
#pragma once

#include <string>
#include <vector>

#include "model/ops/ops.h"

namespace transerve::ops::cpu {

void SetNumThreads(int threads);
int GetNumThreads();
std::string BlasDescription();
void Gemm(const Tensor& a, const Tensor& b, bool trans_b, float alpha, float beta, Tensor* c);
PackedMatrix PackMatrix(const Tensor& weight, WeightFormat format);
void UnpackRow(const PackedMatrix& packed, int64_t n, float* out);
PackedMatrix GatherRows(const PackedMatrix& packed, std::span<const int32_t> rows);
// y = activation(x · weightᵀ + bias) with the packed weight, in its format; y -> [M, N].
void PackedProduct(const Tensor& x, const PackedMatrix& weight, const Tensor& bias,
                   Activation activation, Tensor* y);
// y -> [rows, N] with every row a copy of `row` ([N]).
void BroadcastRows(const Tensor& row, int64_t rows, Tensor* y);
// y = activation(y), element-wise.
void Activate(Activation activation, Tensor* y);
void ActivateSpan(Activation activation, float* y, int64_t n);
void AddLayerNorm(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                  float eps, Tensor* out);
void LayerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor* out);
void AddToLayerNorm(Tensor* x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor* out);
void EmbedTokens(const Tensor& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out);
void EmbedTokens(const PackedMatrix& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out);
void PackedSelfAttention(const Tensor& qkv, std::span<const int32_t> offsets, int heads,
                         Tensor* out);
bool CachedSelfAttention(const Tensor& qkv, int layer, std::span<SequenceKvCache* const> caches,
                         int heads, Tensor* out);
void CrossAttention(const Tensor& q, int layer, std::span<const CrossKv* const> sources, int heads,
                    Tensor* out, Tensor* head_mean_weights, int mean_heads);
void CopyKvBlockPrefixes(KvBlockPool& pool, std::span<const KvBlockCopy> copies);
// ops::TopKCandidates once its rules are checked and forced rows set aside: row r's k[r] best
// tokens (none for 0), every token allowed but pad and, where ban_eos[r], eos. `candidates`
// holds one vector per row.
void TopK(const Tensor& logits, std::span<const int32_t> k, std::span<const uint8_t> ban_eos,
          int32_t pad, int32_t eos, std::vector<std::vector<TokenScore>>* candidates);
// The same for the logits x · weightᵀ + bias with a packed weight, ranked chunk by chunk as
// they are computed, never stored whole (packed_top_k_cpu.cc); the same bits as TopK over
// PackedProduct's logits.
void PackedProductTopK(const Tensor& x, const PackedMatrix& weight, const Tensor& bias,
                       std::span<const int32_t> k, std::span<const uint8_t> ban_eos, int32_t pad,
                       int32_t eos, std::vector<std::vector<TokenScore>>* candidates);

}  // namespace transerve::ops::cpu
