// The host side of the CUDA primitives: arguments prepared as the plugin's ABI takes them
// (model/ops/cuda/plugin_abi.h), one call, its failure turned into an exception.
#include "model/ops/cuda_ops.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/core/half.h"
#include "model/ops/cuda_plugin.h"

namespace transerve::ops::cuda_ops {
namespace {

// The CUDA plugin's table for an op on a device tensor; throws when there is none.
const TranserveCudaApi& RequireCuda(const char* op) {
  const TranserveCudaApi* api = CudaApi();
  if (api == nullptr) {
    throw std::logic_error(std::string(op) + ": a CUDA tensor but no usable CUDA backend (" +
                           ProbeCuda().detail + ")");
  }
  return *api;
}

// Turns a failed plugin call into an exception: OutOfMemoryError when the device ran out of
// memory (less work at once may fit), std::runtime_error otherwise.
void CheckCuda(int result, const TranserveCudaApi& api, const char* op) {
  if (result == 0) return;
  const std::string message = std::string(op) + ": " + api.last_error();
  switch (api.last_error_kind()) {
    case TRANSERVE_CUDA_ERROR_OUT_OF_MEMORY:
      throw OutOfMemoryError(message);
    case TRANSERVE_CUDA_ERROR_DEVICE_LOST:
      throw DeviceLostError(message);
    default:
      throw std::runtime_error(message);
  }
}

// Makes *out a tensor of `shape` on the GPU, reusing its storage when it already lives there.
void PrepareOutput(Tensor* out, std::vector<int64_t> shape) {
  if (out->device() != Device::kCuda) *out = Tensor(shape, DType::kFloat32, Device::kCuda);
  out->Resize(std::move(shape));
}

// The segment lists of one attention call on the GPU, built on the host exactly as the CPU
// backend walks them (one list per query row), then one kernel launch.
struct CudaAttention {
  std::vector<TranserveCudaKvSegment> segments;
  std::vector<int32_t> row_segments{0};
  void Add(const float* keys, const float* values, int64_t stride, int32_t count) {
    segments.push_back({keys, values, stride, count});
  }
  void EndRow() { row_segments.push_back(static_cast<int32_t>(segments.size())); }
  void Run(const char* op, const float* q, int64_t q_stride, int heads, int64_t d, Tensor* out,
           float* head_mean = nullptr, int64_t mean_stride = 0, int mean_heads = 0) {
    const TranserveCudaApi& api = RequireCuda(op);
    const int32_t rows = static_cast<int32_t>(row_segments.size()) - 1;
    PrepareOutput(out, {rows, d});
    const int head_dim = static_cast<int>(d / heads);
    CheckCuda(
        api.attend_f32(CurrentCudaStream(), q, q_stride, rows, heads, head_dim, segments.data(),
                       row_segments.data(), 1.0f / std::sqrt(static_cast<float>(head_dim)),
                       out->f32(), d, head_mean, mean_stride, mean_heads),
        api, op);
  }
};

}  // namespace

TranserveCudaStream* CreateStream() {
  const TranserveCudaApi& api = RequireCuda("DeviceStream");
  TranserveCudaStream* stream = api.create_stream();
  if (stream == nullptr) {
    throw std::runtime_error(std::string("cannot create a CUDA stream: ") + api.last_error());
  }
  return stream;
}

// Only streams CreateStream made come here, so the plugin is loaded.
void DestroyStream(TranserveCudaStream* stream) { CudaApi()->destroy_stream(stream); }

void SynchronizeStream(TranserveCudaStream* stream) {
  const TranserveCudaApi& api = RequireCuda("DeviceStream::Synchronize");
  CheckCuda(api.synchronize(stream), api, "DeviceStream::Synchronize");
}

TranserveCudaStream* CurrentStream() { return CurrentCudaStream(); }
void SetCurrentStream(TranserveCudaStream* stream) { SetCurrentCudaStream(stream); }

void Linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation activation,
            Tensor* y) {
  const TranserveCudaApi& api = RequireCuda("Linear");
  const int64_t m = x.dim(0), k = x.dim(1), n = weight.dim(0);
  PrepareOutput(y, {m, n});
  const float* b = bias.empty() ? nullptr : bias.f32();
  const int act = static_cast<int>(activation);
  if (weight.dtype() == DType::kFloat16) {
    if (weight.dim(1) != k + TRANSERVE_CUDA_HALF_BIAS_COLUMNS || b != nullptr) {
      throw std::logic_error("Linear: a float16 weight comes from ToFloat16Linear, bias inside");
    }
    CheckCuda(
        api.linear_f16w(CurrentCudaStream(), x.f32(), m, k, weight.data<void>(), n, act, y->f32()),
        api, "Linear");
    return;
  }
  CheckCuda(api.linear_f32(CurrentCudaStream(), x.f32(), m, k, weight.f32(), n, b, act, y->f32()),
            api, "Linear");
}

