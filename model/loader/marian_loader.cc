#include "model/loader/marian_loader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/core/logging.h"
#include "model/layers/decoder.h"
#include "model/loader/pytorch_checkpoint.h"
#include "model/loader/safetensors.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

// Resolves checkpoint names (with or without the "model." prefix of MarianMTModel, and the
// aliases the conversion bot records in __metadata__) and reads tensors with shape checks.
class CheckpointReader {
 public:
  explicit CheckpointReader(const CheckpointFile& file) : file_(file) {}

  // The stored name for `name`, or nullopt when the checkpoint does not have it.
  std::optional<std::string> Resolve(const std::string& name) const {
    for (const std::string& candidate : Candidates(name)) {
      if (file_.Find(candidate) != nullptr) return candidate;
      auto alias = file_.metadata().find(candidate);
      if (alias != file_.metadata().end() && file_.Find(alias->second) != nullptr) {
        return alias->second;
      }
    }
    return std::nullopt;
  }

  bool Has(const std::string& name) const { return Resolve(name).has_value(); }

  absl::StatusOr<Tensor> Read(const std::string& name, std::vector<int64_t> shape) const {
    std::optional<std::string> stored = Resolve(name);
    if (!stored) {
      return absl::NotFoundError(absl::StrCat(file_.path(), ": missing tensor '", name, "'"));
    }
    const CheckpointTensorInfo* info = file_.Find(*stored);
    // A [1, N] bias (final_logits_bias) is accepted where [N] is expected.
    std::vector<int64_t> stored_shape = info->shape;
    if (stored_shape.size() == 2 && stored_shape[0] == 1 && shape.size() == 1) {
      stored_shape.erase(stored_shape.begin());
    }
    if (stored_shape != shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          file_.path(), ": tensor '", *stored, "' has shape [", absl::StrJoin(info->shape, ", "),
          "], expected [", absl::StrJoin(shape, ", "), "]"));
    }
    Tensor tensor(std::move(shape));
    if (absl::Status s =
            file_.ReadAsFloat32(*stored, {tensor.f32(), static_cast<size_t>(tensor.numel())});
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckFinite(*stored, tensor); !s.ok()) return s;
    return tensor;
  }

  const std::string& dtype_of(const std::string& name) const {
    return file_.Find(*Resolve(name))->dtype;
  }

 private:
  static std::vector<std::string> Candidates(const std::string& name) {
    std::vector<std::string> names{name};
    if (name.rfind("model.", 0) == 0) names.push_back(name.substr(6));  // MarianModel layout
    return names;
  }

  // A NaN or infinite weight would turn every output into garbage (or NaN scores that break the
  // search's ordering): refuse the file instead of serving it. -inf is allowed in
  // final_logits_bias only, where it is the way to forbid a token.
  absl::Status CheckFinite(const std::string& stored, const Tensor& tensor) const {
    const bool bias = stored.find("final_logits_bias") != std::string::npos;
    const float* v = tensor.f32();
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      if (std::isfinite(v[i]) || (bias && v[i] == -INFINITY)) continue;
      return absl::InvalidArgumentError(absl::StrCat(file_.path(), ": tensor '", stored, "' holds ",
                                                     v[i], " at element ", i,
                                                     ": the weights are corrupt"));
    }
    return absl::OkStatus();
  }

  const CheckpointFile& file_;
};

// Stacks tensors along the first axis (fused projections).
Tensor Concat(const std::vector<const Tensor*>& parts) {
  int64_t rows = 0;
  for (const Tensor* t : parts) rows += t->dim(0);
  std::vector<int64_t> shape = parts.front()->shape();
  shape[0] = rows;
  Tensor out(shape);
  float* dst = out.f32();
  for (const Tensor* t : parts) {
    std::copy(t->f32(), t->f32() + t->numel(), dst);
    dst += t->numel();
  }
  return out;
}

class WeightBuilder {
 public:
  WeightBuilder(const CheckpointReader& reader, const MarianConfig& config)
      : reader_(reader), config_(config) {}

  absl::Status Linear(const std::string& prefix, int64_t out, int64_t in, LinearWeights* dst) {
    auto w = reader_.Read(prefix + ".weight", {out, in});
    if (!w.ok()) return w.status();
    auto b = reader_.Read(prefix + ".bias", {out});
    if (!b.ok()) return b.status();
    dst->weight = *std::move(w);
    dst->bias = *std::move(b);
    return absl::OkStatus();
  }

