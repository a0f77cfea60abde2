#include "model/translator/translator.h"

#include <malloc.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/core/logging.h"
#include "model/core/thread_pool.h"
#include "model/layers/encoder.h"
#include "model/ops/ops.h"
#include "model/translator/model_directory.h"

namespace transerve {
namespace {

constexpr int kMaxBeamSize = 64;

absl::Status NoTokenizerError() {
  return absl::FailedPreconditionError("this translator was loaded without its tokenizer");
}

// The KV pool's bound for a byte budget: whole blocks (keys and values of kKvBlockPositions
// positions), at least one; 0 bytes means unbounded.
int64_t KvBlocksWithin(int64_t max_bytes, int64_t d_model) {
  if (max_bytes <= 0) return 0;
  const int64_t block_bytes = 2 * kKvBlockPositions * d_model * static_cast<int64_t>(sizeof(float));
  return std::max<int64_t>(1, max_bytes / block_bytes);
}

}  // namespace

// Turns what the engine throws into its status: running out of memory is RESOURCE_EXHAUSTED
// (less work at once may fit, so the scheduler retries with fewer sentences); a lost device is
// UNAVAILABLE, now and for every later call, which no longer touches it; anything else (a failed
// device call) INTERNAL. Callers answer instead of the process dying.
template <typename Work>
auto Translator::Guarded(const char* what, Work&& work) -> decltype(work()) {
  if (!device_status_.ok()) return device_status_;
  try {
    return work();
  } catch (const OutOfMemoryError& e) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": ", e.what()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": out of host memory"));
  } catch (const DeviceLostError& e) {
    device_status_ = absl::UnavailableError(absl::StrCat(
        what, ": the GPU failed and cannot run again until the process restarts: ", e.what()));
    Log().error("{}", std::string(device_status_.message()));
    return device_status_;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

absl::StatusOr<std::unique_ptr<Translator>> Translator::Create(const TranslatorOptions& options) {
  auto device = ops::ResolveDevice(options.device);
  if (!device.ok()) return device.status();
  std::unique_ptr<Translator> t(new Translator());
  t->device_ = *device;
  if (absl::Status s = t->OpenStream(); !s.ok()) return s;
  const ops::StreamScope scope(t->stream_);
  const bool cpu = t->device_ == Device::kCpu;
  if (!options.cpu_isa.empty()) {
    if (absl::Status s = ops::SetCpuIsa(options.cpu_isa); !s.ok()) return s;
  }
  const std::string& dtype = options.dtype;
  if (dtype != "auto" && dtype != "float32" && dtype != "float16" && dtype != "bfloat16" &&
      dtype != "int8") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown dtype '", dtype, "' (expected auto, float32, bfloat16, int8 or float16)"));
  }
  if (dtype == "float16" && cpu) {
    return absl::InvalidArgumentError(
        "dtype float16 needs a GPU: on the CPU use float32, bfloat16 or int8");
  }
  if ((dtype == "bfloat16" || dtype == "int8") && !cpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype ", dtype, " runs on the CPU only: on a GPU use float16 or float32"));
  }
  // Before the load: dtype=auto's quality check runs on every core.
  const int threads = options.num_threads > 0
                          ? options.num_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ops::SetNumThreads(threads);
  ThreadPool::SetEngineThreads(threads);
  if (cpu && dtype == "auto") {
    auto loaded = LoadAutoCpu(options.model_dir);
    if (!loaded.ok()) return loaded.status();
    t->model_ = std::move(loaded->model);
    t->dtype_ = std::string(ops::WeightFormatName(loaded->format));
    t->dtype_choice_ = std::move(loaded->choice);
  } else {
    // The CPU packs its weights in the chosen format as it reads them (no conversion step);
    // the GPU takes them row-major, uploaded once.
    std::optional<ops::WeightFormat> pack;
    if (cpu) {
      pack = dtype == "int8"       ? ops::WeightFormat::kInt8
             : dtype == "bfloat16" ? ops::WeightFormat::kBFloat16
                                   : ops::WeightFormat::kFloat32;
      t->dtype_ = std::string(ops::WeightFormatName(*pack));
    }
    auto model = LoadModelDirectory(options.model_dir, pack);
    if (!model.ok()) return model.status();
    if (!cpu) {
      t->dtype_ = dtype == "float32" ? "float32" : "float16";
      (*model)->weights = CopyWeightsTo((*model)->weights, t->device_,
                                        t->dtype_ == "float16" ? DType::kFloat16 : DType::kFloat32);
    }
    t->model_ = *std::move(model);
    t->dtype_choice_ = dtype == "auto" ? "auto: " + t->dtype_ + " (GPU)" : t->dtype_ + " (asked)";
  }
  // What the load freed (float tensors once packed, conversion chunks, the cross-attention
  // parts before they were joined, the host copies once on a GPU, auto's float32 reference)
  // goes back to the OS instead of staying in the heap: 55-58 MB of resident size on the
  // opus-mt shape on the CPU, in every dtype (BENCHMARKS.md).
  malloc_trim(0);
  const MarianConfig& c = t->model_->config;
  if (options.with_tokenizer) {
    auto tokenizer = LoadTokenizer(options.model_dir, *t->model_);
    if (!tokenizer.ok()) return tokenizer.status();
    t->tokenizer_ = *std::move(tokenizer);
    // A CTranslate2 directory's loader has checked its tables against its vocabularies.
    if (!IsCt2Directory(options.model_dir)) {
      if (auto s = t->CheckVocabularySizes(); !s.ok()) return s;
    }
    auto vmap = VocabularyMap::Load(options.model_dir, *t->tokenizer_);
    if (vmap.ok()) {
      Log().info("vocabulary map: {} rules (vmap.txt)", vmap->rules());
      t->vocabulary_map_ = std::make_shared<const VocabularyMap>(*std::move(vmap));
    } else if (!absl::IsNotFound(vmap.status())) {
      return vmap.status();
    }
  }
  t->special_ = {c.pad_token_id, c.eos_token_id, c.decoder_start_token_id};
  t->kv_pool_ = std::make_unique<KvBlockPool>(
      c.d_model, t->device_, KvBlocksWithin(options.kv_cache_max_bytes, c.d_model));
  t->stream_.Synchronize();  // the weights are in place before the first request
  Log().info("translator ready on {} ({}, {}{}); dtype {}", DeviceName(t->device_),
             ops::DeviceDescription(t->device_), t->dtype_,
             cpu ? "; " + ops::CpuKernelDescription() : "", t->dtype_choice_);
  return t;
}

