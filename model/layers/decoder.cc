#include "model/layers/decoder.h"

#include <vector>

namespace transerve {

void ProjectCrossKv(const TransformerWeights& weights, const Tensor& encoder_out, Tensor* kv) {
  ops::Linear(encoder_out, weights.cross_kv.weight, weights.cross_kv.bias, Activation::kIdentity,
              kv, &weights.cross_kv.packed);
}

bool DecodeStep(const TransformerConfig& config, const TransformerWeights& weights,
                std::span<const DecoderRow> rows, Workspace* ws, Tensor* hidden,
                Tensor* alignment) {
  ws->ids.clear();
  ws->positions.clear();
  std::vector<SequenceKvCache*> caches;
  std::vector<const CrossKv*> sources;
  caches.reserve(rows.size());
  sources.reserve(rows.size());
  for (const DecoderRow& row : rows) {
    ws->ids.push_back(row.token);
    ws->positions.push_back(row.cache->length());
    caches.push_back(row.cache);
    sources.push_back(row.source);
  }
  Tensor& x = *hidden;
  if (weights.decoder_embedding_packed.empty()) {
    ops::EmbedTokens(weights.decoder_embedding, ws->ids, ws->positions, config.embedding_scale,
                     weights.decoder_positions, &x);
  } else {
    ops::EmbedTokens(weights.decoder_embedding_packed, ws->ids, ws->positions,
                     config.embedding_scale, weights.decoder_positions, &x);
  }
  for (int l = 0; l < config.decoder_layers; ++l) {
    const DecoderLayerWeights& layer = weights.decoder[l];
    ops::Linear(x, layer.self_qkv.weight, layer.self_qkv.bias, Activation::kIdentity, &ws->qkv,
                &layer.self_qkv.packed);
    if (!ops::CachedSelfAttention(ws->qkv, l, caches, config.decoder_heads, &ws->context)) {
      return false;
    }
    ops::Linear(ws->context, layer.self_out.weight, layer.self_out.bias, Activation::kIdentity,
                &ws->projected, &layer.self_out.packed);
    ops::AddLayerNorm(x, ws->projected, layer.self_attn_norm.gamma, layer.self_attn_norm.beta,
                      config.layer_norm_eps, &x);

    ops::Linear(x, layer.cross_q.weight, layer.cross_q.bias, Activation::kIdentity, &ws->query,
                &layer.cross_q.packed);
    const bool last = l + 1 == config.decoder_layers;
    ops::CrossAttention(ws->query, l, sources, config.decoder_heads, &ws->context,
                        last ? alignment : nullptr);
    ops::Linear(ws->context, layer.cross_out.weight, layer.cross_out.bias, Activation::kIdentity,
                &ws->projected, &layer.cross_out.packed);
    ops::AddLayerNorm(x, ws->projected, layer.cross_attn_norm.gamma, layer.cross_attn_norm.beta,
                      config.layer_norm_eps, &x);

    ops::Linear(x, layer.fc1.weight, layer.fc1.bias, config.activation, &ws->ffn_hidden,
                &layer.fc1.packed);
    ops::Linear(ws->ffn_hidden, layer.fc2.weight, layer.fc2.bias, Activation::kIdentity,
                &ws->projected, &layer.fc2.packed);
    ops::AddLayerNorm(x, ws->projected, layer.final_norm.gamma, layer.final_norm.beta,
                      config.layer_norm_eps, &x);
  }
  for (SequenceKvCache* cache : caches) cache->CommitAppend();
  return true;
}

void OutputLogits(const TransformerWeights& weights, const Tensor& hidden, Tensor* logits) {
  ops::Linear(hidden, weights.output.weight, weights.output.bias, Activation::kIdentity, logits,
              &weights.output.packed);
}

void OutputCandidates(const TransformerWeights& weights, const Tensor& hidden,
                      std::span<const ops::CandidateRule> rules, int32_t pad, int32_t eos,
                      Tensor* logits, std::vector<std::vector<TokenScore>>* candidates) {
  ops::LinearTopKCandidates(hidden, weights.output.weight, weights.output.bias,
                            &weights.output.packed, rules, pad, eos, logits, candidates);
}

}  // namespace transerve
