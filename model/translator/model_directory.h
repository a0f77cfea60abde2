// What a model directory holds, read without loading it: whether it is a model at all, its
// config.json, and how many bytes its weights will take once loaded. For whoever must decide
// about a model before paying for its load (the server's model repository). And the load
// itself, whichever family's layout the directory has.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/loader/marian_loader.h"
#include "model/loader/model_config.h"
#include "model/ops/ops.h"
#include "model/tokenizer/marian_tokenizer.h"

namespace transerve {

// config.json and a checkpoint the loader reads (model.safetensors or pytorch_model.bin), or a
// CTranslate2 model.bin with its (shared or target) vocabulary, or an Argos Translate package
// folder holding such a model.bin in model/ (argos_package.h). Every function below takes the
// package folder as the model directory.
bool HoldsModel(const std::string& dir);

// config.json, as the loader reads it.
absl::StatusOr<MarianConfig> ReadModelConfig(const std::string& dir);

// The weights' bytes once loaded as float32, from the checkpoint's tensor shapes (tied tables
// once), without reading the tensors; 0 when the checkpoint cannot be opened. An estimate: the
// engine's packing and fused projections change it a little.
int64_t EstimateWeightBytes(const std::string& dir);

// Whether `dir` is a CTranslate2 model directory (it holds model.bin, itself or in an Argos
// package's model/).
bool IsCt2Directory(const std::string& dir);

// The language codes of a CTranslate2 directory converted from an M2M-100 / NLLB-200 model (its
// vocabulary's tokens written as codes: several, one after the other), in vocabulary order;
// empty for any other directory, an Argos Translate package included.
std::vector<std::string> Ct2LanguageCodes(const std::string& dir);

// The model in `dir`: a CTranslate2 directory (model.bin: LoadCt2Transformer) or a Hugging Face
// Marian checkpoint (LoadMarianModel), packed in `pack` (nullopt: row-major float32). An Argos
// package's generation defaults are Argos Translate's: beam 4, length penalty 0.2.
absl::StatusOr<std::unique_ptr<MarianModel>> LoadModelDirectory(
    const std::string& dir, std::optional<ops::WeightFormat> pack);

// The tokenizer of `model`, loaded from `dir`. A Marian checkpoint's own files; for a
// CTranslate2 directory, the SentencePiece models its users run beside it (source.spm and
// target.spm, as OPUS-MT conversions keep them; else sentencepiece.model in the directory or
// its parent, as an Argos Translate package holds it, or M2M-100 / NLLB-200's
// sentencepiece.bpe.model) with the directory's vocabularies as the id map, and the language
// codes of Ct2LanguageCodes. The source gets the bos token when config.json's add_source_bos says
// so, and the eos token when add_source_eos says so or the model is a Marian conversion (it starts
// from a zero embedding: its users feed the Hugging Face tokenizer's pieces, which end in eos).
absl::StatusOr<std::unique_ptr<MarianTokenizer>> LoadTokenizer(const std::string& dir,
                                                               const MarianModel& model);

}  // namespace transerve
