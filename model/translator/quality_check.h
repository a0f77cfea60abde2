// The load-time quality check of dtype=auto on the CPU (docs/engine.md, "dtype=auto"): a
// low-precision translator and a float32 one over the same checkpoint decode the same fixed
// sources greedily, and the low-precision one passes when its next-token distributions stay
// close to float32's wherever both have generated the same prefix. The float32 decode is
// recorded first (ReferenceSteps), so the two models need not be in memory at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace transerve {

class Translator;

// The sources: kQualityCheckSentences sequences of kQualityCheckMinPieces to
// kQualityCheckMaxPieces ids (then EOS), drawn uniformly from the model's source vocabulary
// without its pad, EOS and decoder start ids, from a fixed seed: every load of a model draws
// the same ones, on any machine (std::mt19937 is specified bit for bit; the ranges are mapped
// here, not by a library distribution).
inline constexpr int kQualityCheckSentences = 16;
inline constexpr int kQualityCheckMinPieces = 8;
inline constexpr int kQualityCheckMaxPieces = 24;
inline constexpr uint32_t kQualityCheckSeed = 20250601;
// Greedy steps per sentence at most (EOS is forced at the last one).
inline constexpr int kQualityCheckMaxSteps = 32;

// Pass thresholds, calibrated on the shipped model, the opus-mt-en-de shape with random
// weights, the test fixtures and a model made to fail (docs/engine.md has the figures): the
// shipped model passes with int8 and bfloat16 at 4.5x to 20x margins.
inline constexpr double kMinTop1Agreement = 0.95;
inline constexpr double kMaxMeanLogProbDifference = 0.10;

struct QualityCheck {
  int64_t positions = 0;   // (sentence, step) pairs compared
  int64_t agreements = 0;  // of which the two top-1 tokens were the same
  // Mean over the positions of |log p_ref(b) - log p(b)|, b the reference's top-1 token (the
  // log-softmax over the tokens a step allows: all but pad).
  double mean_abs_log_prob_difference = 0;

  double top1_agreement() const {
    return positions == 0 ? 0.0 : static_cast<double>(agreements) / static_cast<double>(positions);
  }
  bool passed() const {
    return positions > 0 && top1_agreement() >= kMinTop1Agreement &&
           mean_abs_log_prob_difference <= kMaxMeanLogProbDifference;
  }
  // "top-1 agreement 0.995 over 412 positions, mean |dlogp| 0.010", with the threshold a failing
  // figure misses ("top-1 agreement 0.620 < 0.95 ...").
  std::string Describe() const;
};

std::vector<std::vector<int32_t>> QualityCheckSources(int64_t vocab_size, int32_t pad, int32_t eos,
                                                      int32_t decoder_start);
// QualityCheckSources of `translator`'s model, cut to its positions.
std::vector<std::vector<int32_t>> QualityCheckSources(const Translator& translator);

// The float32 reference's greedy decode of the sources: per sentence, the token it generated at
// each step and, from that step's logits, its top-1 token and that token's log-probability.
struct ReferenceSteps {
  struct Step {
    int32_t generated;
    int32_t best;
    double best_log_prob;
  };
  std::vector<std::vector<Step>> sentences;
};

// Decodes `sources` greedily (one batch: Encode, StartSearch, Step; each step's logits from
// CopyLastLogits), at most kQualityCheckMaxSteps steps.
absl::StatusOr<ReferenceSteps> RecordReference(Translator& reference,
                                               std::span<const std::vector<int32_t>> sources);

// Decodes the same `sources` greedily on `candidate` and compares each step's logits with the
// reference's, row by row, while a sentence's generated prefix is the reference's; a sentence
// leaves the comparison (and the batch) once its token differs from the reference's or either
// has finished. The figures are those of stepping both models in lockstep. The candidate must
// be loaded from the reference's checkpoint; fails with the first error it gives.
absl::StatusOr<QualityCheck> CompareWithReference(Translator& candidate,
                                                  std::span<const std::vector<int32_t>> sources,
                                                  const ReferenceSteps& reference);

// RecordReference then CompareWithReference on QualityCheckSources (tests, calibration).
absl::StatusOr<QualityCheck> RunQualityCheck(Translator& candidate, Translator& reference);

}  // namespace transerve
