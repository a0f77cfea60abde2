// CTranslate2 model directories: vocabularies, special tokens by binary version, and the
// checks that keep a half-converted directory from loading.
#include "model/loader/ctranslate2_directory.h"

#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "model/core/read_file.h"
#include "model/loader/strict_json.h"

namespace transerve {
namespace {

bool Exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

// A text vocabulary's lines: "a\nb\n" is two tokens, "a\nb" too.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  bool every_line_ends_in_cr = !lines.empty();
  for (const std::string& line : lines) {
    if (line.empty() || line.back() != '\r') every_line_ends_in_cr = false;
  }
  if (every_line_ends_in_cr) {
    for (std::string& line : lines) line.pop_back();
  }
  return lines;
}

// Before binary version 6 the special tokens were variables of the model: strings as int8
// bytes, flags as one int8.
absl::StatusOr<std::string> StringAttribute(const Ct2ModelBin& model, const std::string& name,
                                            const std::string& fallback) {
  const Ct2Variable* v = model.Find(name);
  if (v == nullptr) return fallback;
  if (v->dtype != Ct2Dtype::kInt8) {
    return absl::InvalidArgumentError(absl::StrCat(model.path(), ": attribute ", name, " is ",
                                                   Ct2DtypeName(v->dtype), ", not int8 text"));
  }
  return std::string(reinterpret_cast<const char*>(v->data.data()), v->data.size());
}

absl::StatusOr<bool> FlagAttribute(const Ct2ModelBin& model, const std::string& name,
                                   bool fallback) {
  const Ct2Variable* v = model.Find(name);
  if (v == nullptr) return fallback;
  if (v->data.empty() || Ct2DtypeSize(v->dtype) != v->data.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(model.path(), ": flag ", name, " is not one value"));
  }
  for (std::byte b : v->data) {
    if (b != std::byte{0}) return true;
  }
  return false;
}

absl::StatusOr<Ct2SpecialTokens> TokensFromAttributes(const Ct2ModelBin& model) {
  Ct2SpecialTokens t;
  auto unk = StringAttribute(model, "unk_token", t.unk);
  auto bos = StringAttribute(model, "bos_token", t.bos);
  auto eos = StringAttribute(model, "eos_token", t.eos);
  auto source_bos = FlagAttribute(model, "with_source_bos", false);
  auto source_eos = FlagAttribute(model, "with_source_eos", false);
  auto user_start = FlagAttribute(model, "user_decoder_start_tokens", false);
  auto target_bos = FlagAttribute(model, "with_target_bos", true);
  for (const absl::Status& s : {unk.status(), bos.status(), eos.status(), source_bos.status(),
                                source_eos.status(), user_start.status(), target_bos.status()}) {
    if (!s.ok()) return s;
  }
  t.unk = *unk;
  t.bos = *bos;
  t.eos = *eos;
  t.add_source_bos = *source_bos;
  t.add_source_eos = *source_eos;
  if (*user_start) {
    t.decoder_start = std::nullopt;
  } else {
    t.decoder_start = *target_bos ? t.bos : t.eos;
  }
  return t;
}

// Binary version 6: config.json's keys. A key that is absent keeps CTranslate2's default; one
// of the wrong type is an error, never a guess.
absl::StatusOr<Ct2SpecialTokens> TokensFromConfig(const nlohmann::json& config,
                                                  const std::string& path) {
  Ct2SpecialTokens t;
  auto text = [&](const char* key, std::string* out) -> absl::Status {
    if (!config.contains(key)) return absl::OkStatus();
    if (!config[key].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"", key, "\" must be a string, not ",
                                                     DescribeJsonValue(config[key])));
    }
    *out = config[key].get<std::string>();
    return absl::OkStatus();
  };
  auto flag = [&](const char* key, bool* out) -> absl::Status {
    if (!config.contains(key)) return absl::OkStatus();
    if (!config[key].is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": \"", key, "\" must be true or false, not ", DescribeJsonValue(config[key])));
    }
    *out = config[key].get<bool>();
    return absl::OkStatus();
  };
  for (const absl::Status& s :
       {text("unk_token", &t.unk), text("bos_token", &t.bos), text("eos_token", &t.eos),
        flag("add_source_bos", &t.add_source_bos), flag("add_source_eos", &t.add_source_eos)}) {
    if (!s.ok()) return s;
  }
  t.decoder_start = t.bos;
  if (config.contains("decoder_start_token")) {
    const nlohmann::json& start = config["decoder_start_token"];
    if (start.is_null()) {
      t.decoder_start = std::nullopt;
    } else if (start.is_string()) {
      t.decoder_start = start.get<std::string>();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": \"decoder_start_token\" must be a string or null, not ",
                       DescribeJsonValue(start)));
    }
  }
  return t;
}

