#include "server/response_builder.h"

#include <algorithm>
#include <string>

namespace transerve {
namespace {

void FillAlignment(const TranslationSides& t, const std::vector<int32_t>& source_ids,
                   const Hypothesis& h, v1::Alignment* a) {
  a->set_target_length(static_cast<int32_t>(h.ids.size()));
  a->set_source_length(static_cast<int32_t>(source_ids.size()));
  a->mutable_weights()->Add(h.alignment.begin(), h.alignment.end());
  for (int32_t id : source_ids)
    a->add_source_tokens(std::string(t.source.tokenizer().SourceIdToPiece(id)));
  for (int32_t id : h.ids)
    a->add_target_tokens(std::string(t.target.tokenizer().TargetIdToPiece(id)));
}

float MeanLogProb(float log_prob, size_t tokens) {
  return tokens == 0 ? 0.0f : log_prob / static_cast<float>(tokens);
}

}  // namespace

text::AlignedTranslation RestoredBest(const TranslationSides& t, const PreparedRequest& prepared,
                                      size_t text, size_t source, const SearchResult& r) {
  const PreparedText& pt = prepared.texts[text];
  const size_t s = source - pt.first;
  return pt.document.Restore(
      s, ToAligned(t, pt.document.model_text(s), prepared.sources[source], r.hypotheses[0]));
}

void FillSentence(const TranslationSides& t, const PreparedRequest& prepared, size_t source,
                  const SearchResult& r, const text::AlignedTranslation& restored,
                  v1::Sentence* out) {
  const Hypothesis& h = r.hypotheses[0];
  out->set_source(restored.source);
  out->set_text(restored.target);
  out->set_confidence(MeanLogProb(h.log_prob, h.ids.size()));
  out->set_source_token_count(static_cast<int32_t>(prepared.sources[source].size()));
  out->set_target_token_count(static_cast<int32_t>(h.ids.size()));
  if (prepared.options.return_alignment && !h.alignment.empty()) {
    FillAlignment(t, prepared.sources[source], h, out->mutable_alignment());
  }
}

void FillDocumentTranslation(const TranslationSides& t, const PreparedRequest& prepared,
                             size_t text, std::span<const SearchResult> results,
                             v1::Translation* out, int64_t* generated_tokens,
                             std::vector<text::AlignedTranslation> restored) {
  const PreparedText& pt = prepared.texts[text];
  const text::Document& doc = pt.document;
  const size_t n = pt.count();
  if (restored.size() != n) {
    restored.assign(n, {});
    for (size_t s = 0; s < n; ++s)
      restored[s] = RestoredBest(t, prepared, text, pt.first + s, results[s]);
  }
  double log_prob = 0;
  float score = 0;
  int64_t source_tokens = 0, target_tokens = 0;
  size_t most_hypotheses = 0;
  for (size_t s = 0; s < n; ++s) {
    const SearchResult& r = results[s];
    const Hypothesis& h = r.hypotheses[0];
    FillSentence(t, prepared, pt.first + s, r, restored[s], out->add_sentences());
    log_prob += h.log_prob;
    score += h.score;
    source_tokens += static_cast<int64_t>(prepared.sources[pt.first + s].size());
    target_tokens += static_cast<int64_t>(h.ids.size());
    most_hypotheses = std::max(most_hypotheses, r.hypotheses.size());
    if (prepared.return_scores) {
      for (int32_t id : h.ids) {
        out->add_token_ids(id);
        out->add_tokens(std::string(t.target.tokenizer().TargetIdToPiece(id)));
      }
    }
  }
  out->set_text(doc.Assemble(restored));
  if (prepared.return_scores) out->set_score(score);
  out->set_confidence(
      MeanLogProb(static_cast<float>(log_prob), static_cast<size_t>(target_tokens)));
  out->set_source_token_count(static_cast<int32_t>(source_tokens));
  out->set_target_token_count(static_cast<int32_t>(target_tokens));
  *generated_tokens += target_tokens;
  // The model-level alignment of a text that is one sentence, as before documents.
  if (n == 1 && prepared.options.return_alignment && !results[0].hypotheses[0].alignment.empty()) {
    FillAlignment(t, prepared.sources[pt.first], results[0].hypotheses[0],
                  out->mutable_alignment());
  }
  const int asked = prepared.options.num_hypotheses;
  if (asked <= 1 || n == 0) return;
  const size_t k = std::min<size_t>(asked, most_hypotheses);
  const std::span<const std::vector<int32_t>> sources(prepared.sources.data() + pt.first, n);
  for (size_t j = 0; j < k; ++j) {
    v1::Hypothesis* hyp = out->add_hypotheses();
    hyp->set_text(j == 0 ? out->text() : AssembleHypothesis(t, doc, sources, results, j));
    float nth_score = 0;
    for (size_t s = 0; s < n; ++s) {
      const auto& hyps = results[s].hypotheses;
      const Hypothesis& h = hyps[std::min(j, hyps.size() - 1)];
      nth_score += h.score;
      if (prepared.return_scores) {
        for (int32_t id : h.ids) {
          hyp->add_token_ids(id);
          hyp->add_tokens(std::string(t.target.tokenizer().TargetIdToPiece(id)));
        }
      }
    }
    if (prepared.return_scores) hyp->set_score(nth_score);
  }
}

}  // namespace transerve
