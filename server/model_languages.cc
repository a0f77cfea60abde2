#include "server/model_languages.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "model/core/read_file.h"
#include "nlohmann/json.hpp"
#include "text/language_code.h"

namespace transerve {
namespace {

// "en-de" -> {"en", "de"}; false when it is not two codes.
bool ParsePair(const std::string& pair, std::string* source, std::string* target) {
  const std::vector<std::string> parts = absl::StrSplit(pair, '-');
  if (parts.size() != 2) return false;
  *source = text::CanonicalLanguage(parts[0]);
  *target = text::CanonicalLanguage(parts[1]);
  return !source->empty() && !target->empty();
}

// The pair a JSON file beside the model names under two keys: tokenizer_config.json's
// source_lang / target_lang, an Argos Translate package's metadata.json from_code / to_code.
void FromJsonKeys(const std::string& dir, const char* file, const char* source_key,
                  const char* target_key, ModelLanguages* l) {
  auto text = ReadWholeFile(dir + "/" + file, file);
  if (!text.ok()) return;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  auto code = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? text::CanonicalLanguage(it->get<std::string>())
                                            : std::string();
  };
  l->source = code(source_key);
  l->target = code(target_key);
}

// opus-mt-en-de, opus-mt-tc-big-en-de, Helsinki-NLP--opus-mt-en-mul: the last two parts.
void FromDirectoryName(const std::string& dir, ModelLanguages* l) {
  const std::string name = std::filesystem::path(dir).lexically_normal().filename().string();
  const size_t at = name.find("opus-mt-");
  if (at == std::string::npos) return;
  const std::vector<std::string> parts = absl::StrSplit(name.substr(at + 8), '-');
  if (parts.size() < 2) return;
  std::string s, t;
  if (ParsePair(absl::StrCat(parts[parts.size() - 2], "-", parts.back()), &s, &t)) {
    l->source = s;
    l->target = t;
  }
}

}  // namespace

std::vector<std::string> ModelLanguages::targets() const {
  std::vector<std::string> out;
  for (const auto& [lang, token] : tokens.targets) out.push_back(lang);
  if (out.empty() && !target.empty()) out.push_back(target);
  return out;
}

bool ModelLanguages::ServesSource(std::string_view s) const {
  if (s.empty() || source == s) return true;
  return source == "mul" && (tokens.sources.empty() || tokens.sources.contains(std::string(s)));
}

bool ModelLanguages::Serves(std::string_view s, std::string_view t) const {
  const bool source_ok = ServesSource(s);
  const bool target_ok =
      tokens.targets.empty() ? target == t : tokens.targets.contains(std::string(t));
  return source_ok && target_ok;
}

absl::StatusOr<ModelLanguages> ReadModelLanguages(const std::string& model_dir,
                                                  const std::string& pair) {
  ModelLanguages l;
  if (!pair.empty()) {
    if (!ParsePair(pair, &l.source, &l.target)) {
      return absl::InvalidArgumentError(absl::StrCat("language pair '", pair, "' for ", model_dir,
                                                     " is not SRC-TGT (e.g. en-de)"));
    }
  } else {
    FromJsonKeys(model_dir, "tokenizer_config.json", "source_lang", "target_lang", &l);
    if (l.source.empty() || l.target.empty()) {
      FromJsonKeys(model_dir, "metadata.json", "from_code", "to_code", &l);
    }
    if (l.source.empty() || l.target.empty()) FromDirectoryName(model_dir, &l);
  }
  return l;
}

absl::StatusOr<ModelLanguages> ReadModelLanguages(const std::string& model_dir,
                                                  const std::string& pair,
                                                  const MarianTokenizer& tok) {
  return ReadModelLanguages(model_dir, pair, ReadLanguageTokens(tok));
}

absl::StatusOr<ModelLanguages> ReadModelLanguages(const std::string& model_dir,
                                                  const std::string& pair,
                                                  const LanguageTokenTable& tokens) {
  auto read = ReadModelLanguages(model_dir, pair);
  if (!read.ok()) return read.status();
  ModelLanguages l = *std::move(read);
  l.tokens = tokens;
  if (l.tokens.target_forced) {
    l.source = "mul";
    l.target = "mul";
    return l;
  }
  // One language token in a bilingual model's vocabulary is not a multilingual target.
  if (l.tokens.targets.size() == 1 && l.target != "mul") l.tokens.targets.clear();
  if (!l.tokens.targets.empty()) l.target = "mul";
  return l;
}

}  // namespace transerve
