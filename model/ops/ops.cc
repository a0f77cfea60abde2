// Dispatch of the neutral primitives to their device implementation.
#include "model/ops/ops.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/core/half.h"
#include "model/ops/cpu/cpu_ops.h"
#include "model/ops/cuda_plugin.h"

namespace transerve::ops {
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

// Makes *out a tensor of `shape` on `device`, reusing its storage when it already lives there.
void PrepareOutput(Tensor* out, std::vector<int64_t> shape, Device device) {
  if (out->device() != device) *out = Tensor(shape, DType::kFloat32, device);
  out->Resize(std::move(shape));
}

void RequireCpu(Device device, const char* op) {
  if (device != Device::kCpu) {
    throw std::logic_error(std::string(op) + ": no implementation for device " +
                           std::string(DeviceName(device)));
  }
}

}  // namespace

DeviceStream::DeviceStream(Device device) {
  if (device == Device::kCpu) return;
  const TranserveCudaApi& api = RequireCuda("DeviceStream");
  handle_ = api.create_stream();
  if (handle_ == nullptr) {
    throw std::runtime_error(std::string("cannot create a CUDA stream: ") + api.last_error());
  }
}

DeviceStream::~DeviceStream() {
  if (handle_ != nullptr) CudaApi()->destroy_stream(handle_);
}

