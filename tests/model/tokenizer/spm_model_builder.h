// Builds small SentencePiece ModelProtos by hand for unit tests: exact scores and piece types,
// identity normalization (empty charsmap) unless the test sets a spec field.
#ifndef TRANSERVE_TESTS_MODEL_TOKENIZER_SPM_MODEL_BUILDER_H_
#define TRANSERVE_TESTS_MODEL_TOKENIZER_SPM_MODEL_BUILDER_H_

#include <string>
#include <vector>

#include "model/tokenizer/sentencepiece_model.pb.h"

namespace transerve::testing {

using SpmPieceType = spm::ModelProto::SentencePiece::Type;

struct PieceSpec {
  std::string piece;
  float score = 0;
  SpmPieceType type = spm::ModelProto::SentencePiece::NORMAL;
};

// <unk>, <s>, </s> (ids 0, 1, 2) followed by `pieces`, with trainer_spec and normalizer_spec set
// as spm_train would (unigram, identity rules, dummy prefix, whitespace removal and escaping).
spm::ModelProto MakeModelProto(const std::vector<PieceSpec>& pieces);

// The 256 <0xXX> byte pieces, for byte_fallback models.
std::vector<PieceSpec> BytePieceSpecs();

}  // namespace transerve::testing

#endif  // TRANSERVE_TESTS_MODEL_TOKENIZER_SPM_MODEL_BUILDER_H_
