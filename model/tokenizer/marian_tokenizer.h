// The tokenizer of a Hugging Face Marian (OPUS-MT) checkpoint directory: text to source model ids
// and target model ids to text, reproducing transformers' MarianTokenizer v4 (see
// docs/marian-format.md section 6): special-token splitting, the `>>xx<<` language code,
// source.spm pieces looked up in vocab.json, EOS appended; decoding through target.spm.
#ifndef TRANSERVE_MODEL_TOKENIZER_MARIAN_TOKENIZER_H_
#define TRANSERVE_MODEL_TOKENIZER_MARIAN_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tokenizer/marian_vocab.h"
#include "model/tokenizer/sentencepiece_model.h"

namespace transerve {

// Immutable after loading; safe to share between threads.
class MarianTokenizer {
 public:
  // Reads vocab.json, source.spm, target.spm and, when present, tokenizer_config.json
  // (separate_vocabs, eos/unk/pad token strings), special_tokens_map.json and, with
  // separate_vocabs, target_vocab.json. Every error names the file.
  static absl::StatusOr<std::unique_ptr<MarianTokenizer>> Load(const std::string& model_dir);

  // The same pipeline over parts read elsewhere (a CTranslate2 directory's vocabularies and the
  // SentencePiece models its users run beside it).
  struct Parts {
    MarianVocab source_vocab;
    std::optional<MarianVocab> target_vocab;  // nullopt: the source's
    std::shared_ptr<const SentencePieceModel> source_spm;
    std::shared_ptr<const SentencePieceModel> target_spm;  // may be source_spm itself
    std::string eos_token;
    std::string unk_token;
    std::optional<std::string> bos_token;  // put before the source's pieces when set
    bool append_eos = true;
    int32_t pad_id = -1;  // an id Decode skips (CTranslate2's: the loader's row V)
    // Read the text as Hugging Face's MarianTokenizer does: `>>xx<<` language codes and the
    // special tokens' strings split out. false: SentencePiece's pieces of the whole text, as a
    // CTranslate2 user's `sp.encode(text, out_type=str)` gives them.
    bool marian_text = true;
    // A multilingual vocabulary's language tokens (NLLB's "eng_Latn", M2M-100's "__en__"): one
    // may go before the source's pieces (Encode's language_token); Decode drops them all.
    std::vector<std::string> language_tokens;
    // More tokens Decode drops besides eos, pad and unk (Hugging Face's other special tokens:
    // "<s>", "<mask>"); tokens the vocabulary lacks are ignored.
    std::vector<std::string> hidden_tokens;
    // Decode strips the text's surrounding whitespace, as Marian's and NLLB's tokenizers do;
    // M2M-100's returns SentencePiece's decoding as it is (whitespace-only pieces at the end
    // stay spaces).
    bool strip_decoded = true;
  };
  // INVALID_ARGUMENT when the source vocabulary lacks the eos, unk or bos token.
  static absl::StatusOr<std::unique_ptr<MarianTokenizer>> FromParts(Parts parts);

  // Source text -> model ids with EOS appended ("" gives [eos]; FromParts: as its Parts say).
  // INVALID_ARGUMENT on invalid UTF-8. Literal "</s>", "<unk>", "<pad>" in the text become their
  // ids (unless Parts::marian_text is false).
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text) const;
  // The same with `language_token` (one of language_tokens(); "" for none) put before the
  // pieces, as an M2M-100 / NLLB-200 source starts: [code] pieces [eos]. A text without pieces
  // is still the lone EOS. INVALID_ARGUMENT for a token that is not a language token.
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              std::string_view language_token) const;

  // Target ids -> text as HF decode(ids, skip_special_tokens=True) without
  // clean_up_tokenization_spaces: eos/pad/unk dropped, target.spm DecodePieces, str.strip().
  // Ids that no vocabulary entry has are skipped (HF would print "<unk>" for them).
  std::string Decode(std::span<const int32_t> ids) const;
  // Decode with `replacements[t]`, where not empty, put in place of ids[t] when it is the unknown
  // id (CTranslate2's replace_unknowns; a piece outside the vocabulary is copied as it is).
  // `replacements` is empty or has ids.size() entries.
  std::string Decode(std::span<const int32_t> ids, std::span<const std::string> replacements) const;

  // The source pieces of `text` in the order Encode gives their ids, after the BOS when there is
  // one: what CTranslate2 calls the source tokens. Only with Parts::marian_text false (else
  // empty: a Marian text's ids are not one per piece).
  std::vector<std::string> SourcePieces(std::string_view text) const;
  // Where SourcePieces' first piece sits in Encode's ids (1 after a BOS, else 0).
  int source_offset() const { return bos_id_ >= 0 ? 1 : 0; }

  // The source / target piece of `id`; the unk token for ids no entry has (as HF's
  // _convert_id_to_token).
  std::string_view SourceIdToPiece(int32_t id) const;
  std::string_view TargetIdToPiece(int32_t id) const;

  // Parts::language_tokens, in the order given; empty for a Marian tokenizer.
  const std::vector<std::string>& language_tokens() const { return language_tokens_; }
  // The id of a language token, or -1 when `token` is not one.
  int32_t LanguageTokenId(std::string_view token) const;

  int32_t eos_id() const { return eos_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  // HF's len(encoder) for vocab.json and len(target_encoder) (or the same) for the target.
  int64_t source_vocab_size() const { return source_vocab_.size(); }
  int64_t target_vocab_size() const { return target_vocab().size(); }

  const SentencePieceModel& source_spm() const { return *source_spm_; }
  const SentencePieceModel& target_spm() const { return *target_spm_; }

  MarianTokenizer(const MarianTokenizer&) = delete;
  MarianTokenizer& operator=(const MarianTokenizer&) = delete;

 private:
  MarianTokenizer() = default;

  const MarianVocab& target_vocab() const {
    return separate_vocabs_ ? target_vocab_ : source_vocab_;
  }
  // One chunk of text between special tokens: language code, then source.spm pieces.
  void EncodeChunk(std::string_view chunk, std::vector<int32_t>* ids) const;
  // Appends the EOS, or makes a source without pieces the lone EOS.
  void FinishSource(std::vector<int32_t>* ids) const;
  int32_t SourceId(std::string_view piece) const {
    const int32_t id = source_vocab_.Find(piece);
    return id >= 0 ? id : unk_id_;
  }

  MarianVocab source_vocab_;
  MarianVocab target_vocab_;  // only with separate_vocabs_
  bool separate_vocabs_ = false;
  std::shared_ptr<const SentencePieceModel> source_spm_;
  std::shared_ptr<const SentencePieceModel> target_spm_;
  std::string eos_token_ = "</s>";
  std::string unk_token_ = "<unk>";
  std::string pad_token_ = "<pad>";
  // Token strings split out of the text before SentencePiece sees it, with their ids.
  std::vector<std::pair<std::string, int32_t>> special_tokens_;
  int32_t eos_id_ = -1;
  int32_t unk_id_ = -1;
  int32_t pad_id_ = -1;
  bool strip_decoded_ = true;
  int32_t bos_id_ = -1;  // prepended when >= 0 (FromParts)
  bool append_eos_ = true;
  bool marian_text_ = true;
  std::vector<std::string> language_tokens_;
  // Ids Decode drops besides eos, pad, unk and bos: the language and hidden tokens' (sorted).
  std::vector<int32_t> hidden_ids_;
};

}  // namespace transerve

#endif  // TRANSERVE_MODEL_TOKENIZER_MARIAN_TOKENIZER_H_