absl::StatusOr<std::unique_ptr<Translator>> Translator::ForCheck(
    std::shared_ptr<const MarianModel> model, ops::WeightFormat format) {
  std::unique_ptr<Translator> t(new Translator());
  if (absl::Status s = t->OpenStream(); !s.ok()) return s;
  const MarianConfig& c = model->config;
  t->special_ = {c.pad_token_id, c.eos_token_id, c.decoder_start_token_id};
  t->kv_pool_ = std::make_unique<KvBlockPool>(c.d_model, Device::kCpu, /*max_blocks=*/0);
  t->dtype_ = std::string(ops::WeightFormatName(format));
  t->model_ = std::move(model);
  return t;
}

absl::Status Translator::OpenStream() {
  try {
    stream_ = ops::DeviceStream(device_);
  } catch (const std::runtime_error& e) {
    return absl::ResourceExhaustedError(e.what());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Translator>> Translator::CreateReplica() const {
  std::unique_ptr<Translator> t(new Translator());
  t->device_ = device_;
  if (absl::Status s = t->OpenStream(); !s.ok()) return s;
  t->model_ = model_;
  t->tokenizer_ = tokenizer_;
  t->vocabulary_map_ = vocabulary_map_;
  t->special_ = special_;
  t->dtype_ = dtype_;
  t->dtype_choice_ = dtype_choice_;
  t->device_status_ = device_status_;
  t->kv_pool_ =
      std::make_unique<KvBlockPool>(model_->config.d_model, device_, kv_pool_->max_blocks());
  return t;
}

int64_t Translator::KvCapacityBlocks() const { return kv_pool_->max_blocks(); }

int64_t Translator::KvHeadroomBlocks(const DecodingOptions& options) const {
  return static_cast<int64_t>(options.beam_size) * model_->transformer.decoder_layers;
}

absl::Status Translator::CheckVocabularySizes() const {
  const MarianConfig& c = model_->config;
  if (c.architecture == MarianConfig::Architecture::kM2m100) {
    // The published tables have rows past the tokenizer's last id (M2M-100's made-up words,
    // NLLB-200's padding to a multiple); fewer rows than ids would be out of bounds.
    if (tokenizer_->source_vocab_size() > c.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(model_->model_dir, ": the tokenizer has ", tokenizer_->source_vocab_size(),
                       " ids but config.json says vocab_size ", c.vocab_size));
    }
    return absl::OkStatus();
  }
  if (tokenizer_->source_vocab_size() != c.vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(model_->model_dir, ": vocab.json has ", tokenizer_->source_vocab_size(),
                     " entries but config.json says vocab_size ", c.vocab_size));
  }
  if (tokenizer_->target_vocab_size() != c.decoder_vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        model_->model_dir, ": the target vocabulary has ", tokenizer_->target_vocab_size(),
        " entries but config.json says decoder_vocab_size ", c.decoder_vocab_size));
  }
  return absl::OkStatus();
}