DeviceStream::DeviceStream(DeviceStream&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

DeviceStream& DeviceStream::operator=(DeviceStream&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) CudaApi()->destroy_stream(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void DeviceStream::Synchronize() const {
  if (handle_ == nullptr) return;
  const TranserveCudaApi& api = RequireCuda("DeviceStream::Synchronize");
  CheckCuda(api.synchronize(handle_), api, "DeviceStream::Synchronize");
}

StreamScope::StreamScope(const DeviceStream& stream) : previous_(CurrentCudaStream()) {
  SetCurrentCudaStream(stream.handle_);
}

StreamScope::~StreamScope() { SetCurrentCudaStream(previous_); }

void SetNumThreads(int threads) { cpu::SetNumThreads(threads); }
int GetNumThreads() { return cpu::GetNumThreads(); }
std::string BlasDescription() { return cpu::BlasDescription(); }

namespace {
bool gemm_counters_enabled = false;
GemmCounters gemm_counters;

void Record(std::chrono::steady_clock::time_point start, int64_t m, int64_t k, int64_t n) {
  gemm_counters.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  gemm_counters.flops += 2.0 * static_cast<double>(m) * k * n;
  ++gemm_counters.calls;
}
}  // namespace

void EnableGemmCounters(bool enabled) { gemm_counters_enabled = enabled; }
void ResetGemmCounters() { gemm_counters = {}; }
GemmCounters ReadGemmCounters() { return gemm_counters; }

void Gemm(const Tensor& a, const Tensor& b, bool trans_b, float alpha, float beta, Tensor* c) {
  RequireCpu(a.device(), "Gemm");
  if (!gemm_counters_enabled) {
    cpu::Gemm(a, b, trans_b, alpha, beta, c);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  cpu::Gemm(a, b, trans_b, alpha, beta, c);
  Record(start, a.dim(0), a.dim(1), c->dim(1));
}

PackedMatrix PackMatrix(const Tensor& weight) {
  RequireCpu(weight.device(), "PackMatrix");
  return cpu::PackMatrix(weight);
}

void Linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation activation,
            Tensor* y, const PackedMatrix* packed) {
  if (x.device() == Device::kCuda) {
    const TranserveCudaApi& api = RequireCuda("Linear");
    const int64_t m = x.dim(0), k = x.dim(1), n = weight.dim(0);
    PrepareOutput(y, {m, n}, Device::kCuda);
    const float* b = bias.empty() ? nullptr : bias.f32();
    const int act = static_cast<int>(activation);
    if (weight.dtype() == DType::kFloat16) {
      if (weight.dim(1) != k + TRANSERVE_CUDA_HALF_BIAS_COLUMNS || b != nullptr) {
        throw std::logic_error("Linear: a float16 weight comes from ToFloat16Linear, bias inside");
      }
      CheckCuda(api.linear_f16w(CurrentCudaStream(), x.f32(), m, k, weight.data<void>(), n, act,
                                y->f32()),
                api, "Linear");
      return;
    }
    CheckCuda(api.linear_f32(CurrentCudaStream(), x.f32(), m, k, weight.f32(), n, b, act, y->f32()),
              api, "Linear");
    return;
  }
  RequireCpu(x.device(), "Linear");
  if (packed != nullptr && !packed->empty()) {
    const auto start = std::chrono::steady_clock::now();
    cpu::PackedProduct(x, *packed, bias, y);
    if (gemm_counters_enabled) Record(start, x.dim(0), x.dim(1), packed->rows);
  } else if (bias.empty()) {
    Gemm(x, weight, /*trans_b=*/true, 1.0f, 0.0f, y);
  } else {
    // The GEMM accumulates onto rows pre-filled with the bias: one pass less over y.
    cpu::BroadcastRows(bias, x.dim(0), y);
    Gemm(x, weight, /*trans_b=*/true, 1.0f, 1.0f, y);
  }
  if (activation != Activation::kIdentity) cpu::Activate(activation, y);
}

Tensor CopyTo(const Tensor& t, Device device) {
  if (t.device() == device) return t;
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

void TopKOnDevice(const Tensor& logits, std::span<const int32_t> k,
                  std::span<const uint8_t> ban_eos, int32_t pad, int32_t eos, int32_t max_k,
                  std::vector<int32_t>* tokens, std::vector<float>* log_probs) {
  const TranserveCudaApi& api = RequireCuda("TopKOnDevice");
  const int32_t rows = static_cast<int32_t>(logits.dim(0));
  tokens->resize(static_cast<size_t>(rows) * max_k);
  log_probs->resize(static_cast<size_t>(rows) * max_k);
  CheckCuda(
      api.top_k_f32(CurrentCudaStream(), logits.f32(), rows, static_cast<int32_t>(logits.dim(1)),
                    k.data(), ban_eos.data(), pad, eos, max_k, tokens->data(), log_probs->data()),
      api, "TopKOnDevice");
}

void AddLayerNorm(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                  float eps, Tensor* out) {
  if (x.device() == Device::kCuda) {
    const TranserveCudaApi& api = RequireCuda("AddLayerNorm");
    const int64_t rows = x.dim(0), d = x.dim(1);
    if (out != &x && out != &residual) PrepareOutput(out, {rows, d}, Device::kCuda);
    CheckCuda(api.add_layer_norm_f32(CurrentCudaStream(), x.f32(), residual.f32(), gamma.f32(),
                                     beta.f32(), rows, d, eps, out->f32()),
              api, "AddLayerNorm");
    return;
  }
  RequireCpu(x.device(), "AddLayerNorm");
  cpu::AddLayerNorm(x, residual, gamma, beta, eps, out);
}

void EmbedTokens(const Tensor& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out) {
  if (table.device() == Device::kCuda) {
    const TranserveCudaApi& api = RequireCuda("EmbedTokens");
    const int64_t rows = static_cast<int64_t>(ids.size()), d = table.dim(1);
    for (size_t r = 0; r < ids.size(); ++r) {
      if (ids[r] < 0 || ids[r] >= table.dim(0) || positions[r] < 0 ||
          positions[r] >= position_table.dim(0)) {
        throw std::out_of_range("EmbedTokens: token id or position out of range");
      }
    }
    PrepareOutput(out, {rows, d}, Device::kCuda);
    CheckCuda(api.embed_f32(CurrentCudaStream(), table.f32(), ids.data(), positions.data(), rows, d,
                            scale, position_table.f32(), out->f32()),
              api, "EmbedTokens");
    return;
  }
  RequireCpu(table.device(), "EmbedTokens");
  cpu::EmbedTokens(table, ids, positions, scale, position_table, out);
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
           float* head_mean = nullptr, int64_t mean_stride = 0) {
    const TranserveCudaApi& api = RequireCuda(op);
    const int32_t rows = static_cast<int32_t>(row_segments.size()) - 1;
    PrepareOutput(out, {rows, d}, Device::kCuda);
    const int head_dim = static_cast<int>(d / heads);
    CheckCuda(
        api.attend_f32(CurrentCudaStream(), q, q_stride, rows, heads, head_dim, segments.data(),
                       row_segments.data(), 1.0f / std::sqrt(static_cast<float>(head_dim)),
                       out->f32(), d, head_mean, mean_stride),
        api, op);
  }
};

void PackedSelfAttention(const Tensor& qkv, std::span<const int32_t> offsets, int heads,
                         Tensor* out) {
  if (qkv.device() == Device::kCuda) {
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
    return;
  }
  RequireCpu(qkv.device(), "PackedSelfAttention");
  cpu::PackedSelfAttention(qkv, offsets, heads, out);
}

bool CachedSelfAttention(const Tensor& qkv, int layer, std::span<SequenceKvCache* const> caches,
                         int heads, Tensor* out) {
  if (qkv.device() == Device::kCuda) {
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
  RequireCpu(qkv.device(), "CachedSelfAttention");
  return cpu::CachedSelfAttention(qkv, layer, caches, heads, out);
}

void CrossAttention(const Tensor& q, int layer, std::span<const CrossKv* const> sources, int heads,
                    Tensor* out, Tensor* head_mean_weights) {
  if (q.device() == Device::kCuda) {
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
      PrepareOutput(head_mean_weights, {static_cast<int64_t>(sources.size()), longest},
                    Device::kCuda);
      mean = head_mean_weights->f32();
    }
    attention.Run("CrossAttention", q.f32(), d, heads, d, out, mean, longest);
    return;
  }
  RequireCpu(q.device(), "CrossAttention");
  cpu::CrossAttention(q, layer, sources, heads, out, head_mean_weights);
}

void CopyKvBlockPrefixes(KvBlockPool& pool, std::span<const KvBlockCopy> copies) {
  if (pool.device() == Device::kCuda) {
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
    return;
  }
  RequireCpu(pool.device(), "CopyKvBlockPrefixes");
  cpu::CopyKvBlockPrefixes(pool, copies);
}

}  // namespace transerve::ops
