// Fuzz target: the SentencePiece model reader and the unigram and BPE tokenizers. The first byte
// picks the mode: even, the rest is text encoded (and decoded) with a real model (the tiny
// fixture's source.spm); odd, the rest is a serialized model, loaded and, when accepted, used on a
// short text.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "model/tokenizer/sentencepiece_model.h"

namespace {

const transerve::SentencePieceModel* FixtureModel() {
  static const auto* model = [] {
    auto m = transerve::SentencePieceModel::LoadFromFile(TRANSERVE_SOURCE_DIR
                                                         "/tests/fixtures/tiny-marian/model/"
                                                         "source.spm");
    return m.ok() ? m->release() : nullptr;
  }();
  return model;
}

void RoundTrip(const transerve::SentencePieceModel& model, std::string_view text) {
  const auto pieces = model.EncodeToPieces(text);
  for (const auto& piece : pieces) (void)model.PieceToId(piece);
  (void)model.DecodePieces(pieces);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    if (const auto* model = FixtureModel()) RoundTrip(*model, rest);
    return 0;
  }
  auto model = transerve::SentencePieceModel::LoadFromSerialized(rest, "fuzz input");
  if (model.ok()) RoundTrip(**model, "Hello wörld, 123 \xe2\x96\x81 \xff tests.");
  return 0;
}
