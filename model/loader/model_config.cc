// config.json / generation_config.json readers: strict types, no silent architectural defaults.
#include "model/loader/model_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model/loader/strict_json.h"

namespace transerve {
namespace {

using Json = nlohmann::json;

// Typed access to one JSON object with errors that name the file and key. JSON null counts as
// absent for optional keys, since HF writes null for "not set" (e.g. decoder_vocab_size).
class KeyReader {
 public:
  KeyReader(const Json& object, const std::string& path) : object_(object), path_(path) {}

  absl::Status Error(absl::string_view key, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": key \"", key, "\" ", what));
  }

  absl::StatusOr<int64_t> RequiredInt(absl::string_view key) const {
    const Json* v = Find(key);
    if (v == nullptr) return Missing(key);
    return Int(key, *v);
  }
  absl::StatusOr<std::optional<int64_t>> OptionalInt(absl::string_view key) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) return std::optional<int64_t>();
    absl::StatusOr<int64_t> i = Int(key, *v);
    if (!i.ok()) return i.status();
    return std::optional<int64_t>(*i);
  }
  absl::StatusOr<bool> RequiredBool(absl::string_view key) const {
    const Json* v = Find(key);
    if (v == nullptr) return Missing(key);
    return Bool(key, *v);
  }
  absl::StatusOr<std::optional<bool>> OptionalBool(absl::string_view key) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) return std::optional<bool>();
    absl::StatusOr<bool> b = Bool(key, *v);
    if (!b.ok()) return b.status();
    return std::optional<bool>(*b);
  }
  absl::StatusOr<std::string> RequiredString(absl::string_view key) const {
    const Json* v = Find(key);
    if (v == nullptr) return Missing(key);
    return String(key, *v);
  }
  absl::StatusOr<std::optional<std::string>> OptionalString(absl::string_view key) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) return std::optional<std::string>();
    absl::StatusOr<std::string> s = String(key, *v);
    if (!s.ok()) return s.status();
    return std::optional<std::string>(*s);
  }
  absl::StatusOr<std::optional<double>> OptionalNumber(absl::string_view key) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) return std::optional<double>();
    if (!v->is_number()) return TypeError(key, "a number", *v);
    return std::optional<double>(v->get<double>());
  }
  // nullptr when absent; a null value is returned as is.
  const Json* Find(absl::string_view key) const {
    auto it = object_.find(std::string(key));
    return it == object_.end() ? nullptr : &*it;
  }
  const std::string& path() const { return path_; }

 private:
  absl::Status Missing(absl::string_view key) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": missing required key \"", key, "\""));
  }
  absl::Status TypeError(absl::string_view key, absl::string_view expected, const Json& v) const {
    return Error(key, absl::StrCat("must be ", expected, ", got ", DescribeJsonValue(v)));
  }
  absl::StatusOr<int64_t> Int(absl::string_view key, const Json& v) const {
    // Floats (even 512.0) are refused: a config that writes sizes as floats is not one we know.
    if (!v.is_number_integer()) return TypeError(key, "an integer", v);
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(key, "is too large");
    }
    return v.get<int64_t>();
  }
  absl::StatusOr<bool> Bool(absl::string_view key, const Json& v) const {
    if (!v.is_boolean()) return TypeError(key, "true or false", v);
    return v.get<bool>();
  }
  absl::StatusOr<std::string> String(absl::string_view key, const Json& v) const {
    if (!v.is_string()) return TypeError(key, "a string", v);
    return v.get<std::string>();
  }

  const Json& object_;
  const std::string& path_;
};

// Abseil 20220623 ships no ASSIGN_OR_RETURN; this local one keeps the validation code linear.
#define TS_CONCAT_INNER(a, b) a##b
#define TS_CONCAT(a, b) TS_CONCAT_INNER(a, b)
#define TS_ASSIGN_OR_RETURN(lhs, expr)                          \
  auto TS_CONCAT(status_or_, __LINE__) = (expr);                \
  if (!TS_CONCAT(status_or_, __LINE__).ok()) {                  \
    return std::move(TS_CONCAT(status_or_, __LINE__)).status(); \
  }                                                             \
  lhs = *std::move(TS_CONCAT(status_or_, __LINE__))

