#include "model/decoding/logits_processing.h"

namespace transerve {

ops::CandidateRule RuleForStep(const DecodingOptions& options, int generated, int k) {
  ops::CandidateRule rule;
  rule.k = k;
  rule.force_eos = generated + 1 >= options.max_length;
  rule.ban_eos = !rule.force_eos && generated + 1 < options.min_length;
  return rule;
}

}  // namespace transerve
