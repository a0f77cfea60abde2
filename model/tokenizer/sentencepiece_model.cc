// Loading and validation of a SentencePiece ModelProto (the checks of upstream's
// ModelInterface::InitializePieces), encoding to piece strings (SentencePieceProcessor::Encode +
// PopulateSentencePieceText) and DecodePieces.
#include "model/tokenizer/sentencepiece_model.h"

#include <array>
#include <climits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/core/read_file.h"
#include "model/tokenizer/absl_string_view.h"
#include "model/tokenizer/sentencepiece_model.pb.h"
#include "model/tokenizer/utf8.h"

namespace transerve {
namespace {

using ProtoPiece = spm::ModelProto::SentencePiece;

// "<0x41>" and friends: the piece strings byte fallback uses, uppercase hex as upstream.
const std::array<std::string, 256>& BytePieces() {
  static const auto* const kPieces = [] {
    auto* pieces = new std::array<std::string, 256>;
    for (int b = 0; b < 256; ++b) (*pieces)[b] = absl::StrFormat("<0x%02X>", b);
    return pieces;
  }();
  return *kPieces;
}

// The byte a BYTE piece stands for, or -1 when the string is not exactly "<0xXX>".
int PieceToByte(std::string_view piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;  // upstream only accepts its own uppercase spelling
  };
  const int hi = hex(piece[3]);
  const int lo = hex(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string_view ModelTypeName(spm::TrainerSpec::ModelType type) {
  switch (type) {
    case spm::TrainerSpec::UNIGRAM:
      return "UNIGRAM";
    case spm::TrainerSpec::BPE:
      return "BPE";
    case spm::TrainerSpec::WORD:
      return "WORD";
    case spm::TrainerSpec::CHAR:
      return "CHAR";
  }
  return "UNKNOWN";
}

}  // namespace

SentencePieceModel::SentencePieceModel() = default;
SentencePieceModel::~SentencePieceModel() = default;

absl::StatusOr<std::unique_ptr<SentencePieceModel>> SentencePieceModel::LoadFromFile(
    const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(path, "SentencePiece model");
  if (!bytes.ok()) return bytes.status();
  return LoadFromSerialized(*bytes, path);
}

absl::StatusOr<std::unique_ptr<SentencePieceModel>> SentencePieceModel::LoadFromSerialized(
    std::string_view bytes) {
  return LoadFromSerialized(bytes, "<serialized model>");
}

absl::StatusOr<std::unique_ptr<SentencePieceModel>> SentencePieceModel::LoadFromSerialized(
    std::string_view bytes, std::string_view name) {
  if (bytes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("SentencePiece model ", AbslView(name), " is empty"));
  }
  spm::ModelProto proto;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot parse SentencePiece model ", AbslView(name),
                     ": the file is truncated, corrupt or not a SentencePiece ModelProto"));
  }
  // Every file spm_train writes has both specs (they come after the pieces); a parse without them
  // means a file cut at a field boundary or something else that happens to parse.
  if (!proto.has_trainer_spec() || !proto.has_normalizer_spec()) {
    return absl::InvalidArgumentError(
        absl::StrCat("SentencePiece model ", AbslView(name),
                     " is truncated or not a SentencePiece model: it has no ",
                     proto.has_trainer_spec() ? "normalizer_spec" : "trainer_spec"));
  }
  if (proto.trainer_spec().model_type() != spm::TrainerSpec::UNIGRAM &&
      proto.trainer_spec().model_type() != spm::TrainerSpec::BPE) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported SentencePiece model type ",
                     AbslView(ModelTypeName(proto.trainer_spec().model_type())), " in ",
                     AbslView(name), "; only unigram and bpe are supported"));
  }
  std::unique_ptr<SentencePieceModel> model(new SentencePieceModel());
  if (absl::Status s = model->Init(proto, name); !s.ok()) return s;
  return model;
}

