#include "model/decoding/logits_processing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/ops/cpu/vector_math.h"

namespace transerve {

StepRule RuleForStep(const DecodingOptions& options, int generated) {
  StepRule rule;
  rule.force_eos = generated + 1 >= options.max_length;
  rule.ban_eos = !rule.force_eos && generated + 1 < options.min_length;
  return rule;
}

namespace {

bool Allowed(int32_t token, const SpecialTokens& special, StepRule rule) {
  if (token == special.pad) return false;
  if (rule.ban_eos && token == special.eos) return false;
  return true;
}

}  // namespace

float LogNormalizer(std::span<const float> logits, const SpecialTokens& special, StepRule rule) {
  // Excluded tokens are skipped by running the (vectorised) loops over the ranges between them;
  // subtracting their terms afterwards would cancel catastrophically when pad dominates.
  const int32_t n = static_cast<int32_t>(logits.size());
  int32_t excluded[3] = {special.pad, rule.ban_eos ? special.eos : special.pad, n};
  std::sort(excluded, excluded + 2);
  const float* x = logits.data();
  float max_value = -std::numeric_limits<float>::infinity();
  for (int32_t begin = 0, e = 0; e < 3; begin = excluded[e] + 1, ++e) {
    if (excluded[e] > begin) {
      max_value = std::max(max_value, ops::cpu::MaxOf(x + begin, excluded[e] - begin));
    }
  }
  float sum = 0.0f;
  for (int32_t begin = 0, e = 0; e < 3; begin = excluded[e] + 1, ++e) {
    if (excluded[e] > begin) sum += ops::cpu::SumExp(x + begin, excluded[e] - begin, max_value);
  }
  return max_value + std::log(sum);
}

void TopTokens(std::span<const float> logits, const SpecialTokens& special, StepRule rule, int k,
               std::vector<TokenScore>* out) {
  out->clear();
  if (rule.force_eos) {
    out->push_back({special.eos, 0.0f});
    return;
  }
  // Keep the k best raw logits in a small array sorted best first. Blocks whose maximum does not
  // beat the k-th best so far are skipped with one vectorised max; the rest go token by token.
  std::vector<std::pair<float, int32_t>> best;
  best.reserve(static_cast<size_t>(k) + 1);
  float threshold = -std::numeric_limits<float>::infinity();
  auto consider = [&](int32_t t, float v) {
    if (static_cast<int>(best.size()) == k && !(v > threshold)) return;
    if (!Allowed(t, special, rule)) return;
    auto pos = std::find_if(best.begin(), best.end(), [v](const auto& e) { return v > e.first; });
    best.insert(pos, {v, t});
    if (static_cast<int>(best.size()) > k) best.pop_back();
    if (static_cast<int>(best.size()) == k) threshold = best.back().first;
  };
  constexpr int32_t kBlock = 256;
  const int32_t n = static_cast<int32_t>(logits.size());
  const float* x = logits.data();
  int32_t t = 0;
  for (; t + kBlock <= n; t += kBlock) {
    if (static_cast<int>(best.size()) == k && !(ops::cpu::MaxOf(x + t, kBlock) > threshold)) {
      continue;
    }
    for (int32_t i = t; i < t + kBlock; ++i) consider(i, x[i]);
  }
  for (; t < n; ++t) consider(t, x[t]);
  const float normalizer = LogNormalizer(logits, special, rule);
  for (const auto& [value, token] : best) out->push_back({token, value - normalizer});
}

}  // namespace transerve
