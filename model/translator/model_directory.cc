#include "model/translator/model_directory.h"

#include <filesystem>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/core/read_file.h"
#include "model/loader/ctranslate2_directory.h"
#include "model/loader/ctranslate2_transformer.h"
#include "model/loader/marian_loader.h"
#include "model/tokenizer/m2m100_tokenizer.h"
#include "model/translator/argos_package.h"

namespace transerve {

namespace fs = std::filesystem;

bool HoldsModel(const std::string& dir) {
  const fs::path d(WeightsFolder(dir));
  if (IsRegularFile(d / "model.bin")) {
    for (const char* vocabulary : {"shared_vocabulary", "target_vocabulary"}) {
      for (const char* ext : {".json", ".txt"}) {
        if (IsRegularFile(d / (std::string(vocabulary) + ext))) return true;
      }
    }
    return false;
  }
  return IsRegularFile(d / "config.json") &&
         (IsRegularFile(d / "model.safetensors") || IsRegularFile(d / "pytorch_model.bin"));
}

absl::StatusOr<MarianConfig> ReadModelConfig(const std::string& dir) {
  return LoadMarianConfig((fs::path(dir) / "config.json").string());
}

int64_t EstimateWeightBytes(const std::string& dir) {
  if (IsCt2Directory(dir)) {
    // Every stored variable once (aliases are not stored twice), as float32 after the load.
    auto bin = Ct2ModelBin::Open((fs::path(WeightsFolder(dir)) / "model.bin").string());
    if (!bin.ok()) return 0;
    int64_t elements = 0;
    for (const Ct2Variable& v : bin->variables()) {
      int64_t n = 1;
      for (int64_t s : v.shape) n *= s;
      elements += n;
    }
    return elements * static_cast<int64_t>(sizeof(float));
  }
  auto file = OpenWeights(dir);
  if (!file.ok()) return 0;
  // A pickle may store the tied tables under several names sharing one storage: each shape of
  // those is counted once.
  static const std::set<std::string> kTiedNames = {
      "model.shared.weight", "model.encoder.embed_tokens.weight",
      "model.decoder.embed_tokens.weight", "lm_head.weight"};
  std::set<std::vector<int64_t>> tied_shapes;
  int64_t elements = 0;
  for (const std::string& name : (*file)->Names()) {
    const CheckpointTensorInfo* info = (*file)->Find(name);
    if (kTiedNames.contains(name) && !tied_shapes.insert(info->shape).second) continue;
    int64_t n = 1;
    for (int64_t s : info->shape) n *= s;
    elements += n;
  }
  return elements * static_cast<int64_t>(sizeof(float));
}

bool IsCt2Directory(const std::string& dir) {
  return IsRegularFile(fs::path(WeightsFolder(dir)) / "model.bin");
}

absl::StatusOr<std::unique_ptr<MarianModel>> LoadModelDirectory(
    const std::string& dir, std::optional<ops::WeightFormat> pack) {
  if (!IsCt2Directory(dir)) return LoadMarianModel(dir, pack);
  auto opened = OpenCt2Directory(WeightsFolder(dir));
  if (!opened.ok()) return opened.status();
  auto model = LoadCt2Transformer(*opened, pack);
  if (model.ok() && IsArgosPackage(dir)) {
    // What Argos Translate asks CTranslate2 for, so a LibreTranslate user gets the same search.
    (*model)->generation.num_beams = 4;
    (*model)->generation.length_penalty = 0.2f;
    (*model)->generation.replace_unknowns = true;
  }
  return model;
}

namespace {

// See Ct2LanguageCodes. A piece of another model that happens to look like a code is not one.
std::vector<std::string> LanguageCodesOf(const Ct2Vocabulary& v) {
  std::vector<std::string> codes;
  int64_t first = -1, last = -1;
  for (int64_t i = 0; i < v.size(); ++i) {
    if (!IsM2m100LanguageToken(v.token(i))) continue;
    if (first < 0) first = i;
    last = i;
    codes.push_back(v.token(i));
  }
  if (codes.size() < 2 || last - first + 1 != static_cast<int64_t>(codes.size())) return {};
  return codes;
}

}  // namespace

std::vector<std::string> Ct2LanguageCodes(const std::string& dir) {
  if (!IsCt2Directory(dir) || IsArgosPackage(dir)) return {};
  auto opened = OpenCt2Directory(WeightsFolder(dir));
  return opened.ok() ? LanguageCodesOf(*opened->source_vocabulary) : std::vector<std::string>();
}

namespace {

// The SentencePiece models of a CTranslate2 directory: (source, target) paths, or empty.
std::pair<fs::path, fs::path> Ct2SentencePieceFiles(const fs::path& dir) {
  if (IsRegularFile(dir / "source.spm") && IsRegularFile(dir / "target.spm")) {
    return {dir / "source.spm", dir / "target.spm"};
  }
  for (const fs::path& d : {dir, dir.parent_path()}) {
    // Argos Translate's name, then M2M-100 / NLLB-200's.
    for (const char* name : {"sentencepiece.model", "sentencepiece.bpe.model"}) {
      if (IsRegularFile(d / name)) return {d / name, d / name};
    }
  }
  return {};
}

// `argos_package`: the directory is an Argos Translate package's model/, fed as Argos Translate
// feeds it.
absl::StatusOr<std::unique_ptr<MarianTokenizer>> LoadCt2Tokenizer(const std::string& dir,
                                                                  const MarianModel& model,
                                                                  bool argos_package) {
  auto opened = OpenCt2Directory(dir);
  if (!opened.ok()) return opened.status();
  const auto [source_path, target_path] = Ct2SentencePieceFiles(fs::path(dir));
  if (source_path.empty()) {
    return absl::NotFoundError(absl::StrCat(
        dir,
        ": no SentencePiece model beside the CTranslate2 model (source.spm and target.spm, "
        "or sentencepiece.model or sentencepiece.bpe.model here or in the folder above)"));
  }
  MarianTokenizer::Parts parts;
  auto tokens = [](const Ct2Vocabulary& v) {
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(v.size()));
    for (int64_t i = 0; i < v.size(); ++i) out.push_back(v.token(i));
    return out;
  };
  parts.source_vocab = MarianVocab::FromTokens(tokens(*opened->source_vocabulary));
  if (opened->target_vocabulary != opened->source_vocabulary) {
    parts.target_vocab = MarianVocab::FromTokens(tokens(*opened->target_vocabulary));
  }
  auto source_spm = SentencePieceModel::LoadFromFile(source_path.string());
  if (!source_spm.ok()) return source_spm.status();
  parts.source_spm = *std::move(source_spm);
  if (target_path == source_path) {
    parts.target_spm = parts.source_spm;
  } else {
    auto target_spm = SentencePieceModel::LoadFromFile(target_path.string());
    if (!target_spm.ok()) return target_spm.status();
    parts.target_spm = *std::move(target_spm);
  }
  const Ct2SpecialTokens& special = opened->tokens;
  parts.eos_token = special.eos;
  parts.unk_token = special.unk;
  if (special.add_source_bos) parts.bos_token = special.bos;
  // A Marian model's CTranslate2 users feed it the Hugging Face tokenizer's pieces, which end in
  // EOS although the converter writes add_source_eos false. Argos Translate feeds SentencePiece's
  // pieces as they are, whatever the model: a package gets what config.json says and no more.
  const bool marian_conversion = model.config.decoder_start_token_id == model.config.pad_token_id;
  parts.append_eos = special.add_source_eos || (marian_conversion && !argos_package);
  // The same users read `>>xx<<` codes and special tokens' strings as Hugging Face does; every
  // other directory gets SentencePiece's pieces of the whole text.
  parts.marian_text = marian_conversion && !argos_package;
  parts.pad_id = model.config.pad_token_id;
  // An M2M-100 / NLLB-200 conversion: its codes start the source and are forced on the target;
  // its users feed the Hugging Face tokenizer's [code] pieces [</s>] (docs/m2m100-format.md).
  if (!marian_conversion && !argos_package) {
    parts.language_tokens = LanguageCodesOf(*opened->source_vocabulary);
    if (!parts.language_tokens.empty()) {
      parts.append_eos = true;
      parts.hidden_tokens = {"<s>", "<mask>"};
      // M2M-100's ("__en__") decodes as SentencePiece does, unstripped; NLLB-200's strips.
      parts.strip_decoded = !parts.language_tokens.front().starts_with("__");
    }
  }
  auto tokenizer = MarianTokenizer::FromParts(std::move(parts));
  if (!tokenizer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": ", tokenizer.status().message()));
  }
  return tokenizer;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MarianTokenizer>> LoadTokenizer(const std::string& dir,
                                                               const MarianModel& model) {
  if (IsCt2Directory(dir)) return LoadCt2Tokenizer(WeightsFolder(dir), model, IsArgosPackage(dir));
  if (model.config.architecture == MarianConfig::Architecture::kM2m100) {
    return LoadM2m100Tokenizer(dir);
  }
  return MarianTokenizer::Load(dir);
}

}  // namespace transerve
