// The primitives of the engine, device-neutral: each entry point dispatches on the tensors'
// device to one implementation in cpu/ (or cuda/). Layers call only these.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/core/activation.h"
#include "model/core/tensor.h"
#include "model/ops/kv_cache.h"

struct TranserveCudaStream;  // model/ops/cuda/plugin_abi.h

namespace transerve {

// Cross-attention keys and values of one source sentence, projected once when it is admitted:
// rows are source positions, columns hold for each decoder layer its keys then its values,
// i.e. [source_len, layers * 2 * d_model]. May be a row view into a whole batch's projection.
struct CrossKv {
  Tensor kv;
  int32_t length() const { return static_cast<int32_t>(kv.dim(0)); }
};

// A candidate token of a decoder step and its log-probability under the softmax over the tokens
// the step allows (ops::TopKCandidates).
struct TokenScore {
  int32_t token;
  float log_prob;
};

namespace ops {

// The ordered queue a model replica's device work runs on: a CUDA stream, or nothing on the
// CPU. Replicas each own one, so on one GPU their work runs side by side instead of queueing
// behind each other's. The device primitives below, and device Tensors allocated, go to the
// calling thread's current stream (StreamScope), else to the backend's default stream.
class DeviceStream {
 public:
  DeviceStream() = default;  // no stream of its own
  // A new stream on `device` (none on the CPU); throws std::runtime_error when it cannot.
  explicit DeviceStream(Device device);
  ~DeviceStream();
  DeviceStream(DeviceStream&& other) noexcept;
  DeviceStream& operator=(DeviceStream&& other) noexcept;
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;

  // Waits for every op queued on the stream.
  void Synchronize() const;