DecodingOptions Translator::DefaultOptions() const {
  const GenerationDefaults& g = model_->generation;
  DecodingOptions o;
  o.beam_size = std::clamp(g.num_beams, 1, kMaxBeamSize);
  const int max_positions = static_cast<int>(model_->config.max_position_embeddings);
  o.max_length = g.max_length > 0 ? std::min(g.max_length, max_positions) : max_positions;
  o.min_length = std::min(g.min_length, o.max_length);
  o.length_penalty = g.length_penalty;
  o.rules = g.search_rules;
  o.replace_unknowns = g.replace_unknowns;
  o.num_hypotheses = std::clamp(g.num_return_sequences, 1, o.beam_size);
  return o;
}

absl::Status Translator::ValidateOptions(const DecodingOptions& o) const {
  const int max_positions = static_cast<int>(model_->config.max_position_embeddings);
  if (o.beam_size < 1 || o.beam_size > kMaxBeamSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("beam_size must be in [1, ", kMaxBeamSize, "], got ", o.beam_size));
  }
  // The n-th generated token is fed at position n, so the last position used is max_length - 1.
  if (o.max_length < 1 || o.max_length > max_positions) {
    return absl::InvalidArgumentError(absl::StrCat("max_length must be in [1, ", max_positions,
                                                   "] for this model, got ", o.max_length));
  }
  if (o.min_length < 0 || o.min_length > o.max_length) {
    return absl::InvalidArgumentError(absl::StrCat(
        "min_length must be in [0, max_length=", o.max_length, "], got ", o.min_length));
  }
  if (!std::isfinite(o.length_penalty)) {
    return absl::InvalidArgumentError("length_penalty must be finite");
  }
  const int64_t target_vocab = model_->transformer.target_vocab_size;
  if (o.forced_first_token >= target_vocab || o.forced_first_token == special_.pad ||
      o.forced_first_token < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("forced_first_token ", o.forced_first_token, " is not a token this model ",
                     "generates (vocabulary of ", target_vocab, ", pad ", special_.pad, ")"));
  }
  if (o.num_hypotheses < 1 || o.num_hypotheses > o.beam_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_hypotheses must be in [1, beam_size=", o.beam_size, "], got ", o.num_hypotheses));
  }
  if (o.use_vocabulary_map) {
    if (vocabulary_map_ == nullptr) {
      return absl::InvalidArgumentError(
          "use_vocabulary_map: this model has no vocabulary map (vmap.txt in its directory)");
    }
    if (device_ != Device::kCpu || model_->weights.output.packed.empty()) {
      return absl::InvalidArgumentError(
          "use_vocabulary_map: the vocabulary shortlist runs on the CPU only");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> Translator::Tokenize(std::string_view text, bool truncate,
                                                          std::string_view language_token) const {
  if (tokenizer_ == nullptr) return NoTokenizerError();
  auto ids = tokenizer_->Encode(text, language_token);
  if (!ids.ok()) return ids.status();
  const int64_t limit = model_->config.max_position_embeddings;
  if (static_cast<int64_t>(ids->size()) > limit) {
    if (!truncate) {
      return absl::InvalidArgumentError(
          absl::StrCat("source is ", ids->size(), " tokens (EOS included), longer than the ", limit,
                       " this model accepts; shorten it or ask for truncation"));
    }
    ids->resize(static_cast<size_t>(limit));
    ids->back() = special_.eos;
  }
  return ids;
}

std::string Translator::Detokenize(std::span<const int32_t> ids,
                                   std::span<const std::string> replacements) const {
  return tokenizer_ == nullptr ? std::string() : tokenizer_->Decode(ids, replacements);
}

std::vector<std::string> Translator::UnknownReplacements(std::span<const int32_t> ids,
                                                         std::span<const float> alignment,
                                                         std::string_view source_text) const {
  if (tokenizer_ == nullptr || !model_->generation.replace_unknowns || ids.empty() ||
      alignment.empty() || alignment.size() % ids.size() != 0 ||
      std::find(ids.begin(), ids.end(), tokenizer_->unk_id()) == ids.end()) {
    return {};
  }
  const size_t source_length = alignment.size() / ids.size();
  const std::vector<std::string> pieces = tokenizer_->SourcePieces(source_text);
  // The pieces' positions in the source ids: after a BOS, before an EOS, and no further than
  // the source (a truncated one holds fewer).
  const size_t first = std::min<size_t>(tokenizer_->source_offset(), source_length);
  const size_t count = std::min(pieces.size(), source_length - first);
  std::vector<std::string> out(ids.size());
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] != tokenizer_->unk_id() || count == 0) continue;
    const float* row = alignment.data() + t * source_length + first;
    out[t] = pieces[std::max_element(row, row + count) - row];
  }
  return out;
}

