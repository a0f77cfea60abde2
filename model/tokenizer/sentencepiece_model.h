// A SentencePiece model (.spm / .model file) read with our own protobuf code, no
// libsentencepiece: encodes text to piece strings exactly as `spm_encode --output_format=piece`
// and decodes pieces as SentencePieceProcessor::DecodePieces (SentencePiece 0.1.97). Unigram and
// BPE models (model_type unigram or bpe); char and word models are refused.
#ifndef TRANSERVE_MODEL_TOKENIZER_SENTENCEPIECE_MODEL_H_
#define TRANSERVE_MODEL_TOKENIZER_SENTENCEPIECE_MODEL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/bpe_model.h"
#include "model/tokenizer/normalizer.h"
#include "model/tokenizer/unigram_model.h"

namespace transerve {

namespace spm {
class ModelProto;
}

// Immutable after loading; every method is const and safe to call from many threads.
class SentencePieceModel {
 public:
  // Errors (INVALID_ARGUMENT, NOT_FOUND for a missing file) name the file, e.g. "unsupported
  // SentencePiece model type WORD in <path>; only unigram and bpe are supported".
  static absl::StatusOr<std::unique_ptr<SentencePieceModel>> LoadFromFile(const std::string& path);
  static absl::StatusOr<std::unique_ptr<SentencePieceModel>> LoadFromSerialized(
      std::string_view bytes);
  // `name` is used in error messages in place of a path.
  static absl::StatusOr<std::unique_ptr<SentencePieceModel>> LoadFromSerialized(
      std::string_view bytes, std::string_view name);

  // Piece strings exactly as `spm_encode --output_format=piece` gives them. Any byte string is
  // accepted: malformed UTF-8 is handled as SentencePiece does (each bad byte becomes U+FFFD).
  std::vector<std::string> EncodeToPieces(std::string_view text) const;

  // The same pieces without allocating each one: `fn` receives views that are valid only during
  // the call.
  void EncodeToPieces(std::string_view text, absl::FunctionRef<void(std::string_view)> fn) const;

  // As SentencePieceProcessor::DecodePieces: known pieces with U+2581 as space (the first one's
  // leading U+2581 dropped), control pieces dropped, the unknown piece as unk_surface, pieces not
  // in the model copied verbatim, byte pieces reassembled into UTF-8.
  std::string DecodePieces(const std::vector<std::string>& pieces) const;
  // The same for views (what the Marian decoder holds), without copying the pieces.
  std::string DecodePieceViews(std::span<const std::string_view> pieces) const;

  // True when `piece` is in the model's vocabulary (any type).
  bool HasPiece(std::string_view piece) const;
  // The piece's id, or the unk id when it is not in the vocabulary (as PieceToId).
  int32_t PieceToId(std::string_view piece) const;
  int32_t piece_size() const { return static_cast<int32_t>(pieces_.size()); }
  // `id` must be in [0, piece_size()).
  const std::string& IdToPiece(int32_t id) const { return pieces_[id]; }
  int32_t unk_id() const { return unk_id_; }

  SentencePieceModel(const SentencePieceModel&) = delete;
  SentencePieceModel& operator=(const SentencePieceModel&) = delete;
  ~SentencePieceModel();

 private:
  SentencePieceModel();
  absl::Status Init(const spm::ModelProto& proto, std::string_view name);

  template <typename PieceList>
  std::string DecodeImpl(const PieceList& pieces) const;
  // The pieces text may be segmented into, by string.
  const PieceTrie& trie() const { return bpe_ ? bpe_model_.trie() : unigram_.trie(); }

  std::vector<std::string> pieces_;
  std::vector<PieceType> types_;
  // CONTROL, UNKNOWN and BYTE pieces, which are never matched in text.
  absl::flat_hash_map<std::string, int32_t> reserved_ids_;
  UnigramModel unigram_;
  BpeModel bpe_model_;
  bool bpe_ = false;  // model_type bpe: bpe_model_ segments, else unigram_
  Normalizer normalizer_;
  std::unique_ptr<Normalizer> denormalizer_;  // only when the model has decode rules
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  bool strip_leading_space_on_decode_ = true;  // add_dummy_prefix || remove_extra_whitespaces
  bool remove_extra_whitespaces_ = true;
  std::string unk_surface_;
};

}  // namespace transerve

#endif  // TRANSERVE_MODEL_TOKENIZER_SENTENCEPIECE_MODEL_H_