  absl::Status Norm(const std::string& prefix, LayerNormWeights* dst) {
    const int64_t d = config_.d_model;
    auto g = reader_.Read(prefix + ".weight", {d});
    if (!g.ok()) return g.status();
    auto b = reader_.Read(prefix + ".bias", {d});
    if (!b.ok()) return b.status();
    dst->gamma = *std::move(g);
    dst->beta = *std::move(b);
    return absl::OkStatus();
  }

  // q, k, v projections of `prefix` fused into one [3D, D] linear layer.
  absl::Status FusedQkv(const std::string& prefix, LinearWeights* dst) {
    const int64_t d = config_.d_model;
    LinearWeights q, k, v;
    if (auto s = Linear(prefix + ".q_proj", d, d, &q); !s.ok()) return s;
    if (auto s = Linear(prefix + ".k_proj", d, d, &k); !s.ok()) return s;
    if (auto s = Linear(prefix + ".v_proj", d, d, &v); !s.ok()) return s;
    dst->weight = Concat({&q.weight, &k.weight, &v.weight});
    dst->bias = Concat({&q.bias, &k.bias, &v.bias});
    return absl::OkStatus();
  }

 private:
  const CheckpointReader& reader_;
  const MarianConfig& config_;
};

absl::Status LoadEncoderLayer(WeightBuilder& b, const MarianConfig& c, int i,
                              EncoderLayerWeights* layer) {
  const std::string p = absl::StrCat("model.encoder.layers.", i, ".");
  const int64_t d = c.d_model;
  if (auto s = b.FusedQkv(p + "self_attn", &layer->self_qkv); !s.ok()) return s;
  if (auto s = b.Linear(p + "self_attn.out_proj", d, d, &layer->self_out); !s.ok()) return s;
  if (auto s = b.Norm(p + "self_attn_layer_norm", &layer->self_attn_norm); !s.ok()) return s;
  if (auto s = b.Linear(p + "fc1", c.encoder_ffn_dim, d, &layer->fc1); !s.ok()) return s;
  if (auto s = b.Linear(p + "fc2", d, c.encoder_ffn_dim, &layer->fc2); !s.ok()) return s;
  return b.Norm(p + "final_layer_norm", &layer->final_norm);
}

absl::Status LoadDecoderLayer(WeightBuilder& b, const MarianConfig& c, int i,
                              DecoderLayerWeights* layer, LinearWeights* cross_k,
                              LinearWeights* cross_v) {
  const std::string p = absl::StrCat("model.decoder.layers.", i, ".");
  const int64_t d = c.d_model;
  if (auto s = b.FusedQkv(p + "self_attn", &layer->self_qkv); !s.ok()) return s;
  if (auto s = b.Linear(p + "self_attn.out_proj", d, d, &layer->self_out); !s.ok()) return s;
  if (auto s = b.Norm(p + "self_attn_layer_norm", &layer->self_attn_norm); !s.ok()) return s;
  if (auto s = b.Linear(p + "encoder_attn.q_proj", d, d, &layer->cross_q); !s.ok()) return s;
  if (auto s = b.Linear(p + "encoder_attn.k_proj", d, d, cross_k); !s.ok()) return s;
  if (auto s = b.Linear(p + "encoder_attn.v_proj", d, d, cross_v); !s.ok()) return s;
  if (auto s = b.Linear(p + "encoder_attn.out_proj", d, d, &layer->cross_out); !s.ok()) return s;
  if (auto s = b.Norm(p + "encoder_attn_layer_norm", &layer->cross_attn_norm); !s.ok()) return s;
  if (auto s = b.Linear(p + "fc1", c.decoder_ffn_dim, d, &layer->fc1); !s.ok()) return s;
  if (auto s = b.Linear(p + "fc2", d, c.decoder_ffn_dim, &layer->fc2); !s.ok()) return s;
  return b.Norm(p + "final_layer_norm", &layer->final_norm);
}

