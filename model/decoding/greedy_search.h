// Greedy search: the single best token each step (HF num_beams=1 semantics).
#pragma once

#include "model/decoding/sentence_search.h"

namespace transerve {

class GreedySearch : public SentenceSearch {
 public:
  GreedySearch(const DecodingOptions& options, const SpecialTokens& special,
               std::shared_ptr<const CrossKv> source, KvBlockPool* pool, int decoder_layers);

  void CollectRows(std::vector<DecoderRow>* rows) override;
  bool wants_alignment() const override { return options_.records_alignment(); }
  ops::CandidateRule NextCandidates() const override;
  void Advance(std::span<const std::vector<TokenScore>> top, const Tensor* alignment,
               int64_t first_row) override;
  bool done() const override { return done_; }
  SearchResult TakeResult() override;
  const std::vector<int32_t>& partial_ids() const override { return hypothesis_.ids; }

 private:
  DecodingOptions options_;
  SpecialTokens special_;
  std::shared_ptr<const CrossKv> source_;
  std::unique_ptr<SequenceKvCache> cache_;
  Hypothesis hypothesis_;
  int32_t next_input_;
  bool done_ = false;
};

}  // namespace transerve