absl::StatusOr<std::vector<std::shared_ptr<const CrossKv>>> Translator::Encode(
    std::span<const std::vector<int32_t>> sources) {
  const ops::StreamScope scope(stream_);
  std::vector<int32_t> ids;
  std::vector<int32_t> offsets{0};
  for (const auto& s : sources) {
    if (s.empty() || static_cast<int64_t>(s.size()) > model_->config.max_position_embeddings) {
      return absl::InvalidArgumentError(absl::StrCat("source of ", s.size(),
                                                     " tokens: must be 1 to ",
                                                     model_->config.max_position_embeddings));
    }
    for (int32_t id : s) {
      if (id < 0 || id >= model_->config.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("source token id ", id, " out of range"));
      }
    }
    ids.insert(ids.end(), s.begin(), s.end());
    offsets.push_back(static_cast<int32_t>(ids.size()));
  }
  using Encoded = std::vector<std::shared_ptr<const CrossKv>>;
  return Guarded("encoder", [&]() -> absl::StatusOr<Encoded> {
    EncodePacked(model_->transformer, model_->weights, ids, offsets, &workspace_, &encoder_out_);
    // A fresh tensor per batch: the sources keep views into it for as long as they live.
    Tensor kv;
    ProjectCrossKv(model_->weights, encoder_out_, &kv);
    Encoded encoded;
    for (size_t b = 0; b < sources.size(); ++b) {
      encoded.push_back(std::make_shared<CrossKv>(CrossKv{kv.Rows(offsets[b], offsets[b + 1])}));
    }
    return encoded;
  });
}

std::unique_ptr<SentenceSearch> Translator::StartSearch(std::shared_ptr<const CrossKv> source,
                                                        const DecodingOptions& options,
                                                        std::span<const int32_t> source_ids) {
  auto search = MakeSentenceSearch(options, special_, std::move(source), kv_pool_.get(),
                                   model_->transformer.decoder_layers);
  if (options.use_vocabulary_map && vocabulary_map_ != nullptr &&
      !model_->weights.output.packed.empty()) {
    std::vector<int32_t> extra = {special_.pad, special_.eos, special_.decoder_start};
    if (options.forced_first_token >= 0) extra.push_back(options.forced_first_token);
    std::vector<int32_t> ids = vocabulary_map_->Candidates(source_ids, extra);
    const int64_t rows = model_->weights.output.packed.rows;
    std::erase_if(ids, [rows](int32_t id) { return id < 0 || id >= rows; });
    // A step ranks 2·beam candidates among the allowed tokens (pad and a banned EOS excluded):
    // a list too short for that decodes over the whole vocabulary.
    if (static_cast<int64_t>(ids.size()) >= 2 * int64_t{options.beam_size} + 2) {
      search->set_shortlist(
          std::make_shared<const OutputShortlist>(MakeOutputShortlist(model_->weights, ids)));
    }
  }
  return search;
}