// Stored position tables (2020 checkpoints) must match the computed one (F16/BF16 storage rounds
// them, so the tolerance follows the dtype); like HF, the stored values are then the ones used.
absl::Status UseStoredPositions(const CheckpointReader& reader, const std::string& path,
                                const std::string& name, Tensor* table) {
  if (!reader.Has(name)) return absl::OkStatus();
  const Tensor& computed = *table;
  auto stored = reader.Read(name, computed.shape());
  if (!stored.ok()) return stored.status();
  const std::string& dtype = reader.dtype_of(name);
  const float tolerance = dtype == "F32" ? 1e-6f : (dtype == "F16" ? 1e-3f : 1e-2f);
  for (int64_t i = 0; i < computed.numel(); ++i) {
    if (std::fabs(stored->f32()[i] - computed.f32()[i]) > tolerance) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor '", name, "' differs from the sinusoidal table at element ",
                       i, " (", stored->f32()[i], " vs ", computed.f32()[i],
                       "); only Marian's fixed sinusoidal positions are supported"));
    }
  }
  *table = *std::move(stored);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointFile>> OpenWeights(const std::string& model_dir) {
  const std::string safetensors = (fs::path(model_dir) / "model.safetensors").string();
  const std::string bin = (fs::path(model_dir) / "pytorch_model.bin").string();
  if (fs::exists(safetensors) || !fs::exists(bin)) {
    auto file = SafetensorsFile::Open(safetensors);
    if (!file.ok()) {
      if (absl::IsNotFound(file.status())) {
        return absl::NotFoundError(absl::StrCat(safetensors, " not found (nor pytorch_model.bin)"));
      }
      return file.status();
    }
    return std::make_unique<SafetensorsFile>(*std::move(file));
  }
  auto file = PytorchCheckpoint::Open(bin);
  if (!file.ok()) return file.status();
  return std::unique_ptr<CheckpointFile>(*std::move(file));
}