absl::Status SentencePieceModel::Init(const spm::ModelProto& proto, std::string_view name) {
  auto error = [&](auto&&... parts) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid SentencePiece model ", AbslView(name), ": ", parts...));
  };
  const auto& trainer = proto.trainer_spec();
  if (proto.pieces_size() == 0) return error("it has no pieces");
  byte_fallback_ = trainer.byte_fallback();

  const int n = proto.pieces_size();
  pieces_.reserve(n);
  types_.reserve(n);
  std::vector<float> scores;
  scores.reserve(n);
  for (const ProtoPiece& p : proto.pieces()) {
    pieces_.push_back(p.piece());
    types_.push_back(static_cast<PieceType>(p.type()));
    scores.push_back(p.score());
  }

  std::vector<std::pair<std::string_view, int32_t>> matchable;  // NORMAL, USER_DEFINED, UNUSED
  matchable.reserve(n);
  absl::flat_hash_set<absl::string_view> seen;
  std::vector<std::string_view> user_defined;
  std::array<bool, 256> byte_seen{};
  for (int id = 0; id < n; ++id) {
    const std::string& piece = pieces_[id];
    const PieceType type = types_[id];
    if (piece.empty()) return error("piece ", id, " is empty");
    const bool is_matchable =
        type == PieceType::kNormal || type == PieceType::kUserDefined || type == PieceType::kUnused;
    // As upstream, a string may appear once among matchable pieces and once among reserved ones.
    if (is_matchable) {
      if (!seen.insert(AbslView(piece)).second) {
        return error("piece \"", piece, "\" is defined twice");
      }
      matchable.emplace_back(piece, id);
    } else if (!reserved_ids_.emplace(piece, id).second) {
      return error("piece \"", piece, "\" is defined twice");
    }
    switch (type) {
      case PieceType::kUserDefined:
        user_defined.push_back(piece);
        break;
      case PieceType::kUnknown:
        if (unk_id_ >= 0) return error("more than one UNKNOWN piece (", unk_id_, " and ", id, ")");
        unk_id_ = id;
        break;
      case PieceType::kByte: {
        if (!byte_fallback_) {
          return error("byte piece ", piece, " found although byte_fallback is false");
        }
        const int byte = PieceToByte(piece);
        if (byte < 0) return error("byte piece \"", piece, "\" is not of the form <0xXX>");
        byte_seen[byte] = true;
        break;
      }
      default:
        break;
    }
  }
  if (unk_id_ < 0) return error("no UNKNOWN (<unk>) piece");
  if (byte_fallback_) {
    for (int b = 0; b < 256; ++b) {
      if (!byte_seen[b]) {
        return error("byte_fallback is set but byte piece ", BytePieces()[b], " is missing");
      }
    }
  }
  if (matchable.empty()) return error("it has no normal pieces");
  bpe_ = trainer.model_type() == spm::TrainerSpec::BPE;
  if (bpe_) {
    std::vector<std::pair<std::string_view, int32_t>> symbols;
    for (size_t i = 0; i < user_defined.size(); ++i) {
      symbols.emplace_back(user_defined[i], static_cast<int32_t>(i));
    }
    bpe_model_ =
        BpeModel(std::move(scores), types_, unk_id_, PieceTrie::Build(std::move(matchable)),
                 PieceTrie::Build(std::move(symbols)));
  } else {
    unigram_ =
        UnigramModel(std::move(scores), types_, unk_id_, PieceTrie::Build(std::move(matchable)));
  }

  const auto& norm_spec = proto.normalizer_spec();
  auto normalizer =
      Normalizer::Create(norm_spec, trainer.treat_whitespace_as_suffix(), user_defined);
  if (!normalizer.ok()) return error("normalizer_spec: ", normalizer.status().message());
  normalizer_ = *std::move(normalizer);
  if (proto.has_denormalizer_spec() && !proto.denormalizer_spec().precompiled_charsmap().empty()) {
    auto denormalizer = Normalizer::Create(proto.denormalizer_spec(), false, {});
    if (!denormalizer.ok()) return error("denormalizer_spec: ", denormalizer.status().message());
    denormalizer_ = std::make_unique<Normalizer>(*std::move(denormalizer));
  }
  remove_extra_whitespaces_ = norm_spec.remove_extra_whitespaces();
  strip_leading_space_on_decode_ = norm_spec.add_dummy_prefix() || remove_extra_whitespaces_;
  unk_surface_ = trainer.unk_surface();
  return absl::OkStatus();
}

int32_t SentencePieceModel::PieceToId(std::string_view piece) const {
  if (auto it = reserved_ids_.find(AbslView(piece)); it != reserved_ids_.end()) return it->second;
  const int32_t id = trie().Find(piece);
  return id >= 0 ? id : unk_id_;
}

bool SentencePieceModel::HasPiece(std::string_view piece) const {
  return reserved_ids_.contains(AbslView(piece)) || trie().Find(piece) >= 0;
}

