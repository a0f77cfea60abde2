#include "model/layers/decoder.h"

#include <algorithm>
#include <stdexcept>
#include <string>
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
  const float eps = config.layer_norm_eps;
  if (weights.decoder_embedding_norm.present()) {
    ops::LayerNorm(x, weights.decoder_embedding_norm.gamma, weights.decoder_embedding_norm.beta,
                   eps, &x);
  }
  // Each sublayer reads `in` and leaves its output in ws->projected; post-norm adds it and
  // normalises in place, pre-norm adds it and normalises into ws->normed for the next sublayer
  // (the stack's final norm writes the output in place).
  Tensor& h = ws->normed;
  const bool pre_norm = config.decoder_pre_norm;
  auto residual = [&](const LayerNormWeights& post, const LayerNormWeights& next_pre, bool last) {
    if (!pre_norm) {
      ops::AddLayerNorm(x, ws->projected, post.gamma, post.beta, eps, &x);
    } else {
      ops::AddToLayerNorm(&x, ws->projected, next_pre.gamma, next_pre.beta, eps, last ? &x : &h);
    }
  };
  if (pre_norm) {
    const auto& first = weights.decoder.front().self_attn_norm;
    ops::LayerNorm(x, first.gamma, first.beta, eps, &h);
  }
  const Tensor& in = pre_norm ? h : x;
  const int alignment_layer = config.alignment_layer < 0
                                  ? config.decoder_layers + config.alignment_layer
                                  : config.alignment_layer;
  for (int l = 0; l < config.decoder_layers; ++l) {
    const DecoderLayerWeights& layer = weights.decoder[l];
    const bool last = l + 1 == config.decoder_layers;
    ops::Linear(in, layer.self_qkv.weight, layer.self_qkv.bias, Activation::kIdentity, &ws->qkv,
                &layer.self_qkv.packed);
    if (!ops::CachedSelfAttention(ws->qkv, l, caches, config.decoder_heads, &ws->context)) {
      return false;
    }
    ops::Linear(ws->context, layer.self_out.weight, layer.self_out.bias, Activation::kIdentity,
                &ws->projected, &layer.self_out.packed);
    residual(layer.self_attn_norm, layer.cross_attn_norm, false);

    ops::Linear(in, layer.cross_q.weight, layer.cross_q.bias, Activation::kIdentity, &ws->query,
                &layer.cross_q.packed);
    ops::CrossAttention(ws->query, l, sources, config.decoder_heads, &ws->context,
                        l == alignment_layer ? alignment : nullptr, config.alignment_heads);
    ops::Linear(ws->context, layer.cross_out.weight, layer.cross_out.bias, Activation::kIdentity,
                &ws->projected, &layer.cross_out.packed);
    residual(layer.cross_attn_norm, layer.final_norm, false);

    ops::Linear(in, layer.fc1.weight, layer.fc1.bias, config.activation, &ws->ffn_hidden,
                &layer.fc1.packed);
    ops::Linear(ws->ffn_hidden, layer.fc2.weight, layer.fc2.bias, Activation::kIdentity,
                &ws->projected, &layer.fc2.packed);
    residual(layer.final_norm,
             last ? weights.decoder_final_norm : weights.decoder[l + 1].self_attn_norm, last);
  }
  if (!pre_norm && weights.decoder_final_norm.present()) {
    ops::LayerNorm(x, weights.decoder_final_norm.gamma, weights.decoder_final_norm.beta, eps, &x);
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

OutputShortlist MakeOutputShortlist(const TransformerWeights& weights, std::vector<int32_t> ids) {
  OutputShortlist s;
  s.weight = ops::GatherRows(weights.output.packed, ids);
  if (!weights.output.bias.empty()) {
    std::vector<float> bias;
    bias.reserve(ids.size());
    const float* all = weights.output.bias.f32();
    for (int32_t id : ids) bias.push_back(all[id]);
    s.bias = Tensor::FromFloats({static_cast<int64_t>(bias.size())}, bias);
  }
  s.ids = std::move(ids);
  return s;
}

void ShortlistCandidates(const OutputShortlist& shortlist, const Tensor& hidden,
                         std::span<const ops::CandidateRule> rules, int32_t pad, int32_t eos,
                         Tensor* logits, std::vector<std::vector<TokenScore>>* candidates) {
  auto index = [&](int32_t id) {
    const auto it = std::lower_bound(shortlist.ids.begin(), shortlist.ids.end(), id);
    if (it == shortlist.ids.end() || *it != id) {
      throw std::invalid_argument("ShortlistCandidates: token " + std::to_string(id) +
                                  " is not in the shortlist");
    }
    return static_cast<int32_t>(it - shortlist.ids.begin());
  };
  std::vector<ops::CandidateRule> local(rules.begin(), rules.end());
  for (ops::CandidateRule& r : local) {
    if (r.forced_token >= 0) r.forced_token = index(r.forced_token);
  }
  ops::LinearTopKCandidates(hidden, Tensor(), shortlist.bias, &shortlist.weight, local, index(pad),
                            index(eos), logits, candidates);
  for (std::vector<TokenScore>& row : *candidates) {
    for (TokenScore& c : row) c.token = shortlist.ids[c.token];
  }
}

}  // namespace transerve