Tensor CopyTo(const Tensor& t, Device device) {
  const TranserveCudaApi& api = RequireCuda("CopyTo");
  Tensor out(t.shape(), t.dtype(), device);
  const size_t bytes = static_cast<size_t>(t.numel()) * DTypeSize(t.dtype());
  const int direction =
      device == Device::kCuda ? TRANSERVE_CUDA_HOST_TO_DEVICE : TRANSERVE_CUDA_DEVICE_TO_HOST;
  CheckCuda(api.copy(CurrentCudaStream(), out.data<char>(), t.data<char>(), bytes, direction), api,
            "CopyTo");
  return out;
}

Tensor ToFloat16Linear(const Tensor& weight, const Tensor& bias) {
  if (weight.device() != Device::kCpu || weight.dtype() != DType::kFloat32 ||
      (!bias.empty() && (bias.device() != Device::kCpu || bias.numel() != weight.dim(0)))) {
    throw std::logic_error("ToFloat16Linear: needs a float32 weight and bias on the host");
  }
  const int64_t n = weight.dim(0), k = weight.dim(1);
  const int64_t width = k + TRANSERVE_CUDA_HALF_BIAS_COLUMNS;
  Tensor half({n, width}, DType::kFloat16, Device::kCpu);
  uint16_t* out = half.data<uint16_t>();
  const float* w = weight.f32();
  for (int64_t r = 0; r < n; ++r) {
    uint16_t* row = out + r * width;
    for (int64_t c = 0; c < k; ++c) row[c] = FloatToHalf(w[r * k + c]);
    // The bias as the sum of two halves: about 22 bits of it, close to the float32 bias.
    const float b = bias.empty() ? 0.0f : bias.f32()[r];
    row[k] = FloatToHalf(b);
    row[k + 1] = FloatToHalf(b - HalfToFloat(row[k]));
    for (int64_t c = k + 2; c < width; ++c) row[c] = FloatToHalf(0.0f);
  }
  return CopyTo(half, Device::kCuda);
}

void TopK(const Tensor& logits, std::span<const int32_t> k, std::span<const uint8_t> ban_eos,
          int32_t pad, int32_t eos, std::vector<std::vector<TokenScore>>* candidates) {
  const TranserveCudaApi& api = RequireCuda("TopKCandidates");
  const int32_t rows = static_cast<int32_t>(k.size());
  const int32_t max_k = std::max(1, rows == 0 ? 1 : *std::max_element(k.begin(), k.end()));
  // The kernel writes rows x max_k results; only these cross back to the host.
  std::vector<int32_t> tokens(static_cast<size_t>(rows) * max_k);
  std::vector<float> log_probs(tokens.size());
  CheckCuda(
      api.top_k_f32(CurrentCudaStream(), logits.f32(), rows, static_cast<int32_t>(logits.dim(1)),
                    k.data(), ban_eos.data(), pad, eos, max_k, tokens.data(), log_probs.data()),
      api, "TopKCandidates");
  for (int32_t r = 0; r < rows; ++r) {
    std::vector<TokenScore>& out = (*candidates)[r];
    out.clear();
    for (int32_t i = 0; i < k[r]; ++i)
      out.push_back({tokens[r * max_k + i], log_probs[r * max_k + i]});
  }
}

void AddLayerNorm(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                  float eps, Tensor* out) {
  const TranserveCudaApi& api = RequireCuda("AddLayerNorm");
  const int64_t rows = x.dim(0), d = x.dim(1);
  if (out != &x && out != &residual) PrepareOutput(out, {rows, d});
  CheckCuda(api.add_layer_norm_f32(CurrentCudaStream(), x.f32(), residual.f32(), gamma.f32(),
                                   beta.f32(), rows, d, eps, nullptr, out->f32()),
            api, "AddLayerNorm");
}

void LayerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor* out) {
  const TranserveCudaApi& api = RequireCuda("LayerNorm");
  const int64_t rows = x.dim(0), d = x.dim(1);
  if (out != &x) PrepareOutput(out, {rows, d});
  CheckCuda(api.add_layer_norm_f32(CurrentCudaStream(), x.f32(), nullptr, gamma.f32(), beta.f32(),
                                   rows, d, eps, nullptr, out->f32()),
            api, "LayerNorm");
}

void AddToLayerNorm(Tensor* x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor* out) {
  const TranserveCudaApi& api = RequireCuda("AddToLayerNorm");
  const int64_t rows = x->dim(0), d = x->dim(1);
  if (out != x && out != &residual) PrepareOutput(out, {rows, d});
  CheckCuda(api.add_layer_norm_f32(CurrentCudaStream(), x->f32(), residual.f32(), gamma.f32(),
                                   beta.f32(), rows, d, eps, x->f32(), out->f32()),
            api, "AddToLayerNorm");
}

