// MarianTokenizer: loading a checkpoint directory's tokenizer files and the v4 encode/decode
// pipeline. Where HF behaviour depends on the transformers version, v4 (>= 4.34, special tokens
// as AddedToken without lstrip/rstrip) is followed, as docs/marian-format.md section 6 says.
#include "model/tokenizer/marian_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/core/read_file.h"
#include "model/tokenizer/marian_text_rules.h"
#include "model/tokenizer/utf8.h"

namespace transerve {
namespace {

std::string JoinPath(const std::string& dir, const char* file) {
  return (std::filesystem::path(dir) / file).string();
}

// Settings read from tokenizer_config.json / special_tokens_map.json.
struct TokenizerSettings {
  std::optional<bool> separate_vocabs;
  std::optional<std::string> eos_token, unk_token, pad_token;
};

// Reads an optional JSON settings file; a missing file leaves `settings` unchanged.
absl::Status ReadSettings(const std::string& path, TokenizerSettings* settings) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return absl::OkStatus();
  absl::StatusOr<std::string> text = ReadWholeFile(path, "tokenizer settings");
  if (!text.ok()) return text.status();
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid ", path, ": not a JSON object"));
  }
  if (auto it = json.find("separate_vocabs"); it != json.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid ", path, ": \"separate_vocabs\" must be true or false"));
    }
    settings->separate_vocabs = it->get<bool>();
  }
  // A token is a string or an AddedToken object {"content": "...", ...}.
  auto read_token = [&](const char* key, std::optional<std::string>* out) -> absl::Status {
    const auto it = json.find(key);
    if (it == json.end() || it->is_null()) return absl::OkStatus();
    const nlohmann::json* value = &*it;
    if (value->is_object()) {
      const auto content = value->find("content");
      value = content == value->end() ? nullptr : &*content;
    }
    if (value == nullptr || !value->is_string() || value->get_ref<const std::string&>().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid ", path, ": \"", key, "\" must be a non-empty string"));
    }
    *out = value->get<std::string>();
    return absl::OkStatus();
  };
  if (auto s = read_token("eos_token", &settings->eos_token); !s.ok()) return s;
  if (auto s = read_token("unk_token", &settings->unk_token); !s.ok()) return s;
  if (auto s = read_token("pad_token", &settings->pad_token); !s.ok()) return s;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MarianTokenizer>> MarianTokenizer::Load(
    const std::string& model_dir) {
  std::unique_ptr<MarianTokenizer> tok(new MarianTokenizer());

  // HF passes tokenizer_config.json to __init__, then special_tokens_map.json overrides tokens.
  TokenizerSettings settings;
  if (auto s = ReadSettings(JoinPath(model_dir, "tokenizer_config.json"), &settings); !s.ok()) {
    return s;
  }
  if (auto s = ReadSettings(JoinPath(model_dir, "special_tokens_map.json"), &settings); !s.ok()) {
    return s;
  }
  tok->separate_vocabs_ = settings.separate_vocabs.value_or(false);
  if (settings.eos_token) tok->eos_token_ = *settings.eos_token;
  if (settings.unk_token) tok->unk_token_ = *settings.unk_token;
  if (settings.pad_token) tok->pad_token_ = *settings.pad_token;

  const std::string vocab_path = JoinPath(model_dir, "vocab.json");
  auto vocab = MarianVocab::LoadFile(vocab_path);
  if (!vocab.ok()) return vocab.status();
  tok->source_vocab_ = *std::move(vocab);
  if (tok->separate_vocabs_) {
    auto target = MarianVocab::LoadFile(JoinPath(model_dir, "target_vocab.json"));
    if (!target.ok()) return target.status();
    tok->target_vocab_ = *std::move(target);
  }

  // Special ids come from vocab.json even with separate vocabularies (HF converts tokens with
  // the source encoder).
  for (auto [token, id] :
       {std::pair{&tok->eos_token_, &tok->eos_id_}, std::pair{&tok->unk_token_, &tok->unk_id_},
        std::pair{&tok->pad_token_, &tok->pad_id_}}) {
    *id = tok->source_vocab_.Find(*token);
    if (*id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "vocabulary ", vocab_path, " has no entry for the special token \"", *token, "\""));
    }
    const std::string& name = *token;  // clang 14 cannot capture a structured binding
    if (std::none_of(tok->special_tokens_.begin(), tok->special_tokens_.end(),
                     [&](const auto& t) { return t.first == name; })) {
      tok->special_tokens_.emplace_back(*token, *id);
    }
  }

  auto source_spm = SentencePieceModel::LoadFromFile(JoinPath(model_dir, "source.spm"));
  if (!source_spm.ok()) return source_spm.status();
  tok->source_spm_ = *std::move(source_spm);
  auto target_spm = SentencePieceModel::LoadFromFile(JoinPath(model_dir, "target.spm"));
  if (!target_spm.ok()) return target_spm.status();
  tok->target_spm_ = *std::move(target_spm);
  return tok;
}

