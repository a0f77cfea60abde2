// Readers for a Marian checkpoint's config.json (architecture; every key that shapes the model is
// required) and its generation defaults (generation_config.json, else legacy config.json keys).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/core/activation.h"            // Activation, ActivationName
#include "model/decoding/decoding_options.h"  // SearchRules

namespace transerve {

// The architecture of a Marian model. Zero-initialised only so a struct is never indeterminate:
// these are not defaults, LoadMarianConfig sets every field from the file.
struct MarianConfig {
  int64_t vocab_size = 0;
  int64_t decoder_vocab_size = 0;
  int64_t d_model = 0;
  int64_t encoder_layers = 0;
  int64_t decoder_layers = 0;
  int64_t encoder_attention_heads = 0;
  int64_t decoder_attention_heads = 0;
  int64_t encoder_ffn_dim = 0;
  int64_t decoder_ffn_dim = 0;
  int64_t max_position_embeddings = 0;
  Activation activation = Activation::kSwish;
  bool scale_embedding = false;
  bool share_encoder_decoder_embeddings = true;
  bool tie_word_embeddings = true;
  int32_t pad_token_id = 0;
  int32_t eos_token_id = 0;
  int32_t decoder_start_token_id = 0;
  int32_t forced_eos_token_id = 0;  // eos_token_id when absent or null.
  // What the model is, for listings: set by the loader of the directory's format.
  std::string family = "marian transformer";
  // config.json's model_type. kM2m100 ("m2m_100": M2M-100 and NLLB-200) differs from Marian in
  // pre-norm blocks with a final norm per stack, offset sinusoidal positions
  // (M2mSinusoidalPositions) and no final_logits_bias.
  enum class Architecture { kMarian, kM2m100 };
  Architecture architecture = Architecture::kMarian;
};

// Generation settings a checkpoint ships with. Lengths use OUR convention: counts of generated
// tokens including EOS, excluding the decoder start token.
struct GenerationDefaults {
  int num_beams = 1;
  // HF max_length counts the start token, so this is HF max_length - 1 (or HF max_new_tokens when
  // given, which takes precedence in HF). 0 = unset.
  int max_length = 0;
  // HF min_length bans EOS while the sequence incl. the start token is shorter than it, which is
  // the same number in our convention; HF min_new_tokens n means n + 1 here. The larger wins.
  int min_length = 0;
  float length_penalty = 1.0f;
  int num_return_sequences = 1;
  // When a beam search stops: Hugging Face's rule for its checkpoints, CTranslate2's for its
  // directories, so each gives what its own runtime gives.
  SearchRules search_rules = SearchRules::kHuggingFace;
  // CTranslate2's replace_unknowns (DecodingOptions::replace_unknowns): set for Argos Translate
  // packages, which Argos Translate translates with it.
  bool replace_unknowns = false;
  // Token ids that may never be generated (HF bad_words_ids restricted to one-token entries).
  std::vector<int32_t> bad_words_ids;
};

// Reads and validates config.json. Required: vocab_size, d_model, encoder_layers, decoder_layers,
// encoder_attention_heads, decoder_attention_heads, encoder_ffn_dim, decoder_ffn_dim,
// max_position_embeddings, activation_function, scale_embedding, pad_token_id, eos_token_id,
// decoder_start_token_id. Optional: decoder_vocab_size (= vocab_size), share_encoder_decoder_
// embeddings (true), tie_word_embeddings (true), forced_eos_token_id (= eos), model_type (must be
// "marian"), normalize_before (must not be true). Other keys are ignored. NOT_FOUND if the file is
// missing; INVALID_ARGUMENT otherwise, naming the file and the key.
absl::StatusOr<MarianConfig> LoadMarianConfig(const std::string& config_json_path);

// Reads model_dir/generation_config.json when it exists (keys it lacks take the built-in values,
// as in HF), else the legacy generation keys of model_dir/config.json. NOT_FOUND if neither file
// exists; INVALID_ARGUMENT for malformed or out-of-range values, naming the file and the key.
absl::StatusOr<GenerationDefaults> LoadGenerationDefaults(const std::string& model_dir);

}  // namespace transerve
