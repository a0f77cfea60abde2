// The thin model layer the server and the offline CLI use: text in, text out, plus the
// step-level API a scheduler needs to batch many requests continuously (Encode, StartSearch,
// Step; a search is released by destroying it). Knows nothing of gRPC.
//
// Threads. The text methods (Tokenize, ValidateOptions, Detokenize, IsEmptySource,
// EmptySourceResult, DefaultOptions) and the accessors of what Create fixed (model, tokenizer,
// special_tokens, device, dtype, dtype_choice) only read state that never changes after Create: any
// number of threads may call them at once, also while a step runs (the server tokenizes on its gRPC
// threads). Everything else (Translate, TranslateIds, Encode, StartSearch, Step, the searches
// they made, CopyLastLogits, kv_pool, device_status) belongs to one step thread at a time (one
// scheduler loop per replica).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/decoding/sentence_search.h"
#include "model/layers/workspace.h"
#include "model/loader/marian_loader.h"
#include "model/ops/ops.h"
#include "model/tokenizer/marian_tokenizer.h"
#include "model/translator/vocabulary_map.h"

namespace transerve {

struct TranslatorOptions {
  std::string model_dir;
  std::string device = "auto";  // auto | cpu | cuda
  // Weights' storage and arithmetic: auto | float32 | float16 (GPU only) | bfloat16 | int8 (CPU
  // only: packed so at load from whatever the checkpoint stores; docs/engine.md, "Low precision
  // on the CPU"). auto is float16 on a GPU; on the CPU the first of the kernel level's formats
  // (AutoCpuDtypesFor: int8, then bfloat16 at avx512_bf16) that passes a quality check against
  // float32 at load (quality_check.h), else float32 (docs/engine.md, "dtype=auto on the CPU").
  // An explicit dtype is loaded as asked, never checked.
  std::string dtype = "auto";
  // Lowers the CPU kernels' instruction-set level for the whole process (ops::SetCpuIsa:
  // avx2, avx512, avx512_vnni, avx512_bf16); empty keeps it. A level the CPU lacks is
  // INVALID_ARGUMENT.
  std::string cpu_isa;
  int num_threads = 0;             // GEMM threads; 0 = every core
  int64_t kv_cache_max_bytes = 0;  // 0 = unbounded
  // False loads the model alone (ids in, ids out: benchmarks on checkpoints without
  // SentencePiece files); the text methods then answer FAILED_PRECONDITION.
  bool with_tokenizer = true;
};

struct TranslationHypothesis {
  std::string text;
  std::vector<int32_t> ids;  // generated ids, EOS included when generated
  float score = 0.0f;
};

struct Translation {
  TranslationHypothesis best;
  std::vector<TranslationHypothesis> alternatives;  // n-best after the best one
};

class Translator {
 public:
  static absl::StatusOr<std::unique_ptr<Translator>> Create(const TranslatorOptions& options);
  // Another translator over this one's weights and tokenizer (shared, not copied), with its own
  // device stream, KV cache pool of the same bound, and scratch. Replicas step side by side on
  // separate threads: on the CPU, with one engine thread each, that is N independent workers
  // and no synchronisation between cores (the engine's pool runs a call inline once as many
  // calls are open as it has threads). RESOURCE_EXHAUSTED when no device stream can be had.
  absl::StatusOr<std::unique_ptr<Translator>> CreateReplica() const;

  // Translates texts in batches of up to `max_batch_size` sentences, sorted by length to limit
  // padding work; results come back in input order. Empty texts give empty translations. Fails as a
  // whole on invalid input (each text is validated before any work starts).
  absl::StatusOr<std::vector<Translation>> Translate(std::span<const std::string> texts,
                                                     const DecodingOptions& options,
                                                     int max_batch_size = 32,
                                                     bool truncate = false);

  // Source ids (EOS included) to search results, in input order: sorted by length into batches
  // of at most `max_batch_size`; empty sources get EmptySourceResult without decoding.
  absl::StatusOr<std::vector<SearchResult>> TranslateSources(
      std::span<const std::vector<int32_t>> sources, const DecodingOptions& options,
      int max_batch_size = 32);