 private:
  friend class StreamScope;
  TranserveCudaStream* handle_ = nullptr;
};

// Makes `stream` the calling thread's current stream until destroyed (scopes nest).
class StreamScope {
 public:
  explicit StreamScope(const DeviceStream& stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  TranserveCudaStream* previous_;
};

// The device `name` (auto | cpu | cuda) stands for. auto takes the GPU when the CUDA plugin
// finds a device and its self-test kernel computes the right result (docs/cuda.md), else the
// CPU, and logs which and why. FAILED_PRECONDITION for cuda without such a GPU;
// INVALID_ARGUMENT for any other name.
absl::StatusOr<Device> ResolveDevice(const std::string& name);
// What runs the primitives on `device`, for logs: the BLAS library and its kernel on the CPU,
// the GPU's name and memory on CUDA.
std::string DeviceDescription(Device device);

// Sets the number of threads the GEMM library may use (the engine's only thread pool).
void SetNumThreads(int threads);
int GetNumThreads();
// A line naming the BLAS library and its kernel (for logs and benchmark reports).
std::string BlasDescription();

// Counters over every Gemm call, for benchmarks (off by default: the clock reads cost ~50 ns).
struct GemmCounters {
  double seconds = 0;
  double flops = 0;
  int64_t calls = 0;
};
void EnableGemmCounters(bool enabled);
void ResetGemmCounters();
GemmCounters ReadGemmCounters();

// c = alpha * a · op(b) + beta * c. a: [M, K]; b: [N, K] when trans_b (nn.Linear layout), else
// [K, N]; c: [M, N] (must already have that shape when beta != 0, else it is resized).
void Gemm(const Tensor& a, const Tensor& b, bool trans_b, float alpha, float beta, Tensor* c);

// How a packed weight stores its numbers (--dtype on the CPU). float32 is exact; bfloat16 keeps
// the top 16 bits of each weight (rounded to nearest even) and multiplies bfloat16 activations
// with float32 sums; int8 keeps each output feature's weights as q * scale with |q| <= 127 and
// multiplies them with activations quantized per row the same way, summing in int32.
enum class WeightFormat : uint8_t { kFloat32, kBFloat16, kInt8 };
std::string_view WeightFormatName(WeightFormat format);

// A weight matrix [N, K] (nn.Linear layout) rearranged for the product kernels: panels of
// kPanelWidth output features, zero-padded. The BLAS GEMM re-packs its weight operand on every
// call, which costs as much as the arithmetic when the batch has tens of rows; a packed copy is
// made once, at load time. Every product with a model weight uses it, whatever its row count:
// one kernel summing each output in plain K order, so a row's result never depends on the batch
// it is in (a sentence translates the same alone, in a static batch or joining a continuous
// one). Measured with 2 threads: 2-5x faster than OpenBLAS below 48 rows and on a par or faster
// up to 256 (docs/engine.md). Layouts, with K rounded up to `depth`:
//   float32  [panels][depth][32] floats            (depth = K)
//   bfloat16 [panels][depth/2][32][2] bfloat16     (depth = K rounded up to 2: the pairs
//                                                    vdpbf16ps multiplies)
//   int8     [panels][depth/4][32][4] int8         (depth = K rounded up to 4: the quads
//                                                    vpdpbusd multiplies)
struct PackedMatrix {
  static constexpr int kPanelWidth = 32;
  WeightFormat format = WeightFormat::kFloat32;
  Tensor panels;
  // int8 only, one per output feature (padded to whole panels): the weight is q * scales[n];
  // column_sums[n] is the sum of its q over K (the unsigned-activation correction of vpdpbusd).
  Tensor scales;
  Tensor column_sums;
  int64_t rows = 0;   // N
  int64_t cols = 0;   // K
  int64_t depth = 0;  // K padded as the format needs
  bool empty() const { return panels.empty(); }
};
PackedMatrix PackMatrix(const Tensor& weight, WeightFormat format = WeightFormat::kFloat32);
// Row n of the weight as the packed copy holds it (de-quantized), into out[0..K): the embedding
// lookup of a table that is stored packed.
void UnpackRow(const PackedMatrix& packed, int64_t n, float* out);
// The packed matrix of rows `rows` (in that order) of `packed`, their bytes copied as they are:
// a product with it gives, bit for bit, those columns of the product with `packed`. The
// output projection of a vocabulary shortlist. Throws std::invalid_argument for a row out of
// range.
PackedMatrix GatherRows(const PackedMatrix& packed, std::span<const int32_t> rows);

// The CPU kernels' instruction-set level, lowest first: avx2 (AVX2 + FMA, the build's floor),
// avx512 (F/BW/DQ/VL), avx512_vnni (+ vpdpbusd for int8), avx512_bf16 (+ vdpbf16ps for
// bfloat16). The highest the CPU supports is used unless TRANSERVE_CPU_ISA names a lower one.
std::vector<std::string> SupportedCpuIsas();
// Lowers (or restores) the level for the whole process: INVALID_ARGUMENT for a name that is not
// one of SupportedCpuIsas(). Every level computes the same results bit for bit.
absl::Status SetCpuIsa(const std::string& name);
// The level in use: one of SupportedCpuIsas() (what dtype=auto chooses by).
std::string CpuIsa();
// The level in use and the kernel each weight format runs with, for logs and reports.
std::string CpuKernelDescription();

// y = activation(x · weightᵀ + bias). x: [M, K], weight: [N, K], bias: [N] or empty; y -> [M, N].
// With a packed copy of the weight the product uses it (any format), the bias and activation
// applied as each panel of outputs is finished. A float16 weight (GPU) carries its bias
// (ToFloat16Linear): `bias` is then empty.
void Linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation activation,
            Tensor* y, const PackedMatrix* packed = nullptr);

// A copy of `t` on `device` (`t` itself when it is there already). Moving to or from the GPU
// needs the CUDA backend (model/ops/cuda_plugin.h).
Tensor CopyTo(const Tensor& t, Device device);

// A linear layer's float16 weight on the GPU, with its bias inside ([N, K] and [N] or empty,
// float32, on the host): [N, K + TRANSERVE_CUDA_HALF_BIAS_COLUMNS] half, so that one GEMM adds
// the bias (model/ops/cuda/plugin_abi.h, linear_f16w).
Tensor ToFloat16Linear(const Tensor& weight, const Tensor& bias);

// What one row of a decoder step may choose, and how many of its best tokens it needs. Every
// token is allowed but pad, and but EOS under ban_eos (the hypothesis is shorter than its
// min_length); under force_eos (its max_length-th token) EOS is the only candidate, with
// log-probability 0, whatever k says; so is forced_token when it is set (a token a model's
// generation forces, such as M2M-100's target language as the first token).
struct CandidateRule {
  int32_t k = 1;
  bool ban_eos = false;
  bool force_eos = false;
  int32_t forced_token = -1;
  bool forced() const { return force_eos || forced_token >= 0; }
};

// For each row r of `logits` ([rows, vocab], CPU or GPU): the rules[r].k allowed tokens with the
// highest logits, best first (ties: lower id), each with its log-probability under the softmax
// over the allowed tokens. Into (*candidates)[r]; only they cross back to the host. On the CPU
// the rows are spread over the engine's threads. Throws std::invalid_argument unless there is
// one rule per row, each asking for 1 to (allowed tokens) candidates.
void TopKCandidates(const Tensor& logits, std::span<const CandidateRule> rules, int32_t pad,
                    int32_t eos, std::vector<std::vector<TokenScore>>* candidates);

// TopKCandidates of the logits Linear(x, weight, bias, kIdentity, packed) would give, the
// output projection and the ranking in one. With a packed weight on the CPU (and k <= 64) the
// logits are ranked chunk by chunk as they are computed and never stored: `logits` is left
// untouched, and the candidates are the same bits as through stored logits. Elsewhere the
// logits go through `logits` ([rows, N]).
void LinearTopKCandidates(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const PackedMatrix* packed, std::span<const CandidateRule> rules,
                          int32_t pad, int32_t eos, Tensor* logits,
                          std::vector<std::vector<TokenScore>>* candidates);

// out = LayerNorm(x + residual) * gamma + beta over the last axis (biased variance): a
// post-norm block's residual add. `out` may alias `x` or `residual`.
void AddLayerNorm(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                  float eps, Tensor* out);
// out = LayerNorm(x) * gamma + beta. `out` may alias `x`.
void LayerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor* out);
// *x += residual, then out = LayerNorm(*x) * gamma + beta: a pre-norm block's residual add, the
// stream keeping the sum and the next sublayer reading its normalised copy. `out` may alias `x`
// (the sum is then normalised in place).
void AddToLayerNorm(Tensor* x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                    float eps, Tensor* out);

// out[r] = table[ids[r]] * scale + position_table[positions[r]]; out -> [R, D].
void EmbedTokens(const Tensor& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out);
// The same from a table stored packed (a low-precision CPU model: UnpackRow).
void EmbedTokens(const PackedMatrix& table, std::span<const int32_t> ids,
                 std::span<const int32_t> positions, float scale, const Tensor& position_table,
                 Tensor* out);

// Self-attention over packed sequences: qkv is [T, 3D] (queries, keys, values of all tokens of
// all sequences back to back); sequence b holds rows offsets[b] .. offsets[b+1]-1 and attends
// only within itself (this is the key-padding mask). out -> [T, D].
void PackedSelfAttention(const Tensor& qkv, std::span<const int32_t> offsets, int heads,
                         Tensor* out);

// One decoder step of causal self-attention with a cache: row r's key and value (columns D..3D
// of qkv) are appended to caches[r] at `layer`, then its query attends every cached position.
// Returns false if the KV pool ran out of blocks (nothing is half-written for that row).
bool CachedSelfAttention(const Tensor& qkv, int layer, std::span<SequenceKvCache* const> caches,
                         int heads, Tensor* out);

// Cross-attention for one decoder step: row r's query q[r] ([R, D]) attends its source's keys
// and values of `layer` in *sources[r]. out -> [R, D]. With `head_mean_weights`: ->
// [R, longest source]; row r's first sources[r]->length() entries are its attention weights
// averaged over the first `mean_heads` heads (0: every head; the rest 0) — what alignments are
// made of.
void CrossAttention(const Tensor& q, int layer, std::span<const CrossKv* const> sources, int heads,
                    Tensor* out, Tensor* head_mean_weights = nullptr, int mean_heads = 0);

// Makes every copy in `copies` (KvBlockCopy: the first key and value rows of one block into
// another), in one call.
void CopyKvBlockPrefixes(KvBlockPool& pool, std::span<const KvBlockCopy> copies);

}  // namespace ops
}  // namespace transerve
