// Hand-built ModelProtos for the tokenizer unit tests.
#include "tests/model/tokenizer/spm_model_builder.h"

#include <cstdio>

namespace transerve::testing {

spm::ModelProto MakeModelProto(const std::vector<PieceSpec>& pieces) {
  spm::ModelProto proto;
  auto add = [&](const PieceSpec& spec) {
    auto* p = proto.add_pieces();
    p->set_piece(spec.piece);
    p->set_score(spec.score);
    p->set_type(spec.type);
  };
  add({"<unk>", 0, spm::ModelProto::SentencePiece::UNKNOWN});
  add({"<s>", 0, spm::ModelProto::SentencePiece::CONTROL});
  add({"</s>", 0, spm::ModelProto::SentencePiece::CONTROL});
  for (const PieceSpec& spec : pieces) add(spec);
  auto* trainer = proto.mutable_trainer_spec();
  trainer->set_model_type(spm::TrainerSpec::UNIGRAM);
  trainer->set_vocab_size(proto.pieces_size());
  auto* normalizer = proto.mutable_normalizer_spec();
  normalizer->set_name("identity");
  normalizer->set_add_dummy_prefix(true);
  normalizer->set_remove_extra_whitespaces(true);
  normalizer->set_escape_whitespaces(true);
  return proto;
}

std::vector<PieceSpec> BytePieceSpecs() {
  std::vector<PieceSpec> specs;
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    specs.push_back({buf, 0, spm::ModelProto::SentencePiece::BYTE});
  }
  return specs;
}

}  // namespace transerve::testing
