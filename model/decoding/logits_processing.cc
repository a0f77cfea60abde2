#include "model/decoding/logits_processing.h"

namespace transerve {

ops::CandidateRule RuleForStep(const DecodingOptions& options, int generated, int k) {
  ops::CandidateRule rule;
  rule.k = k;
  // CTranslate2 chooses the last token as any other: the hypothesis ends there without EOS.
  rule.force_eos =
      generated + 1 >= options.max_length && options.rules == SearchRules::kHuggingFace;
  if (!rule.force_eos && generated == 0) rule.forced_token = options.forced_first_token;
  rule.ban_eos = !rule.force_eos && rule.forced_token < 0 && generated + 1 < options.min_length;
  return rule;
}

}  // namespace transerve