  // Source ids (EOS included) to search results, one batch, static batching.
  absl::StatusOr<std::vector<SearchResult>> TranslateIds(
      std::span<const std::vector<int32_t>> sources, const DecodingOptions& options);

  // --- step-level API -----------------------------------------------------------------------
  // Text to source ids with EOS; INVALID_ARGUMENT for invalid UTF-8 or a source longer than the
  // model's positions (unless `truncate`, which keeps the first tokens and the EOS).
  // `language_token`: a multilingual source's first token (MarianTokenizer::Encode), or "".
  absl::StatusOr<std::vector<int32_t>> Tokenize(std::string_view text, bool truncate,
                                                std::string_view language_token = {}) const;
  // INVALID_ARGUMENT for options this model cannot honour.
  absl::Status ValidateOptions(const DecodingOptions& options) const;
  // Runs the encoder once over the batch and projects each source's cross-attention K/V.
  // RESOURCE_EXHAUSTED when the device is out of memory (fewer sources may fit); UNAVAILABLE
  // once the device is lost (device_status()).
  absl::StatusOr<std::vector<std::shared_ptr<const CrossKv>>> Encode(
      std::span<const std::vector<int32_t>> sources);
  // `source_ids` (the sentence Encode was given) pick its vocabulary shortlist under
  // options.use_vocabulary_map.
  std::unique_ptr<SentenceSearch> StartSearch(std::shared_ptr<const CrossKv> source,
                                              const DecodingOptions& options,
                                              std::span<const int32_t> source_ids = {});
  // One decoder step for every search that is not done, in one batched call.
  // RESOURCE_EXHAUSTED (and no search advanced) when the KV cache is full or the device is out
  // of memory; INTERNAL when a device call failed; UNAVAILABLE once the device is lost.
  absl::Status Step(std::span<SentenceSearch* const> searches);
  // `replacements`: UnknownReplacements' answer, put in place of the unknown ids.
  std::string Detokenize(std::span<const int32_t> ids,
                         std::span<const std::string> replacements = {}) const;
  // Under the model's replace_unknowns (DecodingOptions): for each unknown id in `ids`, the piece
  // of `source_text` (the text the hypothesis's source ids were made from) that its alignment row
  // weighs most, the first of equal weights, as CTranslate2 picks it; "" at the other positions.
  // Empty when the model does not replace unknowns, `ids` holds none, or `alignment` is not
  // ids.size() rows.
  std::vector<std::string> UnknownReplacements(std::span<const int32_t> ids,
                                               std::span<const float> alignment,
                                               std::string_view source_text) const;
  // An empty or blank text tokenizes to EOS alone. The text APIs (Translate, the server) do not
  // decode it: its translation is the empty text, whatever the model would generate from EOS
  // alone (a trained model often invents a sentence). TranslateIds keeps the model's behaviour.
  bool IsEmptySource(std::span<const int32_t> source_ids) const;
  // The answer for such a source: one hypothesis, ids [EOS], score 0 (probability 1), and with
  // return_alignment the 1x1 alignment EOS -> EOS.
  SearchResult EmptySourceResult(const DecodingOptions& options) const;

