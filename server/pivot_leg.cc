#include "server/pivot_leg.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "pipeline/language_tokens.h"
#include "text/aligned_translation.h"

namespace transerve {

absl::StatusOr<PivotLeg> PreparePivotLeg(const v1::TranslateRequest& request,
                                         const RequestLimits& limits, ModelLease lease,
                                         const std::string& language, const std::string& target) {
  PivotLeg leg;
  leg.model = lease.get();
  leg.lease = std::move(lease);
  leg.language = language;
  const Translator& second = *leg.model->translator;
  auto tokens = leg.model->languages.tokens.Resolve(leg.model->name, language, target);
  if (!tokens.ok()) return tokens.status();
  auto options = ResolveOptions(request.options(), second, limits);
  if (!options.ok()) return options.status();
  leg.options = *options;
  if (auto s = ApplyLanguageTokens(second.tokenizer(), *tokens, &leg.settings, &leg.options);
      !s.ok()) {
    return s;
  }
  // The first leg's output is bounded by max_length, not by this model's positions: what does
  // not fit is cut rather than failing a sentence the caller could not have shortened.
  leg.settings.max_source_tokens = limits.max_source_tokens;
  leg.settings.truncate = true;
  return leg;
}

namespace {

// What both legs of one segment share.
struct PivotSegment {
  const ServedModel* first = nullptr;
  const PivotLeg* pivot = nullptr;
  std::string model_text;
  std::vector<int32_t> source_ids;
  bool align = false;  // the caller or the text layer needs the chained alignment
  absl::Time deadline;
  std::function<bool()> cancelled;
  std::function<void(const std::vector<int32_t>&)> on_progress;
  std::function<void(absl::StatusOr<SearchResult>)> on_done;
  text::AlignedTranslation first_leg;  // set when the first leg is done
};

int64_t BestLength(const SearchResult& r) {
  return r.hypotheses.empty() ? 0 : static_cast<int64_t>(r.hypotheses[0].ids.size());
}

// The second leg's result as a translation of the source: each hypothesis's alignment chained
// through the pivot text (or dropped, since it points at the pivot's tokens).
void ChainAlignments(const PivotSegment& seg, const std::vector<int32_t>& pivot_ids,
                     SearchResult* r) {
  const Translator& second = *seg.pivot->model->translator;
  for (Hypothesis& h : r->hypotheses) {
    if (!seg.align) {
      h.alignment.clear();
      continue;
    }
    const text::AlignedTranslation second_leg =
        ToAligned(second, seg.first_leg.target, pivot_ids, h);
    h.alignment = text::ChainTranslations(seg.first_leg, second_leg).weights;
  }
}

void StartSecondLeg(std::shared_ptr<PivotSegment> seg, SearchResult first_result) {
  const Hypothesis& best = first_result.hypotheses[0];
  seg->first->metrics->AddTokens(static_cast<int64_t>(seg->source_ids.size()),
                                 BestLength(first_result));
  seg->first_leg = ToAligned(*seg->first->translator, seg->model_text, seg->source_ids, best);
  const PivotLeg& pivot = *seg->pivot;
  const Translator& second = *pivot.model->translator;
  auto ids = TokenizeSegment(second, seg->first_leg.target, pivot.settings);
  if (!ids.ok()) return seg->on_done(ids.status());
  if (second.IsEmptySource(*ids)) {
    // The first leg said nothing: so does the second.
    SearchResult empty = second.EmptySourceResult(pivot.options);
    ChainAlignments(*seg, *ids, &empty);
    return seg->on_done(std::move(empty));
  }
  std::vector<SentenceJob> jobs(1);
  SentenceJob& job = jobs[0];
  job.source_ids = *ids;
  job.options = pivot.options;
  job.options.return_alignment = seg->align;
  job.deadline = seg->deadline;
  job.cancelled = seg->cancelled;
  job.on_progress = seg->on_progress;
  job.on_done = [seg, pivot_ids = *ids](absl::StatusOr<SearchResult> r) {
    if (!r.ok()) return seg->on_done(r.status());
    seg->pivot->model->metrics->AddTokens(static_cast<int64_t>(pivot_ids.size()), BestLength(*r));
    ChainAlignments(*seg, pivot_ids, &*r);
    seg->on_done(*std::move(r));
  };
  // Refused (the queue is full, the server drains): nothing was queued, so the answer is ours.
  if (auto s = pivot.model->scheduler->Submit(std::move(jobs)); !s.ok()) seg->on_done(s);
}

}  // namespace

void MakePivotJob(const ServedModel& first, const PivotLeg& pivot, std::string model_text,
                  SentenceJob* job) {
  auto seg = std::make_shared<PivotSegment>();
  seg->first = &first;
  seg->pivot = &pivot;
  seg->model_text = std::move(model_text);
  seg->source_ids = job->source_ids;
  seg->align = job->options.return_alignment;
  seg->deadline = job->deadline;
  seg->cancelled = job->cancelled;
  seg->on_progress = std::move(job->on_progress);
  seg->on_done = std::move(job->on_done);
  // Only the best of the first leg goes on; the pivot text's partial output is no one's.
  job->options.num_hypotheses = 1;
  job->on_progress = nullptr;
  job->on_done = [seg](absl::StatusOr<SearchResult> r) {
    if (!r.ok()) return seg->on_done(r.status());
    if (r->hypotheses.empty()) {
      return seg->on_done(absl::InternalError("the pivot's first leg returned no hypothesis"));
    }
    StartSecondLeg(seg, *std::move(r));
  };
}

}  // namespace transerve
