// Turns the search results of a text's segments into the v1.Translation its caller receives.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/translator/translator.h"
#include "server/request_validation.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

// Text `text` of a prepared request, from its segments' results (in order): the document put
// back together (text/), per-sentence results, counts summed, and the n-best as documents made
// of each segment's n-th hypothesis. Adds the best hypotheses' lengths to `*generated_tokens`.
// `restored`, when given, holds each segment's RestoredBest already made (the stream keeps them).
void FillDocumentTranslation(const TranslationSides& t, const PreparedRequest& prepared,
                             size_t text, std::span<const SearchResult> results,
                             v1::Translation* out, int64_t* generated_tokens,
                             std::vector<text::AlignedTranslation> restored = {});

// One finished segment as its Sentence message; `restored` is its translation as
// Document::Restore made it.
void FillSentence(const TranslationSides& t, const PreparedRequest& prepared, size_t source,
                  const SearchResult& r, const text::AlignedTranslation& restored,
                  v1::Sentence* out);

// Segment `source`'s best hypothesis restored (protected spans back) for its document.
text::AlignedTranslation RestoredBest(const TranslationSides& t, const PreparedRequest& prepared,
                                      size_t text, size_t source, const SearchResult& r);

}  // namespace transerve
