// The search of one source sentence as a step-by-step state machine, independent of how the
// steps are batched: a driver collects the decoder rows of many searches, runs one batched
// decoder step, and hands each search its rows of logits. Static batching, continuous
// batching and the offline translator all drive searches this way.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "model/core/tensor.h"
#include "model/decoding/decoding_options.h"
#include "model/decoding/logits_processing.h"
#include "model/layers/decoder.h"

namespace transerve {

class SentenceSearch {
 public:
  virtual ~SentenceSearch() = default;

  // Appends the rows this search needs in the next decoder step (one per live hypothesis).
  virtual void CollectRows(std::vector<DecoderRow>* rows) = 0;
  // Whether the driver must pass alignment rows to Advance (DecodingOptions::records_alignment).
  virtual bool wants_alignment() const = 0;
  // What the next step needs from each of its rows' logits: the k best tokens under the
  // step's rule (logits_processing.h). The driver computes them for every row of the batch at
  // once (ops::TopKCandidates), on whatever device holds the logits.
  virtual ops::CandidateRule NextCandidates() const = 0;
  // Consumes rows [first_row, first_row + rows collected) of the step just run: the candidates
  // of each row (`top[row]`, best first), and of `alignment` (DecodeStep's head-averaged
  // cross-attention), which is non-null whenever wants_alignment().
  virtual void Advance(std::span<const std::vector<TokenScore>> top, const Tensor* alignment,
                       int64_t first_row) = 0;
  virtual bool done() const = 0;
  // The hypotheses, best first; valid once done().
  virtual SearchResult TakeResult() = 0;
  // Generated tokens of the best live hypothesis so far (for streaming partial output).
  virtual const std::vector<int32_t>& partial_ids() const = 0;

  // The tokens this search chooses among (DecodingOptions::use_vocabulary_map), or null: all.
  // The driver ranks its rows over them (ShortlistCandidates).
  const OutputShortlist* shortlist() const { return shortlist_.get(); }
  void set_shortlist(std::shared_ptr<const OutputShortlist> shortlist) {
    shortlist_ = std::move(shortlist);
  }

 private:
  std::shared_ptr<const OutputShortlist> shortlist_;
};

// Appends row `row` of a step's alignment tensor (its first `source_length` entries) to `out`.
inline void AppendAlignmentRow(const Tensor& alignment, int64_t row, int32_t source_length,
                               std::vector<float>* out) {
  const float* begin = alignment.f32() + row * alignment.dim(1);
  out->insert(out->end(), begin, begin + source_length);
}

// Greedy when options.beam_size == 1, else beam search. The search keeps `source` (the
// sentence's cross-attention keys/values) alive and takes its caches from `pool`.
std::unique_ptr<SentenceSearch> MakeSentenceSearch(const DecodingOptions& options,
                                                   const SpecialTokens& special,
                                                   std::shared_ptr<const CrossKv> source,
                                                   KvBlockPool* pool, int decoder_layers);

}  // namespace transerve