absl::StatusOr<std::unique_ptr<MarianTokenizer>> MarianTokenizer::FromParts(Parts parts) {
  std::unique_ptr<MarianTokenizer> tok(new MarianTokenizer());
  tok->source_vocab_ = std::move(parts.source_vocab);
  tok->separate_vocabs_ = parts.target_vocab.has_value();
  if (parts.target_vocab) tok->target_vocab_ = *std::move(parts.target_vocab);
  tok->source_spm_ = std::move(parts.source_spm);
  tok->target_spm_ = std::move(parts.target_spm);
  tok->eos_token_ = parts.eos_token;
  tok->unk_token_ = parts.unk_token;
  tok->pad_token_.clear();
  tok->pad_id_ = parts.pad_id;
  tok->append_eos_ = parts.append_eos;
  tok->marian_text_ = parts.marian_text;
  tok->strip_decoded_ = parts.strip_decoded;
  auto find = [&](const std::string& token, int32_t* id) -> absl::Status {
    *id = tok->source_vocab_.Find(token);
    if (*id < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the source vocabulary has no entry for the special token \"", token, "\""));
    }
    tok->special_tokens_.emplace_back(token, *id);
    return absl::OkStatus();
  };
  if (auto s = find(tok->eos_token_, &tok->eos_id_); !s.ok()) return s;
  if (tok->unk_token_ != tok->eos_token_) {
    if (auto s = find(tok->unk_token_, &tok->unk_id_); !s.ok()) return s;
  }
  if (parts.bos_token) {
    if (auto s = find(*parts.bos_token, &tok->bos_id_); !s.ok()) return s;
  }
  for (const std::string& token : parts.language_tokens) {
    const int32_t id = tok->source_vocab_.Find(token);
    if (id < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the vocabulary has no entry for the language token \"", token, "\""));
    }
    tok->hidden_ids_.push_back(id);
  }
  tok->language_tokens_ = std::move(parts.language_tokens);
  for (const std::string& token : parts.hidden_tokens) {
    if (const int32_t id = tok->source_vocab_.Find(token); id >= 0) tok->hidden_ids_.push_back(id);
  }
  std::sort(tok->hidden_ids_.begin(), tok->hidden_ids_.end());
  return tok;
}

void MarianTokenizer::EncodeChunk(std::string_view chunk, std::vector<int32_t>* ids) const {
  // v4: a code at the very start is one token; then every `>>.+<<` span is deleted.
  if (const size_t code_len = marian_text::MatchLanguageCodeAt(chunk, 0); code_len > 0) {
    ids->push_back(SourceId(chunk.substr(0, code_len)));
  }
  std::string rest;
  if (chunk.find(">>") != std::string_view::npos) {
    rest = marian_text::RemoveLanguageCodes(chunk);
    chunk = rest;
  }
  source_spm_->EncodeToPieces(chunk,
                              [&](std::string_view piece) { ids->push_back(SourceId(piece)); });
}

