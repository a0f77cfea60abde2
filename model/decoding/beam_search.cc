#include "model/decoding/beam_search.h"

#include <algorithm>
#include <cmath>

#include "model/decoding/greedy_search.h"
#include "model/decoding/logits_processing.h"

namespace transerve {

BeamSearch::BeamSearch(const DecodingOptions& options, const SpecialTokens& special,
                       std::shared_ptr<const CrossKv> source, KvBlockPool* pool, int decoder_layers)
    : options_(options), special_(special), source_(std::move(source)) {
  // HF starts with `beams` copies of which only the first is live (the others score -1e9), so
  // the first step expands one hypothesis; we simply start with one.
  Beam first;
  first.cache = std::make_unique<SequenceKvCache>(pool, decoder_layers);
  running_.push_back(std::move(first));
}

void BeamSearch::CollectRows(std::vector<DecoderRow>* rows) {
  for (Beam& beam : running_) {
    const int32_t input = beam.ids.empty() ? special_.decoder_start : beam.ids.back();
    rows->push_back({input, beam.cache.get(), source_.get()});
  }
}

float BeamSearch::Normalized(float sum_log_probs, int length) const {
  return sum_log_probs / std::pow(static_cast<float>(length), options_.length_penalty);
}

void BeamSearch::AddFinished(Hypothesis hypothesis) {
  ++finished_count_;
  // Earlier entries win ties, as in HF's concatenate-then-topk merge.
  auto pos = std::find_if(finished_.begin(), finished_.end(),
                          [&](const Hypothesis& h) { return hypothesis.score > h.score; });
  finished_.insert(pos, std::move(hypothesis));
  if (static_cast<int>(finished_.size()) > options_.beam_size) finished_.pop_back();
}

ops::CandidateRule BeamSearch::NextCandidates() const {
  return RuleForStep(options_, generated_, /*k=*/2 * options_.beam_size);
}

void BeamSearch::Advance(std::span<const std::vector<TokenScore>> top, const Tensor* alignment,
                         int64_t first_row) {
  const int beams = options_.beam_size;
  candidates_.clear();
  for (size_t b = 0; b < running_.size(); ++b) {
    for (const TokenScore& t : top[first_row + static_cast<int64_t>(b)]) {
      candidates_.push_back(
          {running_[b].sum_log_probs + t.log_prob, static_cast<int32_t>(b), t.token});
    }
  }
  // Rank as torch.topk over the flattened [beam, vocab] scores: best first, ties by position.
  std::stable_sort(candidates_.begin(), candidates_.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.score != b.score) return a.score > b.score;
                     return a.beam != b.beam ? a.beam < b.beam : a.token < b.token;
                   });
  if (static_cast<int>(candidates_.size()) > 2 * beams) candidates_.resize(2 * beams);

  const int length = generated_ + 1;
  const bool at_max_length = length >= options_.max_length;
  // CTranslate2, at the first step after a forced first token (its target prefix), lets EOS end
  // only the best candidate: an EOS ranked below it holds a beam's place without finishing, and
  // no other candidate takes that place (its decoding.cc, update_sample_with_prefix).
  const bool after_prefix = options_.rules == SearchRules::kCTranslate2 &&
                            options_.forced_first_token >= 0 && generated_ == 1;
  int held_places = 0;
  std::vector<Beam> next;
  // owner[b]: index in `next` of the child that took over beam b's cache, or -1.
  std::vector<int> owner(running_.size(), -1);
  for (size_t rank = 0; rank < candidates_.size(); ++rank) {
    const Candidate& c = candidates_[rank];
    const bool finishes = c.token == special_.eos || at_max_length;
    const Beam& parent = running_[c.beam];
    if (after_prefix && rank > 0 && c.token == special_.eos && !at_max_length) {
      if (static_cast<int>(rank) < beams) ++held_places;
      continue;
    }
    if (finishes) {
      if (rank == 0) top_candidate_finished_ = true;
      if (static_cast<int>(rank) < beams) {
        Hypothesis h;
        h.ids = parent.ids;
        h.ids.push_back(c.token);
        if (options_.records_alignment()) {
          h.alignment = parent.alignment;
          AppendAlignmentRow(*alignment, first_row + c.beam, source_->length(), &h.alignment);
        }
        h.score = Normalized(c.score, length);
        h.log_prob = c.score;
        AddFinished(std::move(h));
      }
      continue;
    }
    if (static_cast<int>(next.size()) + held_places == beams) continue;
    Beam child;
    child.ids = parent.ids;
    child.ids.push_back(c.token);
    child.sum_log_probs = c.score;
    if (options_.records_alignment()) {
      child.alignment = parent.alignment;
      AppendAlignmentRow(*alignment, first_row + c.beam, source_->length(), &child.alignment);
    }
    // The first child of a beam takes over its cache; further children share it copy-on-write.
    if (owner[c.beam] < 0) {
      child.cache = std::move(running_[c.beam].cache);
      owner[c.beam] = static_cast<int>(next.size());
    } else {
      child.cache = next[owner[c.beam]].cache->Fork();
    }
    next.push_back(std::move(child));
  }
  running_ = std::move(next);
  generated_ = length;

  done_ = at_max_length || running_.empty() || EnoughFinished(length);
  if (done_) running_.clear();
}

bool BeamSearch::EnoughFinished(int length) const {
  const int beams = options_.beam_size;
  if (options_.rules == SearchRules::kCTranslate2) {
    if (options_.length_penalty == 0.0f) {
      // No length normalisation: nothing still running can beat a finished best candidate.
      return top_candidate_finished_ && finished_count_ >= options_.num_hypotheses;
    }
    return finished_count_ >= beams;
  }
  if (static_cast<int>(finished_.size()) < beams) return false;
  const float best_possible = Normalized(running_.front().sum_log_probs, length);
  return best_possible <= finished_.back().score;
}

SearchResult BeamSearch::TakeResult() {
  SearchResult result;
  const int n = std::min<int>(options_.num_hypotheses, static_cast<int>(finished_.size()));
  result.hypotheses.assign(std::make_move_iterator(finished_.begin()),
                           std::make_move_iterator(finished_.begin() + n));
  return result;
}

std::unique_ptr<SentenceSearch> MakeSentenceSearch(const DecodingOptions& options,
                                                   const SpecialTokens& special,
                                                   std::shared_ptr<const CrossKv> source,
                                                   KvBlockPool* pool, int decoder_layers) {
  if (options.beam_size <= 1) {
    return std::make_unique<GreedySearch>(options, special, std::move(source), pool,
                                          decoder_layers);
  }
  return std::make_unique<BeamSearch>(options, special, std::move(source), pool, decoder_layers);
}

}  // namespace transerve
