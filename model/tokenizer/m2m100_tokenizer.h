// The tokenizers of m2m_100 checkpoints (docs/m2m100-format.md section 4), read into a
// MarianTokenizer: one SentencePiece BPE model (sentencepiece.bpe.model) for both sides, a
// vocabulary, and the language codes that start a source and are forced first on the target.
//  - NLLB-200 (no vocab.json): ids 0..3 are <s> <pad> </s> <unk>; SentencePiece piece i >= 3 is
//    id i + 1; the codes ("eng_Latn") follow the pieces, then <mask>.
//  - M2M-100 (vocab.json): pieces looked up in vocab.json; the codes ("__en__") follow it.
// The codes and their ids are read from the files Hugging Face writes (tokenizer.json's
// added_tokens, else tokenizer_config.json's added_tokens_decoder, else additional_special_tokens
// in order), never from a list built in here.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/tokenizer/marian_tokenizer.h"

namespace transerve {

// Errors name the file (NOT_FOUND without sentencepiece.bpe.model; INVALID_ARGUMENT for files
// that disagree with each other or name no language codes).
absl::StatusOr<std::unique_ptr<MarianTokenizer>> LoadM2m100Tokenizer(const std::string& dir);

// Whether `token` is written as a language code of these tokenizers: "eng_Latn" (NLLB-200) or
// "__en__" (M2M-100).
bool IsM2m100LanguageToken(std::string_view token);

}  // namespace transerve
