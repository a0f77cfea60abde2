// The C interface between the engine and the CUDA backend plugin (libtranserve_cuda.so).
// The plugin is loaded with dlopen at run time, so the same binaries run on machines without
// a CUDA driver or toolkit libraries: they then simply stay on the CPU (docs/cuda.md).
// Plain C types only: the plugin and the engine may be built by different compilers.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include <stdint.h>

#define TRANSERVE_CUDA_PLUGIN_ABI 11

// What a failed call's error means for the caller (last_error_kind).
#define TRANSERVE_CUDA_ERROR_FAILED 0         // this call failed; the device still works
#define TRANSERVE_CUDA_ERROR_OUT_OF_MEMORY 1  // less work at once may still fit
// The device context is broken for good (a "sticky" error such as an illegal address): every
// later call fails the same way until the process restarts.
#define TRANSERVE_CUDA_ERROR_DEVICE_LOST 2

// Returns TRANSERVE_CUDA_PLUGIN_ABI.
typedef int (*TranserveCudaAbiFn)(void);

// Whether a usable CUDA device exists: returns the device count (0 when none is usable) and
// writes the first device's name, or why none is usable ("CUDA driver is insufficient ...",
// "no CUDA-capable device ..."), into `message` (NUL-terminated, at most `capacity` bytes).
typedef int (*TranserveCudaProbeFn)(char* message, size_t capacity);

// Runs a kernel on device 0 and checks its result against the host: 1 when it matched, else 0
// with the reason in `message`. Proves the toolchain, the driver and the architecture list.
typedef int (*TranserveCudaSelfTestFn)(char* message, size_t capacity);

// Copy directions of TranserveCudaApi.copy.
#define TRANSERVE_CUDA_HOST_TO_DEVICE 0
#define TRANSERVE_CUDA_DEVICE_TO_HOST 1
#define TRANSERVE_CUDA_DEVICE_TO_DEVICE 2

// Columns a float16 linear weight has beyond its inputs (linear_f16w): two for the bias, the rest
// zeros, so that rows stay 16-byte aligned for the tensor cores.
#define TRANSERVE_CUDA_HALF_BIAS_COLUMNS 8

// Activations, in the order of transerve::Activation (model/core/activation.h).
#define TRANSERVE_CUDA_IDENTITY 0
#define TRANSERVE_CUDA_SWISH 1
#define TRANSERVE_CUDA_RELU 2
#define TRANSERVE_CUDA_GELU 3
#define TRANSERVE_CUDA_GELU_TANH 4

// Keys and values an attention query reads: `count` positions starting at `keys` / `values`
// (device pointers to head 0 of the first position), `stride` floats apart.
typedef struct TranserveCudaKvSegment {
  const float* keys;
  const float* values;
  int64_t stride;
  int32_t count;
} TranserveCudaKvSegment;

// A CUDA stream with what its calls use in its order (cuBLAS handle, scratch, staging): one
// per model replica, so replicas queue device work side by side. Opaque to the engine.
typedef struct TranserveCudaStream TranserveCudaStream;

