// Which languages a served model translates from and into, so a request can name a language
// pair instead of a model: from the operator's flag, the model's tokenizer_config.json
// (source_lang / target_lang), an Argos Translate package's metadata.json (from_code / to_code),
// or an OPUS-MT directory name (opus-mt-SRC-TGT), in that order;
// a multilingual model's target languages from its >>xx<< vocabulary tokens, or both sides'
// languages from an M2M-100 / NLLB-200 tokenizer's language codes.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tokenizer/marian_tokenizer.h"
#include "pipeline/language_tokens.h"

namespace transerve {

struct ModelLanguages {
  std::string source;  // canonical (text::CanonicalLanguage); "mul" any; "" unknown
  std::string target;  // canonical; "mul" several (see tokens.targets); "" unknown
  // A multilingual model's tokens for each language: its targets' (">>deu<<", "deu_Latn") and,
  // for M2M-100 / NLLB-200, its sources' (it reads only those).
  LanguageTokenTable tokens;

  // Every language this model translates into.
  std::vector<std::string> targets() const;
  // Whether it translates from `source` (canonical; "": any).
  bool ServesSource(std::string_view source) const;
  // Whether it translates `source` into `target` (canonical codes; "" source: any).
  bool Serves(std::string_view source, std::string_view target) const;
  // Whether a request must say its source language (or have it detected) for this model.
  bool NeedsSource() const { return !tokens.sources.empty(); }
};

// `pair` is the operator's "SRC-TGT" for this model ("" when not given). INVALID_ARGUMENT when
// it is given and malformed.
absl::StatusOr<ModelLanguages> ReadModelLanguages(const std::string& model_dir,
                                                  const std::string& pair,
                                                  const MarianTokenizer& tokenizer);
// The same with the language tokens read elsewhere (ReadLanguageTokens, LanguageCodeTable).
absl::StatusOr<ModelLanguages> ReadModelLanguages(const std::string& model_dir,
                                                  const std::string& pair,
                                                  const LanguageTokenTable& tokens);
// The same from the model's files alone, without its vocabulary (so no multilingual targets):
// what a listing knows of a model whose tokenizer only loads with the model.
absl::StatusOr<ModelLanguages> ReadModelLanguages(const std::string& model_dir,
                                                  const std::string& pair);

}  // namespace transerve
