// Architecture and weights of an encoder-decoder Transformer, post-norm (the Marian family) or
// pre-norm (OpenNMT-py, CTranslate2's other translation specs), in the layout the layers compute
// with: fused QKV for self-attention, all decoder layers' cross-attention key/value projections
// fused into one matrix, nn.Linear [out, in] weights.
#pragma once

#include <cstdint>
#include <vector>

#include "model/core/activation.h"
#include "model/core/tensor.h"
#include "model/ops/ops.h"

namespace transerve {

struct TransformerConfig {
  int64_t d_model = 0;
  int64_t source_vocab_size = 0;  // encoder embedding rows
  int64_t target_vocab_size = 0;  // decoder embedding rows and logits
  int encoder_layers = 0;
  int decoder_layers = 0;
  int encoder_heads = 0;
  int decoder_heads = 0;
  int64_t encoder_ffn_dim = 0;
  int64_t decoder_ffn_dim = 0;
  int64_t max_positions = 0;  // rows of the position table: the longest source or target
  Activation activation = Activation::kSwish;
  float embedding_scale = 1.0f;  // sqrt(d_model) when scale_embedding
  float layer_norm_eps = 1e-5f;  // PyTorch's default, which Marian checkpoints were trained for
  // Post-norm blocks normalise after each residual add (x = LN(x + f(x))); pre-norm blocks
  // before each sublayer (x = x + f(LN(x))), the stack ending in its final norm.
  bool encoder_pre_norm = false;
  bool decoder_pre_norm = false;
  // Alignments (and the unknown-token replacement built on them) are the cross-attention weights
  // of decoder layer `alignment_layer` (negative: counted from the end) averaged over its first
  // `alignment_heads` heads (0: every head). Marian checkpoints: the last layer, every head;
  // CTranslate2 directories: what the spec stores (its default: the last layer, head 0).
  int alignment_layer = -1;
  int alignment_heads = 0;
};

struct LinearWeights {
  // [out, in]; released by PackWeights once `packed` holds it.
  Tensor weight;
  Tensor bias;  // [out]
  // The weight in the CPU kernel's layout (PackWeights). When set, every product uses it.
  ops::PackedMatrix packed;
};

struct LayerNormWeights {
  Tensor gamma;
  Tensor beta;
  bool present() const { return !gamma.empty(); }
};

// A layer's norms are named for the sublayer they follow (post-norm) or precede (pre-norm):
// final_norm belongs to the feed-forward block.
struct EncoderLayerWeights {
  LinearWeights self_qkv;  // [3D, D]: q, k, v projections stacked
  LinearWeights self_out;
  LayerNormWeights self_attn_norm;
  LinearWeights fc1;
  LinearWeights fc2;
  LayerNormWeights final_norm;
};

struct DecoderLayerWeights {
  LinearWeights self_qkv;
  LinearWeights self_out;
  LayerNormWeights self_attn_norm;
  LinearWeights cross_q;
  LinearWeights cross_out;
  LayerNormWeights cross_attn_norm;
  LinearWeights fc1;
  LinearWeights fc2;
  LayerNormWeights final_norm;
};

struct TransformerWeights {
  Tensor encoder_embedding;  // [source_vocab, D]
  Tensor decoder_embedding;  // [target_vocab, D]
  // [max_positions, D], sinusoidal; per side because a checkpoint may store its own copies.
  Tensor encoder_positions;
  Tensor decoder_positions;
  // A low-precision CPU model holds its tables packed instead (PackTables), the float tables
  // released; a table tied to another shares its packed copy, so opus-mt's one shared table
  // is stored once, as the output layer's weight.
  ops::PackedMatrix encoder_embedding_packed;
  ops::PackedMatrix decoder_embedding_packed;
  LinearWeights output;  // weight [target_vocab, D] (tied or lm_head), bias final_logits_bias
  // Cross-attention keys and values of every decoder layer: rows l*2D..l*2D+D-1 are layer l's
  // k_proj, the next D rows its v_proj. One GEMM projects a source for all layers at once.
  LinearWeights cross_kv;
  std::vector<EncoderLayerWeights> encoder;
  std::vector<DecoderLayerWeights> decoder;
  // Optional norms (absent unless present()): after the embeddings and positions
  // (layernorm_embedding), and a pre-norm stack's last (required there).
  LayerNormWeights encoder_embedding_norm;
  LayerNormWeights decoder_embedding_norm;
  LayerNormWeights encoder_final_norm;
  LayerNormWeights decoder_final_norm;
};

// Bytes of storage the weights hold, each storage once (tied tables share theirs).
int64_t StorageBytes(const TransformerWeights& weights);

// Packing for the CPU product kernels, in `format`: each packs the linear weights it is given
// that are not packed yet and releases their row-major copies, so a loaded model holds each
// weight once. The loader packs each part as soon as it is read, which bounds the float copies
// alive at once (a low-precision model never holds all its weights in float32).
// The output layer, and for formats other than float32 the embedding tables (float32 keeps
// them as they are: its output copy is the only packed one).
void PackTables(TransformerWeights* weights, ops::WeightFormat format);
void PackLayer(EncoderLayerWeights* layer, ops::WeightFormat format);
void PackLayer(DecoderLayerWeights* layer, ops::WeightFormat format);
// Everything above, and the fused cross-attention projection.
void PackWeights(TransformerWeights* weights,
                 ops::WeightFormat format = ops::WeightFormat::kFloat32);

// A copy of every tensor on `device` (row-major linear weights: call before PackWeights, which
// is for the CPU only), the linear layers' weight matrices stored as `linear_dtype`
// (kFloat16 on a GPU halves their memory and feeds the tensor cores); biases, norms and
// embeddings stay float32.
TransformerWeights CopyWeightsTo(const TransformerWeights& weights, Device device,
                                 DType linear_dtype = DType::kFloat32);

// The sinusoidal table of Marian/HF: sines in columns [0, ceil(D/2)), cosines after them, angles
// computed in double and rounded to float.
Tensor SinusoidalPositions(int64_t rows, int64_t dim);

// M2M-100's (and NLLB-200's) table, rows [first, first + rows) of it: sines in columns
// [0, D/2), cosines after them, frequencies 10000^(-j/(D/2 - 1)), computed in float as its
// reference does; a zero last column for odd D. The token at index i of a sequence sits at
// position padding_idx + 1 + i, so a loader passes first = padding_idx + 1 (the zeroed padding
// row is never read).
Tensor M2mSinusoidalPositions(int64_t first, int64_t rows, int64_t dim);

}  // namespace transerve
