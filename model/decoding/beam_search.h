// Beam search with the semantics of Hugging Face's vectorised beam search (transformers
// PR #35802): 2·beams candidates per step, EOS candidates finish only from the first `beams`
// ranks, length-normalised finished scores; it stops by HF's early_stopping=False heuristic or
// by CTranslate2's rule (DecodingOptions::stopping).
#pragma once

#include "model/decoding/sentence_search.h"

namespace transerve {

class BeamSearch : public SentenceSearch {
 public:
  BeamSearch(const DecodingOptions& options, const SpecialTokens& special,
             std::shared_ptr<const CrossKv> source, KvBlockPool* pool, int decoder_layers);

  void CollectRows(std::vector<DecoderRow>* rows) override;
  bool wants_alignment() const override { return options_.records_alignment(); }
  ops::CandidateRule NextCandidates() const override;
  void Advance(std::span<const std::vector<TokenScore>> top, const Tensor* alignment,
               int64_t first_row) override;
  bool done() const override { return done_; }
  SearchResult TakeResult() override;
  const std::vector<int32_t>& partial_ids() const override {
    return running_.empty() ? finished_.front().ids : running_.front().ids;
  }

 private:
  struct Beam {
    std::vector<int32_t> ids;
    float sum_log_probs = 0.0f;
    std::vector<float> alignment;  // with return_alignment: one source-length row per id
    std::unique_ptr<SequenceKvCache> cache;
  };
  struct Candidate {
    float score;  // running sum of log-probs including this token
    int32_t beam;
    int32_t token;
  };

  float Normalized(float sum_log_probs, int length) const;
  void AddFinished(Hypothesis hypothesis);
  bool EnoughFinished(int length) const;

  DecodingOptions options_;
  SpecialTokens special_;
  std::shared_ptr<const CrossKv> source_;
  std::vector<Beam> running_;
  std::vector<Hypothesis> finished_;  // best first, at most beam_size
  int finished_count_ = 0;            // every hypothesis that finished, kept or not
  bool top_candidate_finished_ = false;
  int generated_ = 0;
  bool done_ = false;
  std::vector<Candidate> candidates_;
};

}  // namespace transerve
