#include "model/tokenizer/m2m100_tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "model/core/read_file.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSpecials[] = {"<s>", "<pad>", "</s>", "<unk>"};  // NLLB's ids 0..3

// A JSON file beside the model: nullopt when absent, an error when it is not a JSON object.
absl::StatusOr<std::optional<nlohmann::json>> ReadJson(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<nlohmann::json>();
  auto text = ReadWholeFile(path.string(), "tokenizer file");
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", path.string(), ": not a JSON object"));
  }
  return std::optional<nlohmann::json>(std::move(j));
}

// A token written as a string or as an AddedToken object {"content": ...}; "" otherwise.
std::string TokenContent(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object()) {
    const auto it = j.find("content");
    if (it != j.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

// Added tokens with the ids the files give them, in id order.
struct AddedTokens {
  std::vector<std::pair<int64_t, std::string>> by_id;  // explicit ids, when a file has them
  std::vector<std::string> in_order;                   // additional_special_tokens otherwise
  std::string source;                                  // the file they came from
};

absl::StatusOr<AddedTokens> ReadAddedTokens(const fs::path& dir) {
  AddedTokens out;
  auto tokenizer = ReadJson(dir / "tokenizer.json");
  if (!tokenizer.ok()) return tokenizer.status();
  auto config = ReadJson(dir / "tokenizer_config.json");
  if (!config.ok()) return config.status();
  auto special = ReadJson(dir / "special_tokens_map.json");
  if (!special.ok()) return special.status();
  auto bad = [](const fs::path& file, const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("invalid ", file.string(), ": ", what));
  };
  if (*tokenizer && (*tokenizer)->contains("added_tokens")) {
    const nlohmann::json& list = (**tokenizer)["added_tokens"];
    if (!list.is_array()) return bad(dir / "tokenizer.json", "added_tokens is not a list");
    for (const nlohmann::json& t : list) {
      const auto id = t.find("id");
      if (!t.is_object() || id == t.end() || !id->is_number_integer() || TokenContent(t).empty()) {
        return bad(dir / "tokenizer.json", "an added token without an integer id and content");
      }
      out.by_id.emplace_back(id->get<int64_t>(), TokenContent(t));
    }
    out.source = (dir / "tokenizer.json").string();
  } else if (*config && (*config)->contains("added_tokens_decoder")) {
    const nlohmann::json& map = (**config)["added_tokens_decoder"];
    if (!map.is_object()) return bad(dir / "tokenizer_config.json", "added_tokens_decoder");
    for (const auto& [key, value] : map.items()) {
      int64_t id = -1;
      if (!absl::SimpleAtoi(key, &id) || id < 0 || TokenContent(value).empty()) {
        return bad(dir / "tokenizer_config.json",
                   absl::StrCat("added_tokens_decoder entry \"", key, "\""));
      }
      out.by_id.emplace_back(id, TokenContent(value));
    }
    out.source = (dir / "tokenizer_config.json").string();
  } else {
    for (const auto* file : {&*config, &*special}) {
      if (!*file || !(*file)->contains("additional_special_tokens")) continue;
      const nlohmann::json& list = (**file)["additional_special_tokens"];
      if (!list.is_array()) continue;  // null in some configs: look in the next file
      for (const nlohmann::json& t : list) out.in_order.push_back(TokenContent(t));
      out.source =
          (dir / (file == &*config ? "tokenizer_config.json" : "special_tokens_map.json")).string();
      break;
    }
  }
  std::sort(out.by_id.begin(), out.by_id.end());
  return out;
}

}  // namespace

bool IsM2m100LanguageToken(std::string_view t) {
  auto all = [](std::string_view s, auto pred) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred(c); });
  };
  if (t.size() >= 6 && t.starts_with("__") && t.ends_with("__")) {
    const std::string_view code = t.substr(2, t.size() - 4);
    return code.size() <= 3 && all(code, [](char c) { return absl::ascii_islower(c); });
  }
  // xxx_Xxxx: a language and a script.
  return t.size() == 8 && t[3] == '_' &&
         all(t.substr(0, 3), [](char c) { return absl::ascii_islower(c); }) &&
         absl::ascii_isupper(t[4]) &&
         all(t.substr(5), [](char c) { return absl::ascii_islower(c); });
}