absl::Status ExpectToken(const Ct2Vocabulary& vocabulary, const std::string& token,
                         const char* what, const std::string& dir) {
  if (vocabulary.Find(token).has_value()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(dir, ": the ", what, " \"", token, "\" is not in the target vocabulary"));
}

}  // namespace

Ct2Vocabulary::Ct2Vocabulary(std::vector<std::string> tokens, const std::string& unk_token)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) ids_.emplace(tokens_[i], static_cast<int64_t>(i));
  if (!ids_.contains(unk_token)) {
    ids_.emplace(unk_token, size());
    tokens_.push_back(unk_token);
  }
}

std::optional<int64_t> Ct2Vocabulary::Find(std::string_view token) const {
  const auto it = ids_.find(token);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<std::shared_ptr<const Ct2Vocabulary>> ReadCt2Vocabulary(
    const std::string& dir, const std::string& name, const std::string& unk_token) {
  const std::string json_path = (std::filesystem::path(dir) / (name + ".json")).string();
  const std::string text_path = (std::filesystem::path(dir) / (name + ".txt")).string();
  std::vector<std::string> tokens;
  std::string path;
  if (Exists(json_path)) {
    path = json_path;
    auto json = ReadJsonFileStrict(json_path);
    if (!json.ok()) return json.status();
    if (!json->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(
          json_path, ": a vocabulary is an array of strings, not ", DescribeJsonValue(*json)));
    }
    for (size_t i = 0; i < json->size(); ++i) {
      if (!(*json)[i].is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(
            json_path, ": entry ", i, " is ", DescribeJsonValue((*json)[i]), ", not a string"));
      }
      tokens.push_back((*json)[i].get<std::string>());
    }
  } else if (Exists(text_path)) {
    path = text_path;
    auto text = ReadWholeFile(text_path, "CTranslate2 vocabulary");
    if (!text.ok()) return text.status();
    tokens = Lines(*text);
  } else {
    return absl::NotFoundError(absl::StrCat(dir, ": no ", name, ".json or ", name, ".txt"));
  }
  if (tokens.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  return std::make_shared<const Ct2Vocabulary>(std::move(tokens), unk_token);
}

absl::StatusOr<Ct2Directory> OpenCt2Directory(const std::string& dir) {
  auto model = Ct2ModelBin::Open((std::filesystem::path(dir) / "model.bin").string());
  if (!model.ok()) return model.status();
  Ct2Directory out{.path = dir, .model = *std::move(model)};

  const std::string config_path = (std::filesystem::path(dir) / "config.json").string();
  if (Exists(config_path)) {
    auto config = ReadJsonFileStrict(config_path);
    if (!config.ok()) return config.status();
    if (!config->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(config_path, ": not a JSON object but ", DescribeJsonValue(*config)));
    }
    out.config = *std::move(config);
  }
  auto tokens = out.model.binary_version() >= 6 ? TokensFromConfig(out.config, config_path)
                                                : TokensFromAttributes(out.model);
  if (!tokens.ok()) return tokens.status();
  out.tokens = *std::move(tokens);

  auto shared = ReadCt2Vocabulary(dir, "shared_vocabulary", out.tokens.unk);
  if (shared.ok()) {
    out.source_vocabulary = out.target_vocabulary = *shared;
  } else if (!absl::IsNotFound(shared.status())) {
    return shared.status();
  } else {
    auto target = ReadCt2Vocabulary(dir, "target_vocabulary", out.tokens.unk);
    if (!target.ok()) return target.status();
    auto source = ReadCt2Vocabulary(dir, "source_vocabulary", out.tokens.unk);
    if (absl::IsNotFound(source.status()) &&
        (Exists((std::filesystem::path(dir) / "source_1_vocabulary.json").string()) ||
         Exists((std::filesystem::path(dir) / "source_1_vocabulary.txt").string()))) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir,
          ": several source vocabularies (source_1_vocabulary, ...): a multi-source model, "
          "which transerve does not serve"));
    }
    if (!source.ok()) return source.status();
    out.target_vocabulary = *target;
    out.source_vocabulary = *source;
  }
  if (absl::Status s = ExpectToken(*out.target_vocabulary, out.tokens.eos, "end token", dir);
      !s.ok()) {
    return s;
  }
  if (out.tokens.decoder_start.has_value()) {
    if (absl::Status s = ExpectToken(*out.target_vocabulary, *out.tokens.decoder_start,
                                     "decoder start token", dir);
        !s.ok()) {
      return s;
    }
  }
  return out;
}

}  // namespace transerve
