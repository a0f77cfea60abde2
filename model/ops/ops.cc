// Dispatch of the neutral primitives to their device implementation.
#include "model/ops/ops.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "model/ops/cpu/cpu_ops.h"
#include "model/ops/cuda_plugin.h"

namespace transerve::ops {
namespace {

// The CUDA backend (docs/architecture.md) plugs in here; until it exists every tensor is on the
// CPU and anything else is a programming error.
// The CUDA plugin's table for an op on a device tensor; throws when there is none.
const TranserveCudaApi& RequireCuda(const char* op) {
  const TranserveCudaApi* api = CudaApi();
  if (api == nullptr) {
    throw std::logic_error(std::string(op) + ": a CUDA tensor but no usable CUDA backend (" +
                           ProbeCuda().detail + ")");
  }
  return *api;
}

void CheckCuda(int result, const TranserveCudaApi& api, const char* op) {
  if (result != 0) throw std::runtime_error(std::string(op) + ": " + api.last_error());
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
    CheckCuda(api.linear_f32(x.f32(), m, k, weight.f32(), n, bias.empty() ? nullptr : bias.f32(),
                             static_cast<int>(activation), y->f32()),
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
  CheckCuda(api.copy(out.data<char>(), t.data<char>(), bytes, direction), api, "CopyTo");
  return out;
}

void AddLayerNorm(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                  float eps, Tensor* out) {
  if (x.device() == Device::kCuda) {
    const TranserveCudaApi& api = RequireCuda("AddLayerNorm");
    const int64_t rows = x.dim(0), d = x.dim(1);
    if (out != &x && out != &residual) PrepareOutput(out, {rows, d}, Device::kCuda);
    CheckCuda(api.add_layer_norm_f32(x.f32(), residual.f32(), gamma.f32(), beta.f32(), rows, d, eps,
                                     out->f32()),
              api, "AddLayerNorm");
    return;
  }
  RequireCpu(x.device(), "AddLayerNorm");
  cpu::AddLayerNorm(x, residual, gamma, beta, eps, out);
}

void EmbedTokens(const Tensor& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out) {
  RequireCpu(table.device(), "EmbedTokens");
  cpu::EmbedTokens(table, ids, positions, scale, position_table, out);
}

void PackedSelfAttention(const Tensor& qkv, std::span<const int32_t> offsets, int heads,
                         Tensor* out) {
  RequireCpu(qkv.device(), "PackedSelfAttention");
  cpu::PackedSelfAttention(qkv, offsets, heads, out);
}

bool CachedSelfAttention(const Tensor& qkv, int layer, std::span<SequenceKvCache* const> caches,
                         int heads, Tensor* out) {
  RequireCpu(qkv.device(), "CachedSelfAttention");
  return cpu::CachedSelfAttention(qkv, layer, caches, heads, out);
}

void CrossAttention(const Tensor& q, int layer, std::span<const CrossKv* const> sources, int heads,
                    Tensor* out, Tensor* head_mean_weights) {
  RequireCpu(q.device(), "CrossAttention");
  cpu::CrossAttention(q, layer, sources, heads, out, head_mean_weights);
}

void CopyKvBlockPrefix(KvBlockPool& pool, int32_t from, int32_t to, int32_t positions) {
  RequireCpu(pool.device(), "CopyKvBlockPrefix");
  cpu::CopyKvBlockPrefix(pool, from, to, positions);
}

}  // namespace transerve::ops