absl::Status Translator::Step(std::span<SentenceSearch* const> searches) {
  const ops::StreamScope scope(stream_);
  // Device failures come before any search advances: a retry writes the same KV positions.
  return Guarded("decoder step", [&] { return StepOnce(searches); });
}

absl::Status Translator::StepOnce(std::span<SentenceSearch* const> searches) {
  rows_.clear();
  std::vector<std::pair<SentenceSearch*, int64_t>> firsts;
  bool alignment = false;
  for (SentenceSearch* search : searches) {
    if (search->done()) continue;
    firsts.emplace_back(search, static_cast<int64_t>(rows_.size()));
    search->CollectRows(&rows_);
    alignment = alignment || search->wants_alignment();
  }
  if (rows_.empty()) return absl::OkStatus();
  if (!DecodeStep(model_->transformer, model_->weights, rows_, &workspace_, &hidden_,
                  alignment ? &alignment_ : nullptr)) {
    return absl::ResourceExhaustedError("KV cache is full");
  }
  const Tensor* alignment_rows = alignment ? &HostCopy(alignment_, &host_alignment_) : nullptr;
  // Every row's candidates at once: on the GPU only they come back to the host; on the CPU they
  // are ranked as the output projection makes them.
  row_rules_.clear();
  bool shortlisted = false;
  for (size_t i = 0; i < firsts.size(); ++i) {
    const int64_t end =
        i + 1 < firsts.size() ? firsts[i + 1].second : static_cast<int64_t>(rows_.size());
    const ops::CandidateRule rule = firsts[i].first->NextCandidates();
    for (int64_t r = firsts[i].second; r < end; ++r) row_rules_.push_back(rule);
    shortlisted = shortlisted || firsts[i].first->shortlist() != nullptr;
  }
  if (!shortlisted) {
    OutputCandidates(model_->weights, hidden_, row_rules_, special_.pad, special_.eos, &logits_,
                     &row_candidates_);
  } else {
    RankShortlisted(firsts);
  }
  for (const auto& [search, first_row] : firsts) {
    search->Advance(row_candidates_, alignment_rows, first_row);
  }
  return absl::OkStatus();
}

void Translator::RankShortlisted(std::span<const std::pair<SentenceSearch*, int64_t>> firsts) {
  // Each shortlisted search's rows over its own tokens; the others gathered into one product
  // over the whole vocabulary, which is read once per step however they interleave. A
  // sentence's candidates never depend on what else is in the batch. (CPU only: hidden_ is on
  // the host.)
  row_candidates_.resize(rows_.size());
  const int64_t width = hidden_.dim(1);
  std::vector<int64_t> unlisted;
  std::vector<ops::CandidateRule> unlisted_rules;
  for (size_t i = 0; i < firsts.size(); ++i) {
    const int64_t begin = firsts[i].second;
    const int64_t end =
        i + 1 < firsts.size() ? firsts[i + 1].second : static_cast<int64_t>(rows_.size());
    const OutputShortlist* shortlist = firsts[i].first->shortlist();
    if (shortlist == nullptr) {
      for (int64_t r = begin; r < end; ++r) {
        unlisted.push_back(r);
        unlisted_rules.push_back(row_rules_[r]);
      }
      continue;
    }
    ShortlistCandidates(*shortlist, hidden_.Rows(begin, end),
                        std::span(row_rules_).subspan(begin, end - begin), special_.pad,
                        special_.eos, &logits_, &part_candidates_);
    std::move(part_candidates_.begin(), part_candidates_.end(), row_candidates_.begin() + begin);
  }
  if (unlisted.empty()) return;
  Tensor gathered({static_cast<int64_t>(unlisted.size()), width});
  for (size_t j = 0; j < unlisted.size(); ++j) {
    std::copy_n(hidden_.f32() + unlisted[j] * width, width, gathered.f32() + j * width);
  }
  OutputCandidates(model_->weights, gathered, unlisted_rules, special_.pad, special_.eos, &logits_,
                   &part_candidates_);
  for (size_t j = 0; j < unlisted.size(); ++j) {
    row_candidates_[unlisted[j]] = std::move(part_candidates_[j]);
  }
}