// The primitives, on device 0. Every call but free names the stream it is queued on (NULL: the
// plugin's default stream); calls on one stream take turns across host threads, and are
// ordered on it. Pointers are device memory unless said otherwise; matrices are row-major.
// Functions returning int return 0 on success, else an error whose text last_error() gives
// (per host thread). Copies to the host wait for their stream.
typedef struct TranserveCudaApi {
  int abi;                                      // TRANSERVE_CUDA_PLUGIN_ABI
  TranserveCudaStream* (*create_stream)(void);  // NULL on failure
  // Waits for the stream's work, then destroys it; its device blocks become free for any stream.
  void (*destroy_stream)(TranserveCudaStream* stream);
  // Device memory reused, once freed, only on `stream` (caching_allocator.h); NULL on failure.
  void* (*allocate)(TranserveCudaStream* stream, size_t bytes);
  void (*free)(void* ptr);
  int (*copy)(TranserveCudaStream* stream, void* dst, const void* src, size_t bytes, int direction);
  int (*synchronize)(TranserveCudaStream* stream);
  // y[m, n] = activation(x[m, k] · w[n, k]ᵀ + bias[n]); bias may be NULL.
  int (*linear_f32)(TranserveCudaStream* stream, const float* x, int64_t m, int64_t k,
                    const float* w, int64_t n, const float* bias, int activation, float* y);
  // s[r] = x[r] + residual[r] (residual may be NULL: s = x), kept in sum[r] unless sum is
  // NULL; out[r] = LayerNorm(s[r]) * gamma + beta over d columns (biased variance). out and sum
  // may alias x or residual.
  int (*add_layer_norm_f32)(TranserveCudaStream* stream, const float* x, const float* residual,
                            const float* gamma, const float* beta, int64_t rows, int64_t d,
                            float eps, float* sum, float* out);
  // Scaled dot-product attention of single queries: query row r (q + r * q_stride), head h
  // (head_dim floats at h * head_dim), attends the positions of its segments
  // segments[row_segments[r] .. row_segments[r + 1]) (host arrays), softmax(q·kᵀ·scale)·v into
  // out + r * out_stride + h * head_dim. With head_mean (may be NULL): row r's softmax weights
  // averaged over heads 0 .. mean_heads - 1 at head_mean + r * mean_stride (positions in segment
  // order).
  int (*attend_f32)(TranserveCudaStream* stream, const float* q, int64_t q_stride, int32_t rows,
                    int32_t heads, int32_t head_dim, const TranserveCudaKvSegment* segments,
                    const int32_t* row_segments, float scale, float* out, int64_t out_stride,
                    float* head_mean, int64_t mean_stride, int32_t mean_heads);
  // out[r] = table[ids[r]] * scale + position_table[positions[r]] over d columns; ids and
  // positions are host arrays of `rows` entries, already checked against the tables.
  int (*embed_f32)(TranserveCudaStream* stream, const float* table, const int32_t* ids,
                   const int32_t* positions, int64_t rows, int64_t d, float scale,
                   const float* position_table, float* out);
  // y = activation(x · wᵀ + bias) with a float16 weight that carries its bias: w16 is
  // [n, k + TRANSERVE_CUDA_HALF_BIAS_COLUMNS] half, the weight in columns 0..k-1 and the bias in
  // the next two (its nearest half, then the half nearest to the rest), zeros after. x is
  // rounded to half with ones appended, so one tensor-core GEMM (float32 accumulation, y float32)
  // adds the bias too; an activation other than identity takes one more kernel.
  int (*linear_f16w)(TranserveCudaStream* stream, const float* x, int64_t m, int64_t k,
                     const void* w16, int64_t n, int activation, float* y);
  // For each logits row r ([rows, vocab], device): the k[r] allowed tokens with the highest
  // logits, best first (ties: lower id first), with their log-probabilities under the softmax
  // over allowed tokens. Allowed: every token but `pad`, and but `eos` where ban_eos[r]. A row
  // with k[r] = 0 gets none. k (each at most max_k), ban_eos (host, `rows` entries) in; tokens
  // and log_probs (host, rows * max_k) out.
  int (*top_k_f32)(TranserveCudaStream* stream, const float* logits, int32_t rows, int32_t vocab,
                   const int32_t* k, const uint8_t* ban_eos, int32_t pad, int32_t eos,
                   int32_t max_k, int32_t* tokens, float* log_probs);
  // Appends a decoder step's keys and values to the KV cache: row r's key (qkv[r, d:2d]) to
  // key_rows[r] and its value (qkv[r, 2d:3d]) to value_rows[r]; qkv is [rows, 3d] on the
  // device, key_rows and value_rows host arrays of device pointers.
  int (*append_kv_f32)(TranserveCudaStream* stream, const float* qkv, int32_t rows, int64_t d,
                       float* const* key_rows, float* const* value_rows);
  // KV blocks' copy-on-write for a step, all at once: copy i copies floats[i] floats from
  // from[i] to to[i] (device pointers to blocks' keys), and as many from
  // from[i] + values_offset to to[i] + values_offset (their values). Host arrays of `count`.
  int (*copy_kv_prefixes_f32)(TranserveCudaStream* stream, int32_t count, const float* const* from,
                              float* const* to, const int64_t* floats, int64_t values_offset);
  const char* (*last_error)(void);
  // What the calling thread's last error means: TRANSERVE_CUDA_ERROR_*.
  int (*last_error_kind)(void);
} TranserveCudaApi;

// Returns the plugin's table (static storage).
typedef const TranserveCudaApi* (*TranserveCudaApiFn)(void);

#ifdef __cplusplus
}
#endif
