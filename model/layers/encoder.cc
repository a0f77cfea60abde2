#include "model/layers/encoder.h"

#include "model/ops/ops.h"

namespace transerve {
namespace {

// Self-attention of `in` over each packed sequence, projected: ws->projected.
void SelfAttention(const TransformerConfig& config, const EncoderLayerWeights& layer,
                   const Tensor& in, std::span<const int32_t> offsets, Workspace* ws) {
  ops::Linear(in, layer.self_qkv.weight, layer.self_qkv.bias, Activation::kIdentity, &ws->qkv,
              &layer.self_qkv.packed);
  ops::PackedSelfAttention(ws->qkv, offsets, config.encoder_heads, &ws->context);
  ops::Linear(ws->context, layer.self_out.weight, layer.self_out.bias, Activation::kIdentity,
              &ws->projected, &layer.self_out.packed);
}

// The feed-forward block of `in`: ws->projected.
void FeedForward(const TransformerConfig& config, const EncoderLayerWeights& layer,
                 const Tensor& in, Workspace* ws) {
  ops::Linear(in, layer.fc1.weight, layer.fc1.bias, config.activation, &ws->ffn_hidden,
              &layer.fc1.packed);
  ops::Linear(ws->ffn_hidden, layer.fc2.weight, layer.fc2.bias, Activation::kIdentity,
              &ws->projected, &layer.fc2.packed);
}

}  // namespace

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
  const float eps = config.layer_norm_eps;
  if (weights.encoder_embedding_norm.present()) {
    ops::LayerNorm(x, weights.encoder_embedding_norm.gamma, weights.encoder_embedding_norm.beta,
                   eps, &x);
  }
  if (!config.encoder_pre_norm) {
    for (const EncoderLayerWeights& layer : weights.encoder) {
      SelfAttention(config, layer, x, offsets, ws);
      ops::AddLayerNorm(x, ws->projected, layer.self_attn_norm.gamma, layer.self_attn_norm.beta,
                        eps, &x);
      FeedForward(config, layer, x, ws);
      ops::AddLayerNorm(x, ws->projected, layer.final_norm.gamma, layer.final_norm.beta, eps, &x);
    }
    if (weights.encoder_final_norm.present()) {
      ops::LayerNorm(x, weights.encoder_final_norm.gamma, weights.encoder_final_norm.beta, eps, &x);
    }
    return;
  }
  // Pre-norm: each residual add is fused with the norm that reads the sum next (the following
  // sublayer's, or the stack's final norm, which writes the output in place).
  Tensor& h = ws->normed;
  const auto& first = weights.encoder.front().self_attn_norm;
  ops::LayerNorm(x, first.gamma, first.beta, eps, &h);
  for (size_t l = 0; l < weights.encoder.size(); ++l) {
    const EncoderLayerWeights& layer = weights.encoder[l];
    SelfAttention(config, layer, h, offsets, ws);
    ops::AddToLayerNorm(&x, ws->projected, layer.final_norm.gamma, layer.final_norm.beta, eps, &h);
    FeedForward(config, layer, h, ws);
    const bool last = l + 1 == weights.encoder.size();
    const LayerNormWeights& next =
        last ? weights.encoder_final_norm : weights.encoder[l + 1].self_attn_norm;
    ops::AddToLayerNorm(&x, ws->projected, next.gamma, next.beta, eps, last ? &x : &h);
  }
}

}  // namespace transerve
