// How a multilingual model is told a language pair, shared by the server and the CLI: the
// tokens its vocabulary has for each language (a Marian model's ">>deu<<" targets, an M2M-100 /
// NLLB-200 tokenizer's "__de__" / "deu_Latn" codes), and what one pair's tokens change in a
// request (SegmentSettings, DecodingOptions).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/decoding/decoding_options.h"
#include "model/tokenizer/marian_tokenizer.h"
#include "pipeline/document_segments.h"

namespace transerve {

// One pair's tokens.
struct LanguageTokens {
  std::string target;          // the target's token (">>deu<<", "deu_Latn"), or ""
  bool target_forced = false;  // forced as the first generated token, not put before the text
  std::string source;          // a source's first token ("eng_Latn"), or ""
};

// A model's tokens by canonical language (text::CanonicalLanguage); of several tokens for one
// language (zho_Hans, zho_Hant) the first in the vocabulary's order.
struct LanguageTokenTable {
  std::map<std::string, std::string> targets;
  // An M2M-100 / NLLB-200 tokenizer: every source starts with its language's token, and the
  // target's is forced first. Empty (and target_forced false) for other models.
  std::map<std::string, std::string> sources;
  bool target_forced = false;

  // The tokens for the pair (each "" where the model needs none or lacks the language).
  LanguageTokens For(const std::string& source, const std::string& target) const;
  // The same, refused (INVALID_ARGUMENT, naming `model`) where the model cannot be told the
  // pair: a target it lacks, no target where it forces one, a source it does not read. An
  // empty `source` passes (a caller detects one where `sources` is not empty).
  absl::StatusOr<LanguageTokens> Resolve(const std::string& model, const std::string& source,
                                         const std::string& target) const;
};

// A tokenizer with language tokens reads them (LanguageCodeTable); else the target
// vocabulary's >>xx<< tokens.
LanguageTokenTable ReadLanguageTokens(const MarianTokenizer& tokenizer);
// The table of an M2M-100 / NLLB-200 model's language codes ("__en__", "eng_Latn"), in its
// vocabulary's order: each is a source's first token and a forced target token.
LanguageTokenTable LanguageCodeTable(const std::vector<std::string>& codes);

// Puts the pair's tokens where the model reads them: the source token and a target token put
// before the text into `settings`, a forced target token into `options`. INTERNAL when the
// tokenizer lacks a forced token (a table read from another tokenizer).
absl::Status ApplyLanguageTokens(const MarianTokenizer& tokenizer, const LanguageTokens& tokens,
                                 SegmentSettings* settings, DecodingOptions* options);

}  // namespace transerve