void EmbedTokens(const Tensor& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out) {
  const TranserveCudaApi& api = RequireCuda("EmbedTokens");
  const int64_t rows = static_cast<int64_t>(ids.size()), d = table.dim(1);
  for (size_t r = 0; r < ids.size(); ++r) {
    if (ids[r] < 0 || ids[r] >= table.dim(0) || positions[r] < 0 ||
        positions[r] >= position_table.dim(0)) {
      throw std::out_of_range("EmbedTokens: token id or position out of range");
    }
  }
  PrepareOutput(out, {rows, d});
  CheckCuda(api.embed_f32(CurrentCudaStream(), table.f32(), ids.data(), positions.data(), rows, d,
                          scale, position_table.f32(), out->f32()),
            api, "EmbedTokens");
}

void PackedSelfAttention(const Tensor& qkv, std::span<const int32_t> offsets, int heads,
                         Tensor* out) {
  const int64_t d = qkv.dim(1) / 3;
  const float* base = qkv.f32();
  CudaAttention attention;
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    for (int32_t t = offsets[b]; t < offsets[b + 1]; ++t) {
      attention.Add(base + offsets[b] * 3 * d + d, base + offsets[b] * 3 * d + 2 * d, 3 * d,
                    offsets[b + 1] - offsets[b]);
      attention.EndRow();
    }
  }
  attention.Run("PackedSelfAttention", base, 3 * d, heads, d, out);
}

bool CachedSelfAttention(const Tensor& qkv, int layer, std::span<SequenceKvCache* const> caches,
                         int heads, Tensor* out) {
  const TranserveCudaApi& api = RequireCuda("CachedSelfAttention");
  const int64_t d = qkv.dim(1) / 3;
  const float* base = qkv.f32();
  std::vector<float*> key_rows(caches.size()), value_rows(caches.size());
  if (!PrepareAppends(caches, layer, key_rows.data(), value_rows.data())) return false;
  CheckCuda(api.append_kv_f32(CurrentCudaStream(), base, static_cast<int32_t>(caches.size()), d,
                              key_rows.data(), value_rows.data()),
            api, "CachedSelfAttention: append");
  CudaAttention attention;
  for (SequenceKvCache* cache : caches) {
    int32_t remaining = cache->length() + 1;  // the step is committed after all layers
    for (int32_t block : cache->blocks(layer)) {
      const int32_t count = std::min(remaining, kKvBlockPositions);
      attention.Add(cache->pool().keys(block), cache->pool().values(block), d, count);
      remaining -= count;
      if (remaining == 0) break;
    }
    attention.EndRow();
  }
  attention.Run("CachedSelfAttention", base, 3 * d, heads, d, out);
  return true;
}

void CrossAttention(const Tensor& q, int layer, std::span<const CrossKv* const> sources, int heads,
                    Tensor* out, Tensor* head_mean_weights, int mean_heads) {
  const int64_t d = q.dim(1);
  CudaAttention attention;
  int64_t longest = 0;
  for (const CrossKv* source : sources) {
    const float* keys = source->kv.f32() + layer * 2 * d;
    attention.Add(keys, keys + d, source->kv.dim(1), source->length());
    attention.EndRow();
    longest = std::max<int64_t>(longest, source->length());
  }
  float* mean = nullptr;
  if (head_mean_weights != nullptr) {
    PrepareOutput(head_mean_weights, {static_cast<int64_t>(sources.size()), longest});
    mean = head_mean_weights->f32();
  }
  attention.Run("CrossAttention", q.f32(), d, heads, d, out, mean, longest, mean_heads);
}

void CopyKvBlockPrefixes(KvBlockPool& pool, std::span<const KvBlockCopy> copies) {
  const TranserveCudaApi& api = RequireCuda("CopyKvBlockPrefixes");
  std::vector<const float*> from(copies.size());
  std::vector<float*> to(copies.size());
  std::vector<int64_t> floats(copies.size());
  for (size_t i = 0; i < copies.size(); ++i) {
    from[i] = pool.keys(copies[i].from);
    to[i] = pool.keys(copies[i].to);
    floats[i] = copies[i].positions * pool.d_model();
  }
  CheckCuda(api.copy_kv_prefixes_f32(CurrentCudaStream(), static_cast<int32_t>(copies.size()),
                                     from.data(), to.data(), floats.data(), pool.block_floats()),
            api, "CopyKvBlockPrefixes");
}

}  // namespace transerve::ops::cuda_ops
