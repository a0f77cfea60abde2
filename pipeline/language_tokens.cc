#include "pipeline/language_tokens.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "text/language_code.h"

namespace transerve {

LanguageTokens LanguageTokenTable::For(const std::string& source, const std::string& target) const {
  LanguageTokens tokens;
  tokens.target_forced = target_forced;
  if (const auto it = targets.find(target); it != targets.end()) tokens.target = it->second;
  if (const auto it = sources.find(source); it != sources.end()) tokens.source = it->second;
  return tokens;
}

absl::StatusOr<LanguageTokens> LanguageTokenTable::Resolve(const std::string& model,
                                                           const std::string& source,
                                                           const std::string& target) const {
  LanguageTokens tokens = For(source, target);
  if (target_forced && target.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("model '", model, "' translates into ",
                                                   targets.size(),
                                                   " languages: name one in target_language"));
  }
  if (!target.empty() && !targets.empty() && tokens.target.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", model, "' does not translate into '", target, "'"));
  }
  if (!sources.empty() && !source.empty() && tokens.source.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", model, "' does not read '", source, "'"));
  }
  return tokens;
}

LanguageTokenTable LanguageCodeTable(const std::vector<std::string>& codes) {
  LanguageTokenTable table;
  for (const std::string& token : codes) {
    std::string_view code = token;
    if (code.size() > 4 && code.starts_with("__") && code.ends_with("__")) {
      code = code.substr(2, code.size() - 4);
    }
    const std::string lang = text::CanonicalLanguage(code);
    if (lang.empty()) continue;
    table.sources.emplace(lang, token);
    table.targets.emplace(lang, token);
  }
  table.target_forced = !codes.empty();
  return table;
}

LanguageTokenTable ReadLanguageTokens(const MarianTokenizer& tok) {
  if (!tok.language_tokens().empty()) return LanguageCodeTable(tok.language_tokens());
  LanguageTokenTable table;
  for (int64_t id = 0; id < tok.target_vocab_size(); ++id) {
    const std::string_view piece = tok.TargetIdToPiece(static_cast<int32_t>(id));
    const std::string lang = text::TargetTokenLanguage(piece);
    if (!lang.empty()) table.targets.emplace(lang, std::string(piece));
  }
  return table;
}

absl::Status ApplyLanguageTokens(const MarianTokenizer& tokenizer, const LanguageTokens& tokens,
                                 SegmentSettings* settings, DecodingOptions* options) {
  settings->source_token = tokens.source;
  if (!tokens.target_forced) {
    settings->target_token = tokens.target;
    return absl::OkStatus();
  }
  if (tokens.target.empty()) return absl::OkStatus();
  options->forced_first_token = tokenizer.LanguageTokenId(tokens.target);
  if (options->forced_first_token < 0) {
    return absl::InternalError(
        absl::StrCat("the model has no token for its target language \"", tokens.target, "\""));
  }
  return absl::OkStatus();
}

}  // namespace transerve