absl::StatusOr<Json> ReadObject(const std::string& path) {
  absl::StatusOr<Json> json = ReadJsonFileStrict(path);
  if (!json.ok()) return json.status();
  if (!json->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a JSON object, got ", DescribeJsonValue(*json)));
  }
  return json;
}

absl::StatusOr<Activation> ParseActivation(const KeyReader& r, const std::string& name) {
  // The names ACT2FN maps to these four functions; anything else would need its own kernel.
  if (name == "swish" || name == "silu") return Activation::kSwish;
  if (name == "relu") return Activation::kRelu;
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  return r.Error("activation_function",
                 absl::StrCat("names unsupported activation_function \"", name,
                              "\" (supported: swish, silu, relu, gelu, gelu_new, "
                              "gelu_pytorch_tanh)"));
}

absl::Status CheckTokenId(const KeyReader& r, absl::string_view key, int64_t id, int64_t limit,
                          absl::string_view vocab_desc) {
  if (id < 0 || id >= limit) {
    return r.Error(key, absl::StrCat("is ", id, ", outside ", vocab_desc, " [0, ", limit, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<GenerationDefaults> ParseGeneration(const Json& object, const std::string& path) {
  const KeyReader r(object, path);
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  GenerationDefaults g;
  auto int_in_range = [&](absl::string_view key, int64_t lo,
                          const char* rule) -> absl::StatusOr<std::optional<int>> {
    absl::StatusOr<std::optional<int64_t>> v = r.OptionalInt(key);
    if (!v.ok()) return v.status();
    if (!v->has_value()) return std::optional<int>();
    if (**v < lo || **v > kIntMax) return r.Error(key, absl::StrCat("is ", **v, "; ", rule));
    return std::optional<int>(static_cast<int>(**v));
  };

  TS_ASSIGN_OR_RETURN(std::optional<int> num_beams, int_in_range("num_beams", 1, "must be >= 1"));
  if (num_beams) g.num_beams = *num_beams;

  TS_ASSIGN_OR_RETURN(
      std::optional<int> max_length,
      int_in_range("max_length", 2, "must be >= 2 (it counts the decoder start token)"));
  if (max_length) g.max_length = *max_length - 1;
  TS_ASSIGN_OR_RETURN(std::optional<int> max_new_tokens,
                      int_in_range("max_new_tokens", 1, "must be >= 1"));
  if (max_new_tokens) g.max_length = *max_new_tokens;  // HF lets it override max_length.

  TS_ASSIGN_OR_RETURN(std::optional<int> min_length, int_in_range("min_length", 0, "must be >= 0"));
  if (min_length) g.min_length = *min_length;
  TS_ASSIGN_OR_RETURN(std::optional<int> min_new_tokens,
                      int_in_range("min_new_tokens", 0, "must be >= 0"));
  // HF only installs the min_new_tokens processor for positive values; both processors apply.
  if (min_new_tokens && *min_new_tokens > 0) {
    if (*min_new_tokens >= kIntMax) return r.Error("min_new_tokens", "is too large");
    g.min_length = std::max(g.min_length, *min_new_tokens + 1);
  }

  TS_ASSIGN_OR_RETURN(std::optional<double> length_penalty, r.OptionalNumber("length_penalty"));
  if (length_penalty) {
    if (!std::isfinite(static_cast<float>(*length_penalty))) {
      return r.Error("length_penalty", "must be a finite number");
    }
    g.length_penalty = static_cast<float>(*length_penalty);
  }

  TS_ASSIGN_OR_RETURN(std::optional<int> num_return_sequences,
                      int_in_range("num_return_sequences", 1, "must be >= 1"));
  if (num_return_sequences) g.num_return_sequences = *num_return_sequences;
  if (g.num_return_sequences > g.num_beams) {
    // HF raises the same error: beam search cannot return more hypotheses than it keeps.
    return r.Error(
        "num_return_sequences",
        absl::StrCat("is ", g.num_return_sequences, ", more than num_beams (", g.num_beams, ")"));
  }

  const Json* bad = r.Find("bad_words_ids");
  if (bad != nullptr && !bad->is_null()) {
    if (!bad->is_array()) {
      return r.Error("bad_words_ids", absl::StrCat("must be a list of token-id lists, got ",
                                                   DescribeJsonValue(*bad)));
    }
    for (const Json& entry : *bad) {
      if (!entry.is_array() || entry.empty()) {
        return r.Error("bad_words_ids", absl::StrCat("must hold non-empty lists of token ids, got ",
                                                     DescribeJsonValue(entry)));
      }
      if (entry.size() != 1) {
        // Multi-token bans need prefix matching during search, which we do not implement.
        return r.Error("bad_words_ids",
                       absl::StrCat("has a ", entry.size(),
                                    "-token entry; only single-token entries are supported"));
      }
      const Json& id = entry[0];
      if (!id.is_number_integer() || (id.is_number_unsigned() && id.get<uint64_t>() > kIntMax) ||
          (!id.is_number_unsigned() && id.get<int64_t>() < 0)) {
        return r.Error("bad_words_ids", absl::StrCat("must hold token ids in [0, ", kIntMax,
                                                     "], got ", DescribeJsonValue(id)));
      }
      g.bad_words_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
  return g;
}

}  // namespace

absl::StatusOr<MarianConfig> LoadMarianConfig(const std::string& config_json_path) {
  TS_ASSIGN_OR_RETURN(const Json object, ReadObject(config_json_path));
  const KeyReader r(object, config_json_path);
  MarianConfig c;

  // Checked first: another model family's config would otherwise fail on some unrelated key.
  TS_ASSIGN_OR_RETURN(std::optional<std::string> model_type, r.OptionalString("model_type"));
  if (model_type && *model_type == "m2m_100") {
    c.architecture = MarianConfig::Architecture::kM2m100;
    c.family = "m2m_100 transformer";
  } else if (model_type && *model_type != "marian") {
    return r.Error("model_type", absl::StrCat("is \"", *model_type,
                                              "\"; \"marian\" and \"m2m_100\" (M2M-100, "
                                              "NLLB-200) are supported"));
  }
  // A dead key in HF, but a file that claims pre-norm was trained pre-norm and would produce
  // garbage under the post-norm graph HF (and we) run.
  TS_ASSIGN_OR_RETURN(std::optional<bool> normalize_before, r.OptionalBool("normalize_before"));
  if (normalize_before.value_or(false)) {
    return r.Error("normalize_before",
                   "is true: pre-norm models are not supported (Marian here is post-norm only)");
  }

  struct SizeKey {
    const char* key;
    int64_t* field;
  };
  const SizeKey sizes[] = {
      {"vocab_size", &c.vocab_size},
      {"d_model", &c.d_model},
      {"encoder_layers", &c.encoder_layers},
      {"decoder_layers", &c.decoder_layers},
      {"encoder_attention_heads", &c.encoder_attention_heads},
      {"decoder_attention_heads", &c.decoder_attention_heads},
      {"encoder_ffn_dim", &c.encoder_ffn_dim},
      {"decoder_ffn_dim", &c.decoder_ffn_dim},
      {"max_position_embeddings", &c.max_position_embeddings},
  };
  for (const SizeKey& s : sizes) {
    TS_ASSIGN_OR_RETURN(*s.field, r.RequiredInt(s.key));
    if (*s.field <= 0) return r.Error(s.key, absl::StrCat("is ", *s.field, "; must be positive"));
  }
  TS_ASSIGN_OR_RETURN(std::optional<int64_t> decoder_vocab_size,
                      r.OptionalInt("decoder_vocab_size"));
  c.decoder_vocab_size = decoder_vocab_size.value_or(c.vocab_size);
  if (c.decoder_vocab_size <= 0) {
    return r.Error("decoder_vocab_size",
                   absl::StrCat("is ", c.decoder_vocab_size, "; must be positive"));
  }
  // Token ids are int32 throughout the engine.
  constexpr int64_t kMaxVocab = std::numeric_limits<int32_t>::max();
  if (c.vocab_size > kMaxVocab) return r.Error("vocab_size", "is too large for int32 token ids");
  if (c.decoder_vocab_size > kMaxVocab) {
    return r.Error("decoder_vocab_size", "is too large for int32 token ids");
  }
  if (c.d_model % c.encoder_attention_heads != 0) {
    return r.Error("encoder_attention_heads",
                   absl::StrCat("is ", c.encoder_attention_heads,
                                ", which does not divide d_model (", c.d_model, ")"));
  }
  if (c.d_model % c.decoder_attention_heads != 0) {
    return r.Error("decoder_attention_heads",
                   absl::StrCat("is ", c.decoder_attention_heads,
                                ", which does not divide d_model (", c.d_model, ")"));
  }

  TS_ASSIGN_OR_RETURN(const std::string activation, r.RequiredString("activation_function"));
  TS_ASSIGN_OR_RETURN(c.activation, ParseActivation(r, activation));
  TS_ASSIGN_OR_RETURN(c.scale_embedding, r.RequiredBool("scale_embedding"));
  TS_ASSIGN_OR_RETURN(std::optional<bool> share,
                      r.OptionalBool("share_encoder_decoder_embeddings"));
  c.share_encoder_decoder_embeddings = share.value_or(true);
  TS_ASSIGN_OR_RETURN(std::optional<bool> tie, r.OptionalBool("tie_word_embeddings"));
  c.tie_word_embeddings = tie.value_or(true);
  if (c.share_encoder_decoder_embeddings && c.decoder_vocab_size != c.vocab_size) {
    // One shared table cannot have two heights.
    return r.Error("decoder_vocab_size",
                   absl::StrCat("is ", c.decoder_vocab_size, " but vocab_size is ", c.vocab_size,
                                " and share_encoder_decoder_embeddings is true"));
  }

  // pad and eos appear on both sides (source padding, source-final eos; decoder start = pad,
  // generated eos); decoder_start and forced_eos only on the decoder side.
  const int64_t both_sides = std::min(c.vocab_size, c.decoder_vocab_size);
  TS_ASSIGN_OR_RETURN(const int64_t pad, r.RequiredInt("pad_token_id"));
  if (absl::Status s = CheckTokenId(r, "pad_token_id", pad, both_sides, "both vocabularies");
      !s.ok()) {
    return s;
  }
  TS_ASSIGN_OR_RETURN(const int64_t eos, r.RequiredInt("eos_token_id"));
  if (absl::Status s = CheckTokenId(r, "eos_token_id", eos, both_sides, "both vocabularies");
      !s.ok()) {
    return s;
  }
  TS_ASSIGN_OR_RETURN(const int64_t start, r.RequiredInt("decoder_start_token_id"));
  if (absl::Status s = CheckTokenId(r, "decoder_start_token_id", start, c.decoder_vocab_size,
                                    "the decoder vocabulary");
      !s.ok()) {
    return s;
  }
  TS_ASSIGN_OR_RETURN(std::optional<int64_t> forced, r.OptionalInt("forced_eos_token_id"));
  const int64_t forced_eos = forced.value_or(eos);
  if (absl::Status s = CheckTokenId(r, "forced_eos_token_id", forced_eos, c.decoder_vocab_size,
                                    "the decoder vocabulary");
      !s.ok()) {
    return s;
  }
  c.pad_token_id = static_cast<int32_t>(pad);
  c.eos_token_id = static_cast<int32_t>(eos);
  c.decoder_start_token_id = static_cast<int32_t>(start);
  c.forced_eos_token_id = static_cast<int32_t>(forced_eos);
  return c;
}

absl::StatusOr<GenerationDefaults> LoadGenerationDefaults(const std::string& model_dir) {
  const std::string generation_path = absl::StrCat(model_dir, "/generation_config.json");
  absl::StatusOr<Json> generation = ReadObject(generation_path);
  if (generation.ok()) return ParseGeneration(*generation, generation_path);
  if (!absl::IsNotFound(generation.status())) return generation.status();

  // Checkpoints from before generation_config.json kept these keys in config.json.
  const std::string config_path = absl::StrCat(model_dir, "/config.json");
  absl::StatusOr<Json> config = ReadObject(config_path);
  if (!config.ok()) {
    if (absl::IsNotFound(config.status())) {
      return absl::NotFoundError(absl::StrCat(model_dir,
                                              ": neither generation_config.json nor config.json "
                                              "exists"));
    }
    return config.status();
  }
  return ParseGeneration(*config, config_path);
}

#undef TS_ASSIGN_OR_RETURN
#undef TS_CONCAT
#undef TS_CONCAT_INNER

}  // namespace transerve