absl::StatusOr<std::vector<int32_t>> MarianTokenizer::Encode(std::string_view text) const {
  size_t bad = 0;
  if (!utf8::IsValid(text, &bad)) {
    return absl::InvalidArgumentError(
        absl::StrCat("text is not valid UTF-8 (malformed sequence at byte ", bad, ")"));
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (bos_id_ >= 0) ids.push_back(bos_id_);
  if (!marian_text_) {
    source_spm_->EncodeToPieces(text,
                                [&](std::string_view piece) { ids.push_back(SourceId(piece)); });
    FinishSource(&ids);
    return ids;
  }

  // Split on special tokens, leftmost first and longest at equal starts. `next` caches each
  // token's next occurrence so a text full of tokens is still scanned in linear time.
  std::vector<size_t> next(special_tokens_.size());
  for (size_t t = 0; t < special_tokens_.size(); ++t) next[t] = text.find(special_tokens_[t].first);
  size_t pos = 0;
  for (;;) {
    size_t best_start = std::string_view::npos;
    size_t best = 0;
    for (size_t t = 0; t < special_tokens_.size(); ++t) {
      if (next[t] != std::string_view::npos && next[t] < pos) {
        next[t] = text.find(special_tokens_[t].first, pos);
      }
      if (next[t] == std::string_view::npos) continue;
      if (next[t] < best_start ||
          (next[t] == best_start &&
           special_tokens_[t].first.size() > special_tokens_[best].first.size())) {
        best_start = next[t];
        best = t;
      }
    }
    const size_t chunk_end = best_start == std::string_view::npos ? text.size() : best_start;
    if (chunk_end > pos) EncodeChunk(text.substr(pos, chunk_end - pos), &ids);
    if (best_start == std::string_view::npos) break;
    ids.push_back(special_tokens_[best].second);
    pos = best_start + special_tokens_[best].first.size();
  }
  FinishSource(&ids);
  return ids;
}

absl::StatusOr<std::vector<int32_t>> MarianTokenizer::Encode(
    std::string_view text, std::string_view language_token) const {
  if (language_token.empty()) return Encode(text);
  const int32_t code = LanguageTokenId(language_token);
  if (code < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", std::string(language_token), "\" is not one of this model's language tokens"));
  }
  auto ids = Encode(text);
  if (!ids.ok()) return ids.status();
  const size_t first = bos_id_ >= 0 ? 1 : 0;
  if (ids->size() > first + 1) ids->insert(ids->begin() + static_cast<ptrdiff_t>(first), code);
  return ids;
}

int32_t MarianTokenizer::LanguageTokenId(std::string_view token) const {
  if (std::find(language_tokens_.begin(), language_tokens_.end(), token) ==
      language_tokens_.end()) {
    return -1;
  }
  return source_vocab_.Find(token);
}

void MarianTokenizer::FinishSource(std::vector<int32_t>* ids) const {
  if (append_eos_) {
    ids->push_back(eos_id_);
  } else if (ids->empty() || (ids->size() == 1 && (*ids)[0] == bos_id_)) {
    *ids = {eos_id_};  // no pieces: the empty source every caller recognises
  }
}

std::string MarianTokenizer::Decode(std::span<const int32_t> ids) const { return Decode(ids, {}); }

std::string MarianTokenizer::Decode(std::span<const int32_t> ids,
                                    std::span<const std::string> replacements) const {
  std::vector<std::string_view> pieces;
  pieces.reserve(ids.size());
  const MarianVocab& vocab = target_vocab();
  for (size_t t = 0; t < ids.size(); ++t) {
    const int32_t id = ids[t];
    if (id == unk_id_ && t < replacements.size() && !replacements[t].empty()) {
      pieces.push_back(replacements[t]);
      continue;
    }
    if (id == eos_id_ || id == pad_id_ || id == unk_id_ || id == bos_id_ ||
        std::binary_search(hidden_ids_.begin(), hidden_ids_.end(), id)) {
      continue;  // skip_special_tokens
    }
    if (const std::string* piece = vocab.IdToPiece(id)) pieces.push_back(*piece);
  }
  std::string text = target_spm_->DecodePieceViews(pieces);
  if (!strip_decoded_) return text;
  return std::string(marian_text::StripPythonWhitespace(text));
}

std::vector<std::string> MarianTokenizer::SourcePieces(std::string_view text) const {
  if (marian_text_) return {};
  return source_spm_->EncodeToPieces(text);
}

std::string_view MarianTokenizer::SourceIdToPiece(int32_t id) const {
  const std::string* piece = source_vocab_.IdToPiece(id);
  return piece != nullptr ? std::string_view(*piece) : std::string_view(unk_token_);
}

std::string_view MarianTokenizer::TargetIdToPiece(int32_t id) const {
  const std::string* piece = target_vocab().IdToPiece(id);
  return piece != nullptr ? std::string_view(*piece) : std::string_view(unk_token_);
}

}  // namespace transerve