Tensor Translator::CopyLastLogits() const {
  if (hidden_.empty()) return Tensor();  // no step yet
  // Made again from the step's hidden states: the step itself may never store them whole.
  const ops::StreamScope scope(stream_);
  Tensor logits;
  OutputLogits(model_->weights, hidden_, &logits);
  return ops::CopyTo(logits, Device::kCpu);
}

const Tensor& Translator::HostCopy(const Tensor& t, Tensor* host) {
  if (t.device() == Device::kCpu) return t;
  *host = ops::CopyTo(t, Device::kCpu);
  return *host;
}

bool Translator::IsEmptySource(std::span<const int32_t> source_ids) const {
  return source_ids.size() == 1 && source_ids[0] == special_.eos;
}

SearchResult Translator::EmptySourceResult(const DecodingOptions& options) const {
  Hypothesis h;
  h.ids = {special_.eos};
  if (options.return_alignment) h.alignment = {1.0f};
  return SearchResult{{std::move(h)}};
}

absl::StatusOr<std::vector<SearchResult>> Translator::TranslateIds(
    std::span<const std::vector<int32_t>> sources, const DecodingOptions& options) {
  if (auto s = ValidateOptions(options); !s.ok()) return s;
  auto encoded = Encode(sources);
  if (!encoded.ok()) return encoded.status();
  std::vector<std::unique_ptr<SentenceSearch>> searches;
  std::vector<SentenceSearch*> active;
  for (auto& source : *encoded) {
    searches.push_back(StartSearch(std::move(source), options, sources[searches.size()]));
    active.push_back(searches.back().get());
  }
  while (!active.empty()) {
    if (auto s = Step(active); !s.ok()) return s;
    std::erase_if(active, [](SentenceSearch* s) { return s->done(); });
  }
  std::vector<SearchResult> results;
  for (auto& search : searches) results.push_back(search->TakeResult());
  return results;
}

absl::StatusOr<std::vector<Translation>> Translator::Translate(std::span<const std::string> texts,
                                                               const DecodingOptions& options,
                                                               int max_batch_size, bool truncate) {
  std::vector<std::vector<int32_t>> sources;
  sources.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = Tokenize(texts[i], truncate);
    if (!ids.ok()) {
      return absl::Status(ids.status().code(),
                          absl::StrCat("text ", i, ": ", ids.status().message()));
    }
    sources.push_back(*std::move(ids));
  }
  auto results = TranslateSources(sources, options, max_batch_size);
  if (!results.ok()) return results.status();
  std::vector<Translation> translations(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    SearchResult& result = (*results)[i];
    Translation& t = translations[i];
    for (size_t h = 0; h < result.hypotheses.size(); ++h) {
      Hypothesis& hyp = result.hypotheses[h];
      std::string text =
          IsEmptySource(sources[i])
              ? ""
              : Detokenize(hyp.ids, UnknownReplacements(hyp.ids, hyp.alignment, texts[i]));
      TranslationHypothesis out{std::move(text), std::move(hyp.ids), hyp.score};
      if (h == 0) {
        t.best = std::move(out);
      } else {
        t.alternatives.push_back(std::move(out));
      }
    }
  }
  return translations;
}

absl::StatusOr<std::vector<SearchResult>> Translator::TranslateSources(
    std::span<const std::vector<int32_t>> sources, const DecodingOptions& options,
    int max_batch_size) {
  if (auto s = ValidateOptions(options); !s.ok()) return s;
  std::vector<SearchResult> results(sources.size());
  // Longest first, so each batch holds sentences of similar length; empty sources are not
  // decoded.
  std::vector<size_t> order;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (IsEmptySource(sources[i])) {
      results[i] = EmptySourceResult(options);
    } else {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() > sources[b].size(); });
  const size_t batch = static_cast<size_t>(std::max(1, max_batch_size));
  for (size_t begin = 0; begin < order.size(); begin += batch) {
    const size_t end = std::min(order.size(), begin + batch);
    std::vector<std::vector<int32_t>> batch_sources;
    for (size_t i = begin; i < end; ++i) batch_sources.push_back(sources[order[i]]);
    auto batch_results = TranslateIds(batch_sources, options);
    if (!batch_results.ok()) return batch_results.status();
    for (size_t i = begin; i < end; ++i) results[order[i]] = std::move((*batch_results)[i - begin]);
  }
  return results;
}

int64_t Translator::WeightBytes() const { return StorageBytes(model_->weights); }

}  // namespace transerve
