#include "model/decoding/greedy_search.h"

#include "model/decoding/logits_processing.h"

namespace transerve {

GreedySearch::GreedySearch(const DecodingOptions& options, const SpecialTokens& special,
                           std::shared_ptr<const CrossKv> source, KvBlockPool* pool,
                           int decoder_layers)
    : options_(options),
      special_(special),
      source_(std::move(source)),
      cache_(std::make_unique<SequenceKvCache>(pool, decoder_layers)),
      next_input_(special.decoder_start) {}

void GreedySearch::CollectRows(std::vector<DecoderRow>* rows) {
  rows->push_back({next_input_, cache_.get(), source_.get()});
}

ops::CandidateRule GreedySearch::NextCandidates() const {
  return RuleForStep(options_, static_cast<int>(hypothesis_.ids.size()), /*k=*/1);
}

void GreedySearch::Advance(std::span<const std::vector<TokenScore>> top, const Tensor* alignment,
                           int64_t first_row) {
  const TokenScore& best = top[first_row].front();
  hypothesis_.ids.push_back(best.token);
  if (options_.records_alignment()) {
    AppendAlignmentRow(*alignment, first_row, source_->length(), &hypothesis_.alignment);
  }
  hypothesis_.score += best.log_prob;
  hypothesis_.log_prob += best.log_prob;
  next_input_ = best.token;
  // At max_length the hypothesis ends: with the forced EOS, or (CTranslate2's rules) as it is.
  const bool at_max_length = static_cast<int>(hypothesis_.ids.size()) >= options_.max_length;
  if (best.token == special_.eos || at_max_length) {
    done_ = true;
    cache_.reset();  // give the blocks back as soon as the sentence ends
  }
}

SearchResult GreedySearch::TakeResult() {
  SearchResult result;
  result.hypotheses.push_back(std::move(hypothesis_));
  return result;
}

}  // namespace transerve
