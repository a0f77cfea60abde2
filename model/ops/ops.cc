// Dispatch of the neutral primitives to their device implementation: cpu/ on the host,
// cuda_ops.h (the host side of the CUDA plugin) for tensors on the GPU.
#include "model/ops/ops.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/ops/cpu/cpu_isa.h"
#include "model/ops/cpu/cpu_ops.h"
#include "model/ops/cuda_ops.h"

namespace transerve::ops {
namespace {

void RequireCpu(Device device, const char* op) {
  if (device != Device::kCpu) {
    throw std::logic_error(std::string(op) + ": no implementation for device " +
                           std::string(DeviceName(device)));
  }
}

}  // namespace

DeviceStream::DeviceStream(Device device) {
  if (device == Device::kCpu) return;
  handle_ = cuda_ops::CreateStream();
}

DeviceStream::~DeviceStream() {
  if (handle_ != nullptr) cuda_ops::DestroyStream(handle_);
}

DeviceStream::DeviceStream(DeviceStream&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

DeviceStream& DeviceStream::operator=(DeviceStream&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) cuda_ops::DestroyStream(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void DeviceStream::Synchronize() const {
  if (handle_ != nullptr) cuda_ops::SynchronizeStream(handle_);
}

StreamScope::StreamScope(const DeviceStream& stream) : previous_(cuda_ops::CurrentStream()) {
  cuda_ops::SetCurrentStream(stream.handle_);
}

StreamScope::~StreamScope() { cuda_ops::SetCurrentStream(previous_); }

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

std::string_view WeightFormatName(WeightFormat format) {
  switch (format) {
    case WeightFormat::kFloat32:
      return "float32";
    case WeightFormat::kBFloat16:
      return "bfloat16";
    case WeightFormat::kInt8:
      return "int8";
  }
  return "unknown";
}

PackedMatrix PackMatrix(const Tensor& weight, WeightFormat format) {
  RequireCpu(weight.device(), "PackMatrix");
  return cpu::PackMatrix(weight, format);
}

void UnpackRow(const PackedMatrix& packed, int64_t n, float* out) {
  cpu::UnpackRow(packed, n, out);
}

PackedMatrix GatherRows(const PackedMatrix& packed, std::span<const int32_t> rows) {
  return cpu::GatherRows(packed, rows);
}

std::vector<std::string> SupportedCpuIsas() { return cpu::SupportedCpuIsas(); }
absl::Status SetCpuIsa(const std::string& name) { return cpu::SetCpuIsa(name); }
std::string CpuIsa() { return cpu::CpuIsa(); }
std::string CpuKernelDescription() { return cpu::CpuKernelDescription(); }

void Linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation activation,
            Tensor* y, const PackedMatrix* packed) {
  if (x.device() == Device::kCuda) {
    cuda_ops::Linear(x, weight, bias, activation, y);
    return;
  }
  RequireCpu(x.device(), "Linear");
  if (packed != nullptr && !packed->empty()) {
    const auto start = std::chrono::steady_clock::now();
    cpu::PackedProduct(x, *packed, bias, activation, y);
    if (gemm_counters_enabled) Record(start, x.dim(0), x.dim(1), packed->rows);
    return;
  }
  if (bias.empty()) {
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
  return cuda_ops::CopyTo(t, device);
}

Tensor ToFloat16Linear(const Tensor& weight, const Tensor& bias) {
  return cuda_ops::ToFloat16Linear(weight, bias);
}

namespace {

// What the backends rank: each row's k (0 for a forced row, whose one candidate is known) and
// whether it bans EOS, once the rules are checked against `rows` rows of `vocab` logits.
struct RankedRows {
  std::vector<int32_t> k;
  std::vector<uint8_t> ban_eos;
};
RankedRows CheckRules(std::span<const CandidateRule> rules, int64_t rows, int64_t vocab,
                      int32_t pad, int32_t eos) {
  if (rows != static_cast<int64_t>(rules.size())) {
    throw std::invalid_argument("TopKCandidates: " + std::to_string(rules.size()) + " rules for " +
                                std::to_string(rows) + " rows");
  }
  RankedRows ranked{std::vector<int32_t>(rules.size()), std::vector<uint8_t>(rules.size())};
  for (size_t r = 0; r < rules.size(); ++r) {
    const int64_t allowed = vocab - 1 - (rules[r].ban_eos && eos != pad ? 1 : 0);
    if (rules[r].forced_token >= vocab || rules[r].forced_token == pad) {
      throw std::invalid_argument("TopKCandidates: row " + std::to_string(r) + " forces token " +
                                  std::to_string(rules[r].forced_token) + " of a vocabulary of " +
                                  std::to_string(vocab) + " (pad " + std::to_string(pad) + ")");
    }
    if (!rules[r].forced() && (rules[r].k < 1 || rules[r].k > allowed)) {
      throw std::invalid_argument("TopKCandidates: row " + std::to_string(r) + " asks for " +
                                  std::to_string(rules[r].k) + " of " + std::to_string(allowed) +
                                  " allowed tokens");
    }
    ranked.k[r] = rules[r].forced() ? 0 : rules[r].k;
    ranked.ban_eos[r] = rules[r].ban_eos ? 1 : 0;
  }
  return ranked;
}

void SetForcedRows(std::span<const CandidateRule> rules, int32_t eos,
                   std::vector<std::vector<TokenScore>>* candidates) {
  for (size_t r = 0; r < rules.size(); ++r) {
    if (rules[r].forced()) {
      const int32_t token = rules[r].force_eos ? eos : rules[r].forced_token;
      (*candidates)[r].assign(1, TokenScore{token, 0.0f});
    }
  }
}

// Beyond this many candidates a row is ranked from stored logits: the chunked ranking keeps
// every chunk range's k best per row for the merge.
constexpr int32_t kMaxChunkRankedK = 64;

}  // namespace

void TopKCandidates(const Tensor& logits, std::span<const CandidateRule> rules, int32_t pad,
                    int32_t eos, std::vector<std::vector<TokenScore>>* candidates) {
  if (logits.rank() != 2 || logits.dtype() != DType::kFloat32) {
    throw std::invalid_argument("TopKCandidates: " + std::to_string(rules.size()) +
                                " rules for logits of shape " + logits.ShapeString());
  }
  const RankedRows ranked = CheckRules(rules, logits.dim(0), logits.dim(1), pad, eos);
  candidates->resize(rules.size());
  if (logits.device() == Device::kCuda) {
    cuda_ops::TopK(logits, ranked.k, ranked.ban_eos, pad, eos, candidates);
  } else {
    RequireCpu(logits.device(), "TopKCandidates");
    cpu::TopK(logits, ranked.k, ranked.ban_eos, pad, eos, candidates);
  }
  SetForcedRows(rules, eos, candidates);
}

void LinearTopKCandidates(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const PackedMatrix* packed, std::span<const CandidateRule> rules,
                          int32_t pad, int32_t eos, Tensor* logits,
                          std::vector<std::vector<TokenScore>>* candidates) {
  const bool chunk_ranked = x.device() == Device::kCpu && packed != nullptr && !packed->empty() &&
                            std::all_of(rules.begin(), rules.end(), [](const CandidateRule& rule) {
                              return rule.forced() || rule.k <= kMaxChunkRankedK;
                            });
  if (!chunk_ranked) {
    Linear(x, weight, bias, Activation::kIdentity, logits, packed);
    TopKCandidates(*logits, rules, pad, eos, candidates);
    return;
  }
  const RankedRows ranked = CheckRules(rules, x.dim(0), packed->rows, pad, eos);
  candidates->resize(rules.size());
  const auto start = std::chrono::steady_clock::now();
  cpu::PackedProductTopK(x, *packed, bias, ranked.k, ranked.ban_eos, pad, eos, candidates);
  if (gemm_counters_enabled) Record(start, x.dim(0), x.dim(1), packed->rows);
  SetForcedRows(rules, eos, candidates);
}

void AddLayerNorm(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                  float eps, Tensor* out) {
  if (x.device() == Device::kCuda) {
    cuda_ops::AddLayerNorm(x, residual, gamma, beta, eps, out);
    return;
  }
  RequireCpu(x.device(), "AddLayerNorm");
  cpu::AddLayerNorm(x, residual, gamma, beta, eps, out);
}

void LayerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor* out) {
  if (x.device() == Device::kCuda) {
    cuda_ops::LayerNorm(x, gamma, beta, eps, out);
    return;
  }
  RequireCpu(x.device(), "LayerNorm");
  cpu::LayerNorm(x, gamma, beta, eps, out);
}

void AddToLayerNorm(Tensor* x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor* out) {
  if (x->device() == Device::kCuda) {
    cuda_ops::AddToLayerNorm(x, residual, gamma, beta, eps, out);
    return;
  }
  RequireCpu(x->device(), "AddToLayerNorm");
  cpu::AddToLayerNorm(x, residual, gamma, beta, eps, out);
}

void EmbedTokens(const Tensor& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out) {
  if (table.device() == Device::kCuda) {
    cuda_ops::EmbedTokens(table, ids, positions, scale, position_table, out);
    return;
  }
  RequireCpu(table.device(), "EmbedTokens");
  cpu::EmbedTokens(table, ids, positions, scale, position_table, out);
}

void EmbedTokens(const PackedMatrix& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out) {
  cpu::EmbedTokens(table, ids, positions, scale, position_table, out);
}

void PackedSelfAttention(const Tensor& qkv, std::span<const int32_t> offsets, int heads,
                         Tensor* out) {
  if (qkv.device() == Device::kCuda) {
    cuda_ops::PackedSelfAttention(qkv, offsets, heads, out);
    return;
  }
  RequireCpu(qkv.device(), "PackedSelfAttention");
  cpu::PackedSelfAttention(qkv, offsets, heads, out);
}

bool CachedSelfAttention(const Tensor& qkv, int layer, std::span<SequenceKvCache* const> caches,
                         int heads, Tensor* out) {
  if (qkv.device() == Device::kCuda) {
    return cuda_ops::CachedSelfAttention(qkv, layer, caches, heads, out);
  }
  RequireCpu(qkv.device(), "CachedSelfAttention");
  return cpu::CachedSelfAttention(qkv, layer, caches, heads, out);
}

void CrossAttention(const Tensor& q, int layer, std::span<const CrossKv* const> sources, int heads,
                    Tensor* out, Tensor* head_mean_weights, int mean_heads) {
  mean_heads = mean_heads <= 0 ? heads : std::min(mean_heads, heads);
  if (q.device() == Device::kCuda) {
    cuda_ops::CrossAttention(q, layer, sources, heads, out, head_mean_weights, mean_heads);
    return;
  }
  RequireCpu(q.device(), "CrossAttention");
  cpu::CrossAttention(q, layer, sources, heads, out, head_mean_weights, mean_heads);
}

void CopyKvBlockPrefixes(KvBlockPool& pool, std::span<const KvBlockCopy> copies) {
  if (pool.device() == Device::kCuda) {
    cuda_ops::CopyKvBlockPrefixes(pool, copies);
    return;
  }
  RequireCpu(pool.device(), "CopyKvBlockPrefixes");
  cpu::CopyKvBlockPrefixes(pool, copies);
}

}  // namespace transerve::ops
