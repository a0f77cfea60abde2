// The rules a decoder step's logits are read under (HF semantics), as data: pad is never
// generated (excluded from the softmax, the rest renormalised); EOS is banned before min_length
// and forced at max_length (Hugging Face's rules; CTranslate2's force nothing there).
// ops::TopKCandidates applies them on the device of the logits.
#pragma once

#include "model/decoding/decoding_options.h"
#include "model/ops/ops.h"

namespace transerve {

// The rule for generating token number `generated + 1`, asking for the `k` best candidates.
ops::CandidateRule RuleForStep(const DecodingOptions& options, int generated, int k);

}  // namespace transerve
