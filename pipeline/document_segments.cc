#include "pipeline/document_segments.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace transerve {

namespace {

absl::StatusOr<std::vector<int32_t>> TokenizeWithLanguages(const Translator& translator,
                                                           std::string_view text,
                                                           const SegmentSettings& settings,
                                                           bool truncate) {
  std::string prefixed = settings.target_token;
  prefixed.append(text.data(), text.size());
  return translator.Tokenize(prefixed, truncate, settings.source_token);
}

absl::StatusOr<std::vector<int32_t>> FitToLimit(std::vector<int32_t> ids,
                                                const SegmentSettings& settings) {
  if (static_cast<int64_t>(ids.size()) <= settings.max_source_tokens) return ids;
  if (!settings.truncate) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a segment is ", ids.size(), " tokens (EOS included); this server accepts at most ",
        settings.max_source_tokens, " (split sentences, or set options.truncate)"));
  }
  const int32_t eos = ids.back();
  ids.resize(static_cast<size_t>(settings.max_source_tokens));
  ids.back() = eos;
  return ids;
}

// The document `build` makes under the model's limit, with each segment's source ids.
absl::StatusOr<DocumentSegments> Segment(
    const Translator& translator, const SegmentSettings& settings,
    const std::function<absl::StatusOr<text::Document>(const text::SegmentLimit&)>& build) {
  // The limit check tokenizes every sentence; what it tokenized is kept, so that a segment the
  // model sees as written (no stand-ins, the usual case) is not tokenized a second time.
  absl::flat_hash_map<std::string, std::vector<int32_t>> tokenized;
  text::SegmentLimit limit;
  // The server's limit, or the model's positions where they are fewer.
  limit.max_units = static_cast<int>(std::min<int64_t>(
      settings.max_source_tokens, translator.model().config.max_position_embeddings));
  limit.units = [&](std::string_view s) {
    auto ids = TokenizeWithLanguages(translator, s, settings, /*truncate=*/false);
    if (!ids.ok()) return std::numeric_limits<int>::max();  // over the model's positions
    const int n = static_cast<int>(ids->size());
    tokenized.insert_or_assign(std::string(s), *std::move(ids));
    return n;
  };
  auto document = build(limit);
  if (!document.ok()) return document.status();
  DocumentSegments out{*std::move(document), {}};
  out.ids.reserve(out.document.segment_count());
  for (size_t i = 0; i < out.document.segment_count(); ++i) {
    const auto known = tokenized.find(out.document.model_text(i));
    auto ids = known != tokenized.end()
                   ? FitToLimit(known->second, settings)
                   : TokenizeSegment(translator, out.document.model_text(i), settings);
    if (!ids.ok()) return ids.status();
    out.ids.push_back(*std::move(ids));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> TokenizeSegment(const Translator& translator,
                                                     std::string_view text,
                                                     const SegmentSettings& settings) {
  auto ids = TokenizeWithLanguages(translator, text, settings, settings.truncate);
  if (!ids.ok()) return ids.status();
  return FitToLimit(*std::move(ids), settings);
}

absl::StatusOr<DocumentSegments> SegmentDocument(const Translator& translator,
                                                 std::string_view text,
                                                 const text::DocumentOptions& options,
                                                 const SegmentSettings& settings) {
  return Segment(translator, settings, [&](const text::SegmentLimit& limit) {
    return text::Document::Build(text, options, limit);
  });
}

absl::StatusOr<DocumentSegments> SegmentFile(const Translator& translator,
                                             std::unique_ptr<text::UnitFile> file,
                                             const text::DocumentOptions& options,
                                             const SegmentSettings& settings) {
  return Segment(translator, settings,
                 [&](const text::SegmentLimit& limit) -> absl::StatusOr<text::Document> {
                   return text::Document::FromFile(std::move(file), options, limit);
                 });
}

text::AlignedTranslation ToAligned(const TranslationSides& sides, std::string_view model_text,
                                   const std::vector<int32_t>& source_ids, const Hypothesis& h) {
  const Translator& translator = sides.target;
  const MarianTokenizer& tok = translator.tokenizer();
  text::AlignedTranslation t;
  t.source = std::string(model_text);
  // The target model's replacement reads the source in its own pieces, which a pivot's first
  // leg did not make.
  const std::vector<std::string> replaced =
      sides.pivot() ? std::vector<std::string>()
                    : translator.UnknownReplacements(h.ids, h.alignment, model_text);
  t.target = translator.Detokenize(h.ids, replaced);
  std::vector<std::string> pieces;
  for (int32_t id : source_ids) pieces.emplace_back(sides.source.tokenizer().SourceIdToPiece(id));
  t.source_tokens = text::PieceRanges(t.source, pieces);
  pieces.clear();
  for (size_t s = 0; s < h.ids.size(); ++s) {
    pieces.emplace_back(s < replaced.size() && !replaced[s].empty()
                            ? std::string_view(replaced[s])
                            : tok.TargetIdToPiece(h.ids[s]));
  }
  t.target_tokens = text::PieceRanges(t.target, pieces);
  if (h.alignment.size() == t.source_tokens.size() * t.target_tokens.size()) {
    t.weights = h.alignment;
  }
  return t;
}

std::string AssembleHypothesis(const TranslationSides& sides, const text::Document& document,
                               std::span<const std::vector<int32_t>> sources,
                               std::span<const SearchResult> results, size_t j) {
  std::vector<text::AlignedTranslation> restored(document.segment_count());
  for (size_t s = 0; s < restored.size(); ++s) {
    const auto& hyps = results[s].hypotheses;
    const Hypothesis& h = hyps[std::min(j, hyps.size() - 1)];
    restored[s] = document.Restore(s, ToAligned(sides, document.model_text(s), sources[s], h));
  }
  return document.Assemble(restored);
}

}  // namespace transerve
