// What a caller may ask of a search, and what it gets back. Semantics follow
// docs/architecture.md section 2.3: lengths count generated tokens including EOS and excluding
// the decoder start token; scores are sums of pad-excluded, renormalised log-probabilities.
#pragma once

#include <cstdint>
#include <vector>

namespace transerve {

// Whose search a model gets. Both rank beam candidates alike (2·beams per step, EOS finishing
// only from the first `beams` ranks) and pick the best finished hypothesis by
// sum / length^length_penalty; they differ in when a beam search stops and in what the length
// limit does.
enum class SearchRules {
  // Hugging Face's (early_stopping=False): once `beams` hypotheses have finished, go on while the
  // best running beam, normalised at the current length, could still beat the worst of them.
  // EOS is forced as the max_length-th token.
  kHuggingFace,
  // CTranslate2's (patience 1): stop as soon as `beams` hypotheses have finished, counting every
  // one; with length_penalty 0, as soon as the best candidate of a step finishes and
  // num_hypotheses have. The max_length-th token is chosen as any other and ends the
  // hypothesis as it is (no EOS), greedy too. What a CTranslate2 user's model gives under
  // CTranslate2.
  kCTranslate2,
};

struct DecodingOptions {
  int beam_size = 1;     // 1: greedy
  int max_length = 256;  // generated tokens incl. EOS; at this length EOS is forced (see rules)
  int min_length = 0;    // EOS is banned before this many tokens
  float length_penalty = 1.0f;  // beam scores are divided by length^length_penalty
  int num_hypotheses = 1;       // n-best (beam search only; at most beam_size)
  SearchRules rules = SearchRules::kHuggingFace;  // the model's, never a request's
  // Record each hypothesis's alignment: the cross-attention weights of the step that produced
  // each generated token (the model's alignment layer and heads, TransformerConfig).
  bool return_alignment = false;
  // The model's, never a request's (CTranslate2's replace_unknowns, which Argos Translate sets):
  // the alignment is recorded so that each generated unknown token can be replaced by the source
  // piece it attends most (Translator::UnknownReplacements).
  bool replace_unknowns = false;
  bool records_alignment() const { return return_alignment || replace_unknowns; }
  // The first generated token, forced with log-probability 0 (Hugging Face's
  // forced_bos_token_id: M2M-100's and NLLB's target language code); -1: none. Per sentence, so
  // one batch may hold several target languages.
  int32_t forced_first_token = -1;
  // Each step chooses among the sentence's vocabulary shortlist only (the model's vmap.txt,
  // VocabularyMap; CPU only): the output projection runs over those rows, and log-probabilities
  // are taken over them.
  bool use_vocabulary_map = false;
};

// The ids the search treats specially (from the model's config).
struct SpecialTokens {
  int32_t pad = 0;  // never generated (excluded from the softmax)
  int32_t eos = 0;
  int32_t decoder_start = 0;  // first decoder input (Marian: the pad id)
};

struct Hypothesis {
  std::vector<int32_t> ids;  // generated ids, EOS included when generated
  float score = 0.0f;
  // The sum of the generated ids' log-probabilities, before any length normalisation: divided
  // by ids.size() it is the mean log-probability, the hypothesis's confidence.
  float log_prob = 0.0f;
  // With records_alignment(): [ids.size(), source length] row-major; row s is what the step that
  // generated ids[s] attended to (each row sums to 1). Empty otherwise.
  std::vector<float> alignment;
};

// Best first.
struct SearchResult {
  std::vector<Hypothesis> hypotheses;
};

}  // namespace transerve
