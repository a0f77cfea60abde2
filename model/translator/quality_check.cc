#include "model/translator/quality_check.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/translator/translator.h"

namespace transerve {
namespace {

// A row's top-1 token (ties: lower id) and log-softmax normaliser over every token but pad, in
// double: what the greedy search ranks by.
struct RowSoftmax {
  int32_t best = -1;
  double log_sum = 0;
};

RowSoftmax Normalise(const float* row, int64_t vocab, int32_t pad) {
  RowSoftmax s;
  float top = -INFINITY;
  for (int64_t v = 0; v < vocab; ++v) {
    if (v != pad && (s.best < 0 || row[v] > top)) {
      top = row[v];
      s.best = static_cast<int32_t>(v);
    }
  }
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    if (v != pad) sum += std::exp(static_cast<double>(row[v]) - top);
  }
  s.log_sum = top + std::log(sum);
  return s;
}

}  // namespace

std::string QualityCheck::Describe() const {
  const bool agreement_ok = top1_agreement() >= kMinTop1Agreement;
  const bool difference_ok = mean_abs_log_prob_difference <= kMaxMeanLogProbDifference;
  return absl::StrFormat(
      "top-1 agreement %.3f%s over %d positions, mean |dlogp| %.3f%s", top1_agreement(),
      agreement_ok ? "" : absl::StrFormat(" < %.2f", kMinTop1Agreement), positions,
      mean_abs_log_prob_difference,
      difference_ok ? "" : absl::StrFormat(" > %.2f", kMaxMeanLogProbDifference));
}

std::vector<std::vector<int32_t>> QualityCheckSources(int64_t vocab_size, int32_t pad, int32_t eos,
                                                      int32_t decoder_start) {
  std::vector<int32_t> allowed;
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (id != pad && id != eos && id != decoder_start) allowed.push_back(id);
  }
  std::vector<std::vector<int32_t>> sources;
  if (allowed.empty()) return sources;
  std::mt19937 rng(kQualityCheckSeed);
  const uint32_t span = kQualityCheckMaxPieces - kQualityCheckMinPieces + 1;
  for (int s = 0; s < kQualityCheckSentences; ++s) {
    const int pieces = kQualityCheckMinPieces + static_cast<int>(rng() % span);
    std::vector<int32_t>& source = sources.emplace_back();
    for (int i = 0; i < pieces; ++i) source.push_back(allowed[rng() % allowed.size()]);
    source.push_back(eos);
  }
  return sources;
}

std::vector<std::vector<int32_t>> QualityCheckSources(const Translator& translator) {
  const MarianConfig& c = translator.model().config;
  auto sources =
      QualityCheckSources(c.vocab_size, c.pad_token_id, c.eos_token_id, c.decoder_start_token_id);
  // A model with fewer positions than the longest source keeps each one's first ids and EOS.
  for (auto& source : sources) {
    if (static_cast<int64_t>(source.size()) > c.max_position_embeddings) {
      source.resize(static_cast<size_t>(std::max<int64_t>(1, c.max_position_embeddings)));
      source.back() = c.eos_token_id;
    }
  }
  return sources;
}

namespace {

// Decodes `sources` greedily on `t` in one batch. After each step, for every sentence i that was
// stepped, `visit(i, step, logits, vocab, generated)` with its row of the step's logits and the
// token its search chose; it returns whether the sentence steps again (a finished search never
// does).
template <typename Visit>
absl::Status DecodeGreedy(Translator& t, std::span<const std::vector<int32_t>> sources,
                          Visit&& visit) {
  auto encoded = t.Encode(sources);
  if (!encoded.ok()) return encoded.status();
  DecodingOptions options;
  options.beam_size = 1;
  options.max_length = static_cast<int>(
      std::min<int64_t>(kQualityCheckMaxSteps, t.model().config.max_position_embeddings));
  std::vector<std::unique_ptr<SentenceSearch>> searches;
  std::vector<size_t> live;
  for (size_t i = 0; i < sources.size(); ++i) {
    searches.push_back(t.StartSearch((*encoded)[i], options));
    live.push_back(i);
  }
  std::vector<SentenceSearch*> active;
  for (int step = 0; !live.empty(); ++step) {
    active.clear();
    for (size_t i : live) active.push_back(searches[i].get());
    if (auto s = t.Step(active); !s.ok()) return s;
    const Tensor logits = t.CopyLastLogits();  // one row per live sentence, in `live` order
    if (logits.dim(0) != static_cast<int64_t>(live.size())) {
      return absl::InternalError("quality check: a step gave no row per live sentence");
    }
    std::vector<size_t> next;
    for (size_t r = 0; r < live.size(); ++r) {
      const SentenceSearch& search = *searches[live[r]];
      const float* row = logits.f32() + static_cast<int64_t>(r) * logits.dim(1);
      if (visit(live[r], step, row, logits.dim(1), search.partial_ids().back()) && !search.done()) {
        next.push_back(live[r]);
      }
    }
    live = std::move(next);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReferenceSteps> RecordReference(Translator& reference,
                                               std::span<const std::vector<int32_t>> sources) {
  const int32_t pad = reference.special_tokens().pad;
  ReferenceSteps steps;
  steps.sentences.resize(sources.size());
  auto visit = [&](size_t i, int, const float* row, int64_t vocab, int32_t generated) {
    const RowSoftmax s = Normalise(row, vocab, pad);
    steps.sentences[i].push_back({generated, s.best, row[s.best] - s.log_sum});
    return true;
  };
  if (auto s = DecodeGreedy(reference, sources, visit); !s.ok()) return s;
  return steps;
}

absl::StatusOr<QualityCheck> CompareWithReference(Translator& candidate,
                                                  std::span<const std::vector<int32_t>> sources,
                                                  const ReferenceSteps& reference) {
  if (reference.sentences.size() != sources.size()) {
    return absl::InvalidArgumentError("quality check: the reference decoded other sources");
  }
  const int32_t pad = candidate.special_tokens().pad;
  QualityCheck check;
  double difference_sum = 0;
  auto visit = [&](size_t i, int step, const float* row, int64_t vocab, int32_t generated) {
    const std::vector<ReferenceSteps::Step>& want = reference.sentences[i];
    const ReferenceSteps::Step& at = want[static_cast<size_t>(step)];
    const RowSoftmax s = Normalise(row, vocab, pad);
    ++check.positions;
    if (s.best == at.best) ++check.agreements;
    difference_sum += std::fabs(at.best_log_prob - (row[at.best] - s.log_sum));
    // The next step compares only after the same prefix: the same token, and the reference
    // still decoding.
    return generated == at.generated && static_cast<size_t>(step) + 1 < want.size();
  };
  if (auto s = DecodeGreedy(candidate, sources, visit); !s.ok()) return s;
  if (check.positions > 0) {
    check.mean_abs_log_prob_difference = difference_sum / static_cast<double>(check.positions);
  }
  return check;
}

absl::StatusOr<QualityCheck> RunQualityCheck(Translator& candidate, Translator& reference) {
  const auto sources = QualityCheckSources(reference);
  auto steps = RecordReference(reference, sources);
  if (!steps.ok()) return steps.status();
  return CompareWithReference(candidate, sources, *steps);
}

}  // namespace transerve