void SentencePieceModel::EncodeToPieces(std::string_view text,
                                        absl::FunctionRef<void(std::string_view)> fn) const {
  std::string normalized;
  normalizer_.Normalize(text, &normalized);
  std::vector<UnigramModel::Span> spans;
  if (bpe_) {
    bpe_model_.Encode(normalized, &spans);
  } else {
    unigram_.Encode(normalized, &spans);
  }
  const std::string_view norm(normalized);
  for (size_t i = 0; i < spans.size();) {
    const UnigramModel::Span& span = spans[i];
    if (types_[span.id] != PieceType::kUnknown) {
      fn(norm.substr(span.begin, span.end - span.begin));
      ++i;
      continue;
    }
    if (byte_fallback_) {
      // An unknown character becomes the byte pieces of its UTF-8 encoding.
      for (uint32_t k = span.begin; k < span.end; ++k) {
        fn(BytePieces()[static_cast<uint8_t>(norm[k])]);
      }
      ++i;
      continue;
    }
    // A run of unknown characters is one piece (they are adjacent in the normalized text).
    uint32_t end = span.end;
    size_t j = i + 1;
    while (j < spans.size() && types_[spans[j].id] == PieceType::kUnknown) end = spans[j++].end;
    fn(norm.substr(span.begin, end - span.begin));
    i = j;
  }
}

std::vector<std::string> SentencePieceModel::EncodeToPieces(std::string_view text) const {
  std::vector<std::string> pieces;
  EncodeToPieces(text, [&](std::string_view piece) { pieces.emplace_back(piece); });
  return pieces;
}

template <typename PieceList>
std::string SentencePieceModel::DecodeImpl(const PieceList& pieces) const {
  std::string text;
  // Runs of byte pieces are decoded together so multi-byte characters reassemble; a byte that
  // does not start a well-formed character becomes U+FFFD.
  std::string bytes;
  auto flush_bytes = [&](size_t begin, size_t end) {
    if (begin >= end) return;
    bytes.clear();
    for (size_t k = begin; k < end; ++k) bytes.push_back(static_cast<char>(PieceToByte(pieces[k])));
    const std::string_view b(bytes);
    for (size_t off = 0; off < b.size();) {
      const size_t len = utf8::ValidCharLen(b.substr(off));
      if (len == 0) {
        text.append(utf8::kReplacementChar);
        off += 1;
      } else {
        text.append(b.substr(off, len));
        off += len;
      }
    }
  };

  // The dummy prefix: at the start of the text a leading U+2581 is dropped. With
  // remove_extra_whitespaces every leading one is (the text stays empty, so the next piece is
  // still "at the start"); otherwise only the first, so that "▁ ▁a" decodes to " a".
  bool at_start = true;
  bool leading_space_dropped = false;
  size_t byte_start = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::string_view piece = pieces[i];
    const int32_t id = PieceToId(piece);
    const PieceType type = types_[id];
    if (type == PieceType::kByte) continue;
    flush_bytes(byte_start, i);
    byte_start = i + 1;
    if (leading_space_dropped || !text.empty()) at_start = false;
    leading_space_dropped = false;
    if (type == PieceType::kControl) continue;  // <s>, </s>: no surface
    if (type == PieceType::kUnknown) {
      // The unk piece itself prints as unk_surface; a string unknown to the model prints as is.
      text.append(piece == pieces_[id] ? std::string_view(unk_surface_) : piece);
      continue;
    }
    if (at_start && strip_leading_space_on_decode_ && piece.starts_with(kSpaceSymbol)) {
      piece.remove_prefix(kSpaceSymbol.size());
      leading_space_dropped = !remove_extra_whitespaces_;
    }
    for (size_t pos = 0; pos < piece.size();) {
      if (piece.compare(pos, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
        text.push_back(' ');
        pos += kSpaceSymbol.size();
      } else {
        text.push_back(piece[pos++]);
      }
    }
  }
  flush_bytes(byte_start, pieces.size());

  if (denormalizer_ != nullptr) {
    std::string denormalized;
    denormalizer_->Normalize(text, &denormalized);
    return denormalized;
  }
  return text;
}

std::string SentencePieceModel::DecodePieces(const std::vector<std::string>& pieces) const {
  return DecodeImpl(pieces);
}

std::string SentencePieceModel::DecodePieceViews(std::span<const std::string_view> pieces) const {
  return DecodeImpl(pieces);
}

}  // namespace transerve
