// The bridge between the text layer and the engine, shared by the server and
// transerve-translate: a document's segments as the model's source ids, and the engine's
// hypotheses back as the text layer's AlignedTranslation. Neither side knows the other.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/translator/translator.h"
#include "text/aligned_translation.h"
#include "text/document.h"

namespace transerve {

struct SegmentSettings {
  int max_source_tokens = 512;  // per segment, EOS included
  // Without sentence splitting, a segment over the limit is cut to it (else an error).
  bool truncate = false;
  std::string target_token;  // put before every segment (a multilingual model's ">>deu<<")
  std::string source_token;  // every segment's first token (M2M-100's "__en__"), or ""
};

struct DocumentSegments {
  text::Document document;
  std::vector<std::vector<int32_t>> ids;  // per segment, EOS included
};

// One segment's text as the model's source ids: the settings' language tokens, EOS, and the
// token limit (cut to it with `truncate`, else INVALID_ARGUMENT).
absl::StatusOr<std::vector<int32_t>> TokenizeSegment(const Translator& translator,
                                                     std::string_view text,
                                                     const SegmentSettings& settings);

// INVALID_ARGUMENT for markup that cannot be handled, or (sentence splitting off, no truncate)
// a segment over the token limit.
absl::StatusOr<DocumentSegments> SegmentDocument(const Translator& translator,
                                                 std::string_view text,
                                                 const text::DocumentOptions& options,
                                                 const SegmentSettings& settings);

// A file a format's reader cut into units (text::Document::FromFile), segmented the same way.
absl::StatusOr<DocumentSegments> SegmentFile(const Translator& translator,
                                             std::unique_ptr<text::UnitFile> file,
                                             const text::DocumentOptions& options,
                                             const SegmentSettings& settings);

// The models a translation went through: one, or the two legs of a pivot (the source ids are
// the first's, the target ids the second's, and the alignment joins the two).
struct TranslationSides {
  TranslationSides(const Translator& both) : source(both), target(both) {}  // NOLINT: one model
  TranslationSides(const Translator& source, const Translator& target)
      : source(source), target(target) {}
  bool pivot() const { return &source != &target; }

  const Translator& source;
  const Translator& target;
};

// Hypothesis `h` of a segment (its model text and source ids) as the text layer sees it: the
// pieces as byte ranges of the model text and of the translation, with the hypothesis's
// alignment weights (none when it has no alignment). Unknowns are replaced from the source
// only where one model made the translation.
text::AlignedTranslation ToAligned(const TranslationSides& sides, std::string_view model_text,
                                   const std::vector<int32_t>& source_ids, const Hypothesis& h);

// Hypothesis j of a whole document: each segment's j-th hypothesis (its last when it has fewer)
// restored and put back together. `sources` and `results` are the document's segments'.
std::string AssembleHypothesis(const TranslationSides& sides, const text::Document& document,
                               std::span<const std::vector<int32_t>> sources,
                               std::span<const SearchResult> results, size_t j);

}  // namespace transerve
