// Turns a sentence's search result into the v1.Translation its caller receives.
#pragma once

#include <cstdint>
#include <vector>

#include "model/translator/translator.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

// The best hypothesis's text and token counts; with `scores`, its score, ids and pieces; its
// alignment when the search kept one; and the first `num_hypotheses` hypotheses when more than
// one was asked for. Adds the best hypothesis's length to `*generated_tokens`.
void FillTranslation(const Translator& t, const std::vector<int32_t>& source_ids,
                     const SearchResult& r, bool scores, int num_hypotheses, v1::Translation* out,
                     int64_t* generated_tokens);

}  // namespace transerve
