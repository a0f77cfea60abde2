// CTranslate2's TransformerSpec (the encoder-decoder translation models its converters write:
// OPUS-MT, OpenNMT-py and Argos packages, fairseq, M2M-100/NLLB among them) mapped onto the
// engine's Transformer: the spec's variables and attributes as the engine's config and weights,
// and the directory's special tokens as ids. docs/ctranslate2-format.md, section 4, states the
// rules; whatever the engine does not compute (relative positions, rotary, ALiBi, multi-query,
// gated FFNs, RMS norms, ...) is refused at load, naming the variable, never run approximately.
#pragma once

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "model/loader/ctranslate2_directory.h"
#include "model/loader/marian_loader.h"
#include "model/ops/ops.h"

namespace transerve {

// Rows of the sinusoidal table generated for a spec without stored positions: CTranslate2
// grows its table as needed; the engine bounds sources and outputs by it instead.
inline constexpr int64_t kCt2GeneratedPositions = 1024;

// CTranslate2's generated position table: for position p (from 0) and i < D/2, angle
// (p + 1) * exp(-i * ln(10000) / (D/2 - 1)); sines in columns [0, D/2), cosines after them.
Tensor Ct2SinusoidalPositions(int64_t rows, int64_t dim);

// The model of an opened CTranslate2 directory, in the engine's terms:
//  - the target vocabulary's V tokens keep their ids; id V is a pad row added to the decoder's
//    embedding and output tables (zeros, bias 0), which the searches never emit, so a
//    distribution over V + 1 ids with V excluded is CTranslate2's over V;
//  - the decoder starts from V when the spec says start_from_zero_embedding (a zero vector,
//    as CTranslate2 feeds), else from the directory's decoder start token;
//  - weights stored as float16, bfloat16, int8 or int16 (with their scales) are read as
//    float32, then packed in `pack` (nullopt keeps them row-major float32, for a GPU);
//  - generation defaults are CTranslate2's translate_batch defaults (beam 2, length penalty 1,
//    at most 256 tokens).
// `config` is the MarianConfig equivalent (pad, eos, start ids, sizes) the translator reads.
absl::StatusOr<std::unique_ptr<MarianModel>> LoadCt2Transformer(
    const Ct2Directory& dir, std::optional<ops::WeightFormat> pack = ops::WeightFormat::kFloat32);

}  // namespace transerve