absl::StatusOr<std::unique_ptr<MarianModel>> LoadMarianModel(
    const std::string& model_dir, std::optional<ops::WeightFormat> pack) {
  auto model = std::make_unique<MarianModel>();
  model->model_dir = model_dir;
  if (!fs::is_directory(model_dir)) {
    return absl::NotFoundError(absl::StrCat("model directory '", model_dir, "' does not exist"));
  }
  auto config = LoadMarianConfig((fs::path(model_dir) / "config.json").string());
  if (!config.ok()) return config.status();
  model->config = *config;
  auto generation = LoadGenerationDefaults(model_dir);
  if (!generation.ok()) return generation.status();
  model->generation = *generation;

  auto file = OpenWeights(model_dir);
  if (!file.ok()) return file.status();
  const std::string weights_path = (*file)->path();
  const CheckpointReader reader(**file);
  const MarianConfig& c = model->config;
  const int64_t d = c.d_model;

  TransformerConfig& t = model->transformer;
  t.d_model = d;
  t.source_vocab_size = c.vocab_size;
  t.target_vocab_size = c.decoder_vocab_size;
  t.encoder_layers = static_cast<int>(c.encoder_layers);
  t.decoder_layers = static_cast<int>(c.decoder_layers);
  t.encoder_heads = static_cast<int>(c.encoder_attention_heads);
  t.decoder_heads = static_cast<int>(c.decoder_attention_heads);
  t.encoder_ffn_dim = c.encoder_ffn_dim;
  t.decoder_ffn_dim = c.decoder_ffn_dim;
  t.max_positions = c.max_position_embeddings;
  t.activation = c.activation;
  t.embedding_scale = c.scale_embedding ? std::sqrt(static_cast<float>(d)) : 1.0f;
  const bool m2m = c.architecture == MarianConfig::Architecture::kM2m100;
  t.encoder_pre_norm = m2m;
  t.decoder_pre_norm = m2m;
  if (m2m && d < 4) {
    return absl::InvalidArgumentError(absl::StrCat(model_dir, "/config.json: d_model ", d,
                                                   " is too small for M2M-100's position table"));
  }

  TransformerWeights& w = model->weights;
  // Embeddings: the per-side table if stored, else the shared one (docs/marian-format.md §3).
  const std::string enc_name = reader.Has("model.encoder.embed_tokens.weight")
                                   ? "model.encoder.embed_tokens.weight"
                                   : "model.shared.weight";
  const std::string dec_name = reader.Has("model.decoder.embed_tokens.weight")
                                   ? "model.decoder.embed_tokens.weight"
                                   : "model.shared.weight";
  auto enc_embedding = reader.Read(enc_name, {c.vocab_size, d});
  if (!enc_embedding.ok()) return enc_embedding.status();
  w.encoder_embedding = *std::move(enc_embedding);
  if (dec_name == enc_name && c.decoder_vocab_size == c.vocab_size) {
    w.decoder_embedding = w.encoder_embedding;
  } else {
    auto dec_embedding = reader.Read(dec_name, {c.decoder_vocab_size, d});
    if (!dec_embedding.ok()) return dec_embedding.status();
    w.decoder_embedding = *std::move(dec_embedding);
  }
  if (c.tie_word_embeddings) {
    w.output.weight = w.decoder_embedding;
  } else {
    auto lm_head = reader.Read("lm_head.weight", {c.decoder_vocab_size, d});
    if (!lm_head.ok()) return lm_head.status();
    w.output.weight = *std::move(lm_head);
  }
  if (m2m) {
    // M2M100ForConditionalGeneration has no output bias (a stored one is not read by it either).
    w.output.bias = Tensor({c.decoder_vocab_size});
    std::fill(w.output.bias.f32(), w.output.bias.f32() + c.decoder_vocab_size, 0.0f);
  } else {
    auto bias = reader.Read("final_logits_bias", {c.decoder_vocab_size});
    if (!bias.ok()) return bias.status();
    w.output.bias = *std::move(bias);
  }
  if (pack) PackTables(&w, *pack);

  // The position table is the one tensor sized by config.json alone, not by the file: bound it
  // so a corrupt config is an error, not an allocation failure.
  constexpr int64_t kMaxPositionTableBytes = int64_t{1} << 30;
  if (c.max_position_embeddings * d * static_cast<int64_t>(sizeof(float)) >
      kMaxPositionTableBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(model_dir, "/config.json: max_position_embeddings ", c.max_position_embeddings,
                     " x d_model ", d, " is implausibly large"));
  }
  WeightBuilder builder(reader, c);
  if (m2m) {
    // Its table is a buffer computed at load, never read from the file; pre-norm stacks end in
    // their own norm.
    w.encoder_positions = M2mSinusoidalPositions(c.pad_token_id + 1, c.max_position_embeddings, d);
    w.decoder_positions = w.encoder_positions;
    if (auto s = builder.Norm("model.encoder.layer_norm", &w.encoder_final_norm); !s.ok()) {
      return s;
    }
    if (auto s = builder.Norm("model.decoder.layer_norm", &w.decoder_final_norm); !s.ok()) {
      return s;
    }
  } else {
    w.encoder_positions = SinusoidalPositions(c.max_position_embeddings, d);
    w.decoder_positions = w.encoder_positions;
    if (auto s = UseStoredPositions(reader, weights_path, "model.encoder.embed_positions.weight",
                                    &w.encoder_positions);
        !s.ok()) {
      return s;
    }
    if (auto s = UseStoredPositions(reader, weights_path, "model.decoder.embed_positions.weight",
                                    &w.decoder_positions);
        !s.ok()) {
      return s;
    }
  }

  w.encoder.resize(static_cast<size_t>(c.encoder_layers));
  for (int i = 0; i < c.encoder_layers; ++i) {
    if (auto s = LoadEncoderLayer(builder, c, i, &w.encoder[i]); !s.ok()) return s;
    if (pack) PackLayer(&w.encoder[i], *pack);
  }
  w.decoder.resize(static_cast<size_t>(c.decoder_layers));
  std::vector<LinearWeights> cross_k(w.decoder.size()), cross_v(w.decoder.size());
  for (int i = 0; i < c.decoder_layers; ++i) {
    if (auto s = LoadDecoderLayer(builder, c, i, &w.decoder[i], &cross_k[i], &cross_v[i]);
        !s.ok()) {
      return s;
    }
    if (pack) PackLayer(&w.decoder[i], *pack);
  }
  std::vector<const Tensor*> kv_weights, kv_biases;
  for (size_t i = 0; i < w.decoder.size(); ++i) {
    kv_weights.insert(kv_weights.end(), {&cross_k[i].weight, &cross_v[i].weight});
    kv_biases.insert(kv_biases.end(), {&cross_k[i].bias, &cross_v[i].bias});
  }
  w.cross_kv.weight = Concat(kv_weights);
  w.cross_kv.bias = Concat(kv_biases);
  if (pack) PackWeights(&w, *pack);

  Log().info("loaded {} ({}) from {}: d_model {}, {}+{} layers, {} heads, vocab {}/{}, {}, {}",
             model_dir, c.family, fs::path(weights_path).filename().string(), d, c.encoder_layers,
             c.decoder_layers, c.encoder_attention_heads, c.vocab_size, c.decoder_vocab_size,
             ActivationName(c.activation), reader.dtype_of(enc_name));
  return model;
}

}  // namespace transerve
