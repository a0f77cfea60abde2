// The CUDA side of the primitives of model/ops/ops.h, on the host: what each one prepares for
// its call into the plugin (segment lists, pointer arrays, float16 packing), the call on the
// calling thread's current stream, and a failed call turned into an exception
// (OutOfMemoryError, DeviceLostError, else std::runtime_error). ops.cc calls these for tensors
// on Device::kCuda; without a usable backend each throws std::logic_error saying why.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/ops/ops.h"

namespace transerve::ops::cuda_ops {

// Streams (ops::DeviceStream, ops::StreamScope).
TranserveCudaStream* CreateStream();  // throws std::runtime_error when it cannot
void DestroyStream(TranserveCudaStream* stream);
void SynchronizeStream(TranserveCudaStream* stream);
TranserveCudaStream* CurrentStream();
void SetCurrentStream(TranserveCudaStream* stream);

void Linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation activation,
            Tensor* y);
// Host to device or device to host, whichever way `device` says.
Tensor CopyTo(const Tensor& t, Device device);
Tensor ToFloat16Linear(const Tensor& weight, const Tensor& bias);
// As cpu::TopK (cpu/cpu_ops.h).
void TopK(const Tensor& logits, std::span<const int32_t> k, std::span<const uint8_t> ban_eos,
          int32_t pad, int32_t eos, std::vector<std::vector<TokenScore>>* candidates);
void AddLayerNorm(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                  float eps, Tensor* out);
void LayerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor* out);
void AddToLayerNorm(Tensor* x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor* out);
void EmbedTokens(const Tensor& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out);
void PackedSelfAttention(const Tensor& qkv, std::span<const int32_t> offsets, int heads,
                         Tensor* out);
bool CachedSelfAttention(const Tensor& qkv, int layer, std::span<SequenceKvCache* const> caches,
                         int heads, Tensor* out);
void CrossAttention(const Tensor& q, int layer, std::span<const CrossKv* const> sources, int heads,
                    Tensor* out, Tensor* head_mean_weights, int mean_heads);
void CopyKvBlockPrefixes(KvBlockPool& pool, std::span<const KvBlockCopy> copies);

}  // namespace transerve::ops::cuda_ops
