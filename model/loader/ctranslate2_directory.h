// A CTranslate2 model directory as its converters write it: model.bin (Ct2ModelBin), the
// special tokens and source-side flags, and the vocabularies that map pieces to ids. What the
// spec's variables mean is the spec layer's business; this is the directory's layout only.
// docs/ctranslate2-format.md, section 3, states the rules followed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/loader/ctranslate2_model_bin.h"

namespace transerve {

// Pieces by id, as CTranslate2 builds them: the file's tokens in order, then the unknown token
// appended when the file lacks it. A token written twice keeps both ids; looking it up gives
// the first, as CTranslate2 does.
class Ct2Vocabulary {
 public:
  Ct2Vocabulary(std::vector<std::string> tokens, const std::string& unk_token);
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::string& token(int64_t id) const { return tokens_[static_cast<size_t>(id)]; }
  // The id of `token`, or nullopt.
  std::optional<int64_t> Find(std::string_view token) const;

 private:
  std::vector<std::string> tokens_;
  std::map<std::string, int64_t, std::less<>> ids_;
};

// NAME.json (a JSON array of strings), else NAME.txt (a token per line; a carriage return
// ending every line is dropped, as CTranslate2 does, one ending only some lines is kept), of
// `dir`. NOT_FOUND when neither exists, INVALID_ARGUMENT for a malformed file or an empty one.
absl::StatusOr<std::shared_ptr<const Ct2Vocabulary>> ReadCt2Vocabulary(
    const std::string& dir, const std::string& name, const std::string& unk_token);

struct Ct2SpecialTokens {
  std::string unk = "<unk>";
  std::string bos = "<s>";
  std::string eos = "</s>";
  // What the decoder starts from; nullopt when the model wants the caller's own start tokens
  // (a multilingual model's target language), which CTranslate2 writes as null.
  std::optional<std::string> decoder_start = "<s>";
  bool add_source_bos = false;
  bool add_source_eos = false;
};

struct Ct2Directory {
  std::string path;
  Ct2ModelBin model;
  nlohmann::json config = nlohmann::json::object();  // config.json as written; {} when absent
  Ct2SpecialTokens tokens;
  std::shared_ptr<const Ct2Vocabulary> source_vocabulary;
  std::shared_ptr<const Ct2Vocabulary> target_vocabulary;  // the same object when shared
};

// Opens `dir`: model.bin, then the special tokens (binary version 6: config.json's keys;
// earlier versions: the model's own attribute variables, with CTranslate2's defaults), then
// shared_vocabulary, else target_vocabulary and source_vocabulary. Refused with an error that
// names the file and the reason: no model.bin, a config.json that is not an object or holds a
// token of the wrong type, no target or source vocabulary, several source vocabularies (a
// multi-source model), a special token that is not in the vocabulary it belongs to.
absl::StatusOr<Ct2Directory> OpenCt2Directory(const std::string& dir);

}  // namespace transerve
