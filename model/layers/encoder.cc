#include "model/layers/encoder.h"

#include "model/ops/ops.h"

namespace transerve {

void EncodePacked(const TransformerConfig& config, const TransformerWeights& weights,
                  std::span<const int32_t> ids, std::span<const int32_t> offsets, Workspace* ws,
                  Tensor* out) {
  ws->positions.clear();
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    for (int32_t t = 0; t < offsets[b + 1] - offsets[b]; ++t) ws->positions.push_back(t);
  }
  Tensor& x = *out;
  if (weights.encoder_embedding_packed.empty()) {
    ops::EmbedTokens(weights.encoder_embedding, ids, ws->positions, config.embedding_scale,
                     weights.encoder_positions, &x);
  } else {
    ops::EmbedTokens(weights.encoder_embedding_packed, ids, ws->positions, config.embedding_scale,
                     weights.encoder_positions, &x);
  }
  for (const EncoderLayerWeights& layer : weights.encoder) {
    ops::Linear(x, layer.self_qkv.weight, layer.self_qkv.bias, Activation::kIdentity, &ws->qkv,
                &layer.self_qkv.packed);
    ops::PackedSelfAttention(ws->qkv, offsets, config.encoder_heads, &ws->context);
    ops::Linear(ws->context, layer.self_out.weight, layer.self_out.bias, Activation::kIdentity,
                &ws->projected, &layer.self_out.packed);
    ops::AddLayerNorm(x, ws->projected, layer.self_attn_norm.gamma, layer.self_attn_norm.beta,
                      config.layer_norm_eps, &x);
    ops::Linear(x, layer.fc1.weight, layer.fc1.bias, config.activation, &ws->ffn_hidden,
                &layer.fc1.packed);
    ops::Linear(ws->ffn_hidden, layer.fc2.weight, layer.fc2.bias, Activation::kIdentity,
                &ws->projected, &layer.fc2.packed);
    ops::AddLayerNorm(x, ws->projected, layer.final_norm.gamma, layer.final_norm.beta,
                      config.layer_norm_eps, &x);
  }
}

}  // namespace transerve
