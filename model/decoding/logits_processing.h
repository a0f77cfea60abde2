// Turning one row of raw logits into the processed log-probabilities the searches use (HF
// semantics): pad is excluded and the rest renormalised; EOS is banned before min_length and
// forced at max_length. Computed without materialising the log-softmax row.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/decoding/decoding_options.h"

namespace transerve {

struct StepRule {
  bool ban_eos = false;    // shorter than min_length
  bool force_eos = false;  // this token is the max_length-th
};

// The rule for generating token number `generated + 1`.
StepRule RuleForStep(const DecodingOptions& options, int generated);

// The normaliser of one logits row: log Σ exp(logit) over the allowed tokens, so that the
// processed log-prob of an allowed token t is logits[t] - LogNormalizer(...).
float LogNormalizer(std::span<const float> logits, const SpecialTokens& special, StepRule rule);

struct TokenScore {
  int32_t token;
  float log_prob;  // processed log-probability
};

// The `k` allowed tokens with the highest processed log-probability, best first (ties: lower
// id first). Under force_eos the only allowed token is EOS, with log-probability 0.
void TopTokens(std::span<const float> logits, const SpecialTokens& special, StepRule rule, int k,
               std::vector<TokenScore>* out);

}  // namespace transerve