  // The model's own generation defaults (generation_config.json), validated and capped.
  DecodingOptions DefaultOptions() const;
  const MarianModel& model() const { return *model_; }
  // Bytes the model's weights hold (on its device), each storage once.
  int64_t WeightBytes() const;
  const MarianTokenizer& tokenizer() const { return *tokenizer_; }
  // The model directory's vmap.txt (DecodingOptions::use_vocabulary_map), or null.
  const VocabularyMap* vocabulary_map() const { return vocabulary_map_.get(); }
  const SpecialTokens& special_tokens() const { return special_; }
  const KvBlockPool& kv_pool() const { return *kv_pool_; }
  // What a scheduler weighs admission by, in KV blocks: the pool's bound (0: unbounded), and
  // the most blocks one sentence with these options can take during the next kKvBlockPositions
  // steps (each of its beam_size rows at most one new or copied-on-write block per layer).
  int64_t KvCapacityBlocks() const;
  int64_t KvHeadroomBlocks(const DecodingOptions& options) const;
  // A host copy of the raw logits [rows, target_vocab] of the last Step, recomputed from its
  // hidden states (the step itself may not store them), its own storage
  // (diagnostics and parity tests; a step copies only its candidates off the GPU); empty
  // before the first step. Step thread.
  Tensor CopyLastLogits() const;
  Device device() const { return device_; }
  // OK, or UNAVAILABLE with the reason once the device is lost for good (a CUDA "sticky" error:
  // every later call would fail the same way until the process restarts). From then on
  // Encode and Step answer it at once, without touching the device.
  const absl::Status& device_status() const { return device_status_; }
  // "float32", "float16", "bfloat16" or "int8": how the linear weights are stored.
  const std::string& dtype() const { return dtype_; }
  // How dtype() was chosen, one line for logs and model listings: "int8 (asked)" for an
  // explicit dtype; under auto the level, each quality check's figures and the outcome, e.g.
  // "auto: int8 (avx512_vnni: int8 on vpdpbusd; int8 check passed: top-1 agreement 0.992 over
  // 395 positions, mean |dlogp| 0.022)" or "auto: float32 (avx2: int8 on vpmaddwd; int8 check
  // failed: top-1 agreement 0.000 < 0.95 over 16 positions, ...)"; on a GPU "auto: float16
  // (GPU)".
  const std::string& dtype_choice() const { return dtype_choice_; }

 private:
  Translator() = default;
  // What dtype=auto loads on the CPU (translator_auto_dtype.cc).
  struct AutoLoad {
    std::shared_ptr<const MarianModel> model;
    ops::WeightFormat format = ops::WeightFormat::kFloat32;
    std::string choice;  // dtype_choice()
  };
  static absl::StatusOr<AutoLoad> LoadAutoCpu(const std::string& model_dir);
  // A CPU translator over `model` (packed in `format`) for the quality check: no tokenizer, an
  // unbounded KV pool.
  static absl::StatusOr<std::unique_ptr<Translator>> ForCheck(
      std::shared_ptr<const MarianModel> model, ops::WeightFormat format);
  absl::Status CheckVocabularySizes() const;
  // stream_ on device_; RESOURCE_EXHAUSTED when the device has none to give.
  absl::Status OpenStream();
  absl::Status StepOnce(std::span<SentenceSearch* const> searches);
  // The step's candidates into row_candidates_ when some search has a vocabulary shortlist.
  void RankShortlisted(std::span<const std::pair<SentenceSearch*, int64_t>> firsts);
  template <typename Work>
  auto Guarded(const char* what, Work&& work) -> decltype(work());

  // This replica's device work goes here (every entry point that touches the device opens a
  // StreamScope on it). Declared first, so destroyed last: after the tensors queued on it.
  ops::DeviceStream stream_;
  std::shared_ptr<const MarianModel> model_;             // shared with replicas
  std::shared_ptr<const MarianTokenizer> tokenizer_;     // shared with replicas
  std::shared_ptr<const VocabularyMap> vocabulary_map_;  // shared with replicas; may be null
  std::unique_ptr<KvBlockPool> kv_pool_;
  SpecialTokens special_;
  Device device_ = Device::kCpu;
  absl::Status device_status_;
  std::string dtype_ = "float32";
  std::string dtype_choice_;
  Workspace workspace_;
  Tensor hidden_;
  Tensor logits_;
  Tensor alignment_;       // head-averaged last-layer cross-attention of the step, when asked
  Tensor host_alignment_;  // alignment_'s copy when the model runs on a GPU
  // `t` itself on the CPU, else its copy in *host.
  static const Tensor& HostCopy(const Tensor& t, Tensor* host);
  Tensor encoder_out_;
  std::vector<DecoderRow> rows_;
  std::vector<ops::CandidateRule> row_rules_;             // per row of the step
  std::vector<std::vector<TokenScore>> part_candidates_;  // a shortlisted step's share
  std::vector<std::vector<TokenScore>> row_candidates_;   // per row of the step
};

}  // namespace transerve
