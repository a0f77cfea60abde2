// One incremental step of the decoder stack for any set of sequences, each with its own
// position, self-attention cache and source: the unit continuous batching is built from.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/layers/transformer_weights.h"
#include "model/layers/workspace.h"
#include "model/ops/ops.h"

namespace transerve {

struct DecoderRow {
  int32_t token;           // input token of this step (the start token at step 0)
  SequenceKvCache* cache;  // its length is the position of `token`
  const CrossKv* source;   // the encoded source this row attends to
};

// Projects encoder output [T, D] to cross-attention keys/values of all layers, [T, L*2D].
void ProjectCrossKv(const TransformerWeights& weights, const Tensor& encoder_out, Tensor* kv);

// Runs one step; writes the last layer's hidden states [rows, D] to *hidden and appends this
// step to every row's cache. With `alignment`, also writes the cross-attention weights of the
// config's alignment layer and heads ([rows, longest source], see ops::CrossAttention). Returns
// false, with no cache advanced, when the KV pool is full.
bool DecodeStep(const TransformerConfig& config, const TransformerWeights& weights,
                std::span<const DecoderRow> rows, Workspace* workspace, Tensor* hidden,
                Tensor* alignment = nullptr);

// logits [rows, target_vocab] = hidden · outputᵀ + final_logits_bias.
void OutputLogits(const TransformerWeights& weights, const Tensor& hidden, Tensor* logits);

// A vocabulary shortlist's share of the output projection: the sorted, distinct target ids a
// sentence may produce, and the projection's rows for them (ops::GatherRows: the same logits
// bit for bit as the whole projection's).
struct OutputShortlist {
  std::vector<int32_t> ids;
  ops::PackedMatrix weight;
  Tensor bias;  // [ids.size()], or empty
};
// The shortlist of `ids` over the model's packed output projection (on the CPU).
OutputShortlist MakeOutputShortlist(const TransformerWeights& weights, std::vector<int32_t> ids);
// OutputCandidates over the shortlist's tokens only: each row's softmax is taken over them and
// the candidates come back as the model's ids. `pad` and `eos` must be among them, and so must
// every rule's forced token.
void ShortlistCandidates(const OutputShortlist& shortlist, const Tensor& hidden,
                         std::span<const ops::CandidateRule> rules, int32_t pad, int32_t eos,
                         Tensor* logits, std::vector<std::vector<TokenScore>>* candidates);

// The candidates each row's rule asks for from those logits (ops::LinearTopKCandidates): where
// the device allows they are ranked as computed and `logits` is left as it was.
void OutputCandidates(const TransformerWeights& weights, const Tensor& hidden,
                      std::span<const ops::CandidateRule> rules, int32_t pad, int32_t eos,
                      Tensor* logits, std::vector<std::vector<TokenScore>>* candidates);

}  // namespace transerve