absl::StatusOr<std::unique_ptr<MarianTokenizer>> LoadM2m100Tokenizer(const std::string& dir_name) {
  const fs::path dir(dir_name);
  auto spm = SentencePieceModel::LoadFromFile((dir / "sentencepiece.bpe.model").string());
  if (!spm.ok()) return spm.status();
  auto added = ReadAddedTokens(dir);
  if (!added.ok()) return added.status();

  // The vocabulary by id, before the added tokens.
  std::vector<std::string> tokens;
  const bool nllb = !IsRegularFile(dir / "vocab.json");
  if (nllb) {
    tokens.assign(std::begin(kSpecials), std::end(kSpecials));
    for (int32_t i = 3; i < (*spm)->piece_size(); ++i) tokens.push_back((*spm)->IdToPiece(i));
  } else {
    auto vocab = MarianVocab::LoadFile((dir / "vocab.json").string());
    if (!vocab.ok()) return vocab.status();
    for (int32_t id = 0; id < vocab->size(); ++id) {
      const std::string* piece = vocab->IdToPiece(id);
      if (piece == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            (dir / "vocab.json").string(), ": no entry has id ", id, " of ids 0..",
            vocab->size() - 1, " (an M2M-100 vocabulary numbers its pieces without gaps)"));
      }
      tokens.push_back(*piece);
    }
  }

  MarianTokenizer::Parts parts;
  const size_t base = tokens.size();
  if (!added->by_id.empty()) {
    // Tokens the vocabulary already has must agree with it; the rest follow it without gaps.
    for (const auto& [id, content] : added->by_id) {
      if (id < 0 || static_cast<size_t>(id) > tokens.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            added->source, ": added token \"", content, "\" has id ", id, ", but the vocabulary",
            " (", base, " entries before the added tokens) continues at ", tokens.size()));
      }
      if (static_cast<size_t>(id) < tokens.size()) {
        if (tokens[static_cast<size_t>(id)] != content) {
          return absl::InvalidArgumentError(absl::StrCat(
              added->source, ": added token \"", content, "\" has id ", id,
              ", which the vocabulary gives to \"", tokens[static_cast<size_t>(id)], "\""));
        }
        continue;
      }
      tokens.push_back(content);
      if (IsM2m100LanguageToken(content)) parts.language_tokens.push_back(content);
    }
  } else {
    for (const std::string& t : added->in_order) {
      if (!IsM2m100LanguageToken(t)) {
        return absl::InvalidArgumentError(absl::StrCat(
            added->source, ": additional special token \"", t, "\" is not a language code"));
      }
      tokens.push_back(t);
      parts.language_tokens.push_back(t);
    }
    if (nllb) tokens.push_back("<mask>");
  }
  if (parts.language_tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir_name,
        ": no language codes; expected them in tokenizer.json's added_tokens, "
        "tokenizer_config.json's added_tokens_decoder, or additional_special_tokens in "
        "tokenizer_config.json or special_tokens_map.json"));
  }

  parts.source_vocab = MarianVocab::FromTokens(tokens);
  parts.eos_token = "</s>";
  parts.unk_token = "<unk>";
  parts.pad_id = parts.source_vocab.Find("<pad>");
  parts.hidden_tokens = {"<s>", "<mask>"};
  parts.strip_decoded = nllb;
  // Hugging Face's tokenizers split added tokens out of the text; here a text's pieces are
  // SentencePiece's, so a request cannot write a language code or </s> into its source.
  parts.marian_text = false;
  parts.append_eos = true;
  parts.source_spm = *std::move(spm);
  parts.target_spm = parts.source_spm;
  auto tokenizer = MarianTokenizer::FromParts(std::move(parts));
  if (!tokenizer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(dir_name, ": ", tokenizer.status().message()));
  }
  return tokenizer;
}

}  // namespace transerve
