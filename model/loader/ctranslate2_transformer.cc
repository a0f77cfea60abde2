// TransformerSpec variables -> the engine's Transformer. Every variable read is remembered, so
// that a spec the engine cannot compute is refused by the name of what it does not know.
#include "model/loader/ctranslate2_transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/core/half.h"
#include "model/core/logging.h"
#include "model/loader/mapped_file.h"
#include "model/loader/widen_floats.h"

namespace transerve {
namespace {

// What each variable's name says when the engine cannot compute it.
std::string Unsupported(std::string_view name) {
  struct Hint {
    std::string_view part;
    std::string_view why;
  };
  static constexpr Hint kHints[] = {
      {"relative_", "relative position representations"},
      {"rotary_", "rotary position embeddings"},
      {"alibi", "ALiBi attention biases"},
      {"num_heads_kv", "grouped or multi-query attention"},
      {"head_dim", "a head size other than d_model / heads"},
      {"linear_0_noact", "a gated feed-forward layer (GLU)"},
      {"layer_norm_use_residual", "RMS normalisation"},
      {"embeddings_1", "several source embeddings (source factors)"},
      {"project_in", "input/output projections around the decoder"},
      {"project_out", "input/output projections around the decoder"},
      {"scale_outputs", "scaled decoder outputs"},
      {"final_logit_softcapping", "logit soft-capping"},
      {"sliding_window", "sliding-window attention"},
      {"queries_scale", "a stored query scale"},
      {"layer_scalar", "per-layer output scalars"},
      {"_norm/", "extra per-layer norms (pre/post layer norm variants)"},
      {"q_norm", "query/key normalisation"},
      {"k_norm", "query/key normalisation"},
      {"v_norm", "value normalisation"},
      {"weight_zero", "asymmetric (zero-point) quantization"},
      {"memory_kv", "merged encoder attention"},
  };
  for (const Hint& hint : kHints) {
    if (name.find(hint.part) != std::string_view::npos) return std::string(hint.why);
  }
  return "a variable TransformerSpec revision 7 does not declare";
}

float ElementAsFloat(const Ct2Variable& v, size_t i) {
  const std::byte* p = v.data.data() + i * Ct2DtypeSize(v.dtype);
  switch (v.dtype) {
    case Ct2Dtype::kFloat32: {
      float f;
      std::memcpy(&f, p, sizeof(f));
      return f;
    }
    case Ct2Dtype::kFloat16:
    case Ct2Dtype::kBFloat16: {
      uint16_t h;
      std::memcpy(&h, p, sizeof(h));
      return v.dtype == Ct2Dtype::kFloat16 ? HalfToFloat(h) : BFloat16ToFloat(h);
    }
    case Ct2Dtype::kInt8:
      return static_cast<float>(static_cast<int8_t>(*p));
    case Ct2Dtype::kInt16: {
      int16_t s;
      std::memcpy(&s, p, sizeof(s));
      return static_cast<float>(s);
    }
    case Ct2Dtype::kInt32: {
      int32_t s;
      std::memcpy(&s, p, sizeof(s));
      return static_cast<float>(s);
    }
  }
  return 0.0f;
}

Tensor Zeros(std::vector<int64_t> shape) {
  Tensor t(std::move(shape));
  std::memset(t.f32(), 0, static_cast<size_t>(t.numel()) * sizeof(float));
  return t;
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// dst[j] = q[j] / scale over one stored int8 or int16 row, as CTranslate2's quantizer multiplied.
void DequantizeRow(Ct2Dtype dtype, const uint8_t* q, int64_t count, float scale, float* dst) {
  if (dtype == Ct2Dtype::kInt8) {
    const auto* values = reinterpret_cast<const int8_t*>(q);
    for (int64_t j = 0; j < count; ++j) dst[j] = static_cast<float>(values[j]) / scale;
    return;
  }
  for (int64_t j = 0; j < count; ++j) {
    int16_t value;
    std::memcpy(&value, q + 2 * j, sizeof(value));  // records are packed: no alignment
    dst[j] = static_cast<float>(value) / scale;
  }
}

// The first element that is not finite, or n. Blocks are tested whole (a loop that vectorises);
// only a block that fails is searched.
int64_t FirstNonFinite(const float* x, int64_t n) {
  constexpr int64_t kBlock = 1024;
  constexpr float kMax = std::numeric_limits<float>::max();
  for (int64_t first = 0; first < n; first += kBlock) {
    const int64_t last = std::min(n, first + kBlock);
    bool finite = true;
    for (int64_t i = first; i < last; ++i) finite &= std::fabs(x[i]) <= kMax;  // NaN fails too
    if (finite) continue;
    for (int64_t i = first; i < last; ++i) {
      if (!std::isfinite(x[i])) return i;
    }
  }
  return n;
}

// Reads the spec's variables by name (aliases resolved by Ct2ModelBin), remembering the ones
// used.
class SpecReader {
 public:
  explicit SpecReader(const Ct2ModelBin& bin) : bin_(bin) {}

  const Ct2Variable* Find(const std::string& name) {
    const Ct2Variable* v = bin_.Find(name);
    if (v != nullptr) used_.insert(v->name);
    return v;
  }

  absl::Status Error(const std::string& name, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(bin_.path(), ": variable '", name, "' ", what));
  }

  // A one-value attribute as a double; nullopt when absent.
  absl::StatusOr<std::optional<double>> Scalar(const std::string& name) {
    const Ct2Variable* v = Find(name);
    if (v == nullptr) return std::nullopt;
    if (Elements(v->shape) != 1) return Error(name, "is not a single value");
    return static_cast<double>(ElementAsFloat(*v, 0));
  }

  // The first of `names` present, as a scalar.
  absl::StatusOr<std::optional<double>> Scalar(std::initializer_list<std::string> names) {
    for (const std::string& name : names) {
      auto value = Scalar(name);
      if (!value.ok() || value->has_value()) return value;
    }
    return std::nullopt;
  }

  // A float32 copy of `name`, which must have `shape`. int8 and int16 stores are divided by
  // their `<name>_scale` (one per row, or one for all), as CTranslate2's quantizer multiplied.
  absl::StatusOr<Tensor> Floats(const std::string& name, const std::vector<int64_t>& shape) {
    const Ct2Variable* v = Find(name);
    if (v == nullptr)
      return absl::NotFoundError(absl::StrCat(bin_.path(), ": missing '", name, "'"));
    if (v->shape != shape) {
      return Error(name, absl::StrCat("has shape [", absl::StrJoin(v->shape, ", "), "], expected [",
                                      absl::StrJoin(shape, ", "), "]"));
    }
    Tensor out(shape);
    float* dst = out.f32();
    const int64_t n = Elements(shape);
    const auto* bytes = reinterpret_cast<const uint8_t*>(v->data.data());
    const std::span<const uint8_t> raw(bytes, v->data.size());
    if (v->dtype == Ct2Dtype::kInt8 || v->dtype == Ct2Dtype::kInt16) {
      const std::string scale_name = absl::StrCat(name, "_scale");
      const Ct2Variable* scale = Find(scale_name);
      const int64_t rows = shape.empty() ? 1 : shape[0];
      if (scale == nullptr) return Error(name, "is quantized but has no _scale");
      const int64_t scales = Elements(scale->shape);
      if (scales != 1 && scales != rows) {
        return Error(scale_name, absl::StrCat("holds ", scales, " scales for ", rows, " rows"));
      }
      const int64_t per_row = rows == 0 ? 0 : n / rows;
      std::vector<float> row_scales(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        const float s = ElementAsFloat(*scale, static_cast<size_t>(scales == 1 ? 0 : r));
        if (!std::isfinite(s) || s == 0.0f) {
          return Error(scale_name, absl::StrCat("holds ", s, " at row ", r));
        }
        row_scales[static_cast<size_t>(r)] = s;
      }
      // Rows as the elements ConvertReleasing steps over: the file's pages go back as they are
      // read.
      const std::size_t row_bytes = static_cast<std::size_t>(per_row) * Ct2DtypeSize(v->dtype);
      if (row_bytes > 0) {
        MappedFile::ConvertReleasing(raw, row_bytes, [&](std::size_t first, std::size_t count) {
          for (std::size_t r = first; r < first + count; ++r) {
            DequantizeRow(v->dtype, bytes + r * row_bytes, per_row, row_scales[r],
                          dst + static_cast<int64_t>(r) * per_row);
          }
        });
      }
    } else if (v->dtype == Ct2Dtype::kInt32) {
      return Error(name, "is int32, not a weight type");
    } else {
      const StoredFloat kind = v->dtype == Ct2Dtype::kFloat32   ? StoredFloat::kFloat32
                               : v->dtype == Ct2Dtype::kFloat16 ? StoredFloat::kFloat16
                                                                : StoredFloat::kBFloat16;
      const std::size_t width = StoredFloatWidth(kind);
      MappedFile::ConvertReleasing(raw, width, [&](std::size_t first, std::size_t count) {
        WidenFloats(kind, bytes + first * width, count, dst + first);
      });
    }
    if (const int64_t bad = FirstNonFinite(dst, n); bad < n) {
      return Error(
          name, absl::StrCat("holds ", dst[bad], " at element ", bad, ": the weights are corrupt"));
    }
    return out;
  }

  absl::StatusOr<std::optional<Tensor>> OptionalFloats(const std::string& name,
                                                       const std::vector<int64_t>& shape) {
    if (bin_.Find(name) == nullptr) return std::nullopt;
    auto t = Floats(name, shape);
    if (!t.ok()) return t.status();
    return std::optional<Tensor>(*std::move(t));
  }

  // The stored shape of a variable (nullptr when absent), without reading it.
  const std::vector<int64_t>* ShapeOf(const std::string& name) const {
    const Ct2Variable* v = bin_.Find(name);
    return v == nullptr ? nullptr : &v->shape;
  }
  bool Has(const std::string& name) const { return bin_.Find(name) != nullptr; }
  bool SameVariable(const std::string& a, const std::string& b) const {
    const Ct2Variable* va = bin_.Find(a);
    return va != nullptr && va == bin_.Find(b);
  }

  // Every variable never read, except the directory's own top-level attributes (the special
  // tokens of binary versions before 6, read by OpenCt2Directory): refused by name.
  absl::Status RefuseLeftovers() const {
    static const std::set<std::string, std::less<>> kDirectoryAttributes = {
        "unk_token",       "bos_token",          "eos_token",
        "with_source_bos", "with_source_eos",    "user_decoder_start_tokens",
        "with_target_bos", "decoder_start_token"};
    for (const Ct2Variable& v : bin_.variables()) {
      if (used_.contains(v.name) || kDirectoryAttributes.contains(v.name)) continue;
      return Error(v.name, absl::StrCat("is not supported: ", Unsupported(v.name)));
    }
    return absl::OkStatus();
  }

 private:
  const Ct2ModelBin& bin_;
  std::set<std::string, std::less<>> used_;
};

// One side's attributes. Before spec revision 5 they were written once, without the scope.
struct SideSpec {
  int heads = 0;
  bool pre_norm = true;
  Activation activation = Activation::kRelu;
  float embedding_scale = 1.0f;
};

absl::StatusOr<Activation> ActivationOf(SpecReader& r, const std::string& name, double id) {
  // CTranslate2's ActivationType ids (range-checked before the cast).
  switch (id >= 0.0 && id <= 3.0 && id == static_cast<int>(id) ? static_cast<int>(id) : -1) {
    case 0:
      return Activation::kRelu;
    case 1:
      return Activation::kGeluTanh;
    case 2:
      return Activation::kSwish;
    case 3:
      return Activation::kGelu;
    default:
      return r.Error(name, absl::StrCat("is activation ", id,
                                        ", which the engine does not compute (relu, gelu, "
                                        "gelu_tanh and swish are supported)"));
  }
}

absl::StatusOr<SideSpec> ReadSide(SpecReader& r, const std::string& side, int64_t d,
                                  const std::string& embeddings) {
  SideSpec spec;
  auto heads = r.Scalar({side + "/num_heads", "num_heads"});
  if (!heads.ok()) return heads.status();
  const double head_count = heads->has_value() ? **heads : 8.0;  // CTranslate2's default
  // Compared as a double first: a stored value far outside int's range must not be cast.
  if (!(head_count >= 1.0 && head_count <= static_cast<double>(d)) ||
      d % static_cast<int64_t>(head_count) != 0) {
    return r.Error(side + "/num_heads",
                   absl::StrCat("is ", head_count, ", which does not divide d_model ", d));
  }
  spec.heads = static_cast<int>(head_count);
  auto pre_norm = r.Scalar({side + "/pre_norm", "pre_norm"});
  if (!pre_norm.ok()) return pre_norm.status();
  spec.pre_norm = !pre_norm->has_value() || **pre_norm != 0.0;
  auto activation = r.Scalar({side + "/activation", "activation"});
  if (!activation.ok()) return activation.status();
  if (activation->has_value()) {
    auto a = ActivationOf(r, side + "/activation", **activation);
    if (!a.ok()) return a.status();
    spec.activation = *a;
  }
  // A flag (true: sqrt(d_model)) or the factor itself; absent means sqrt(d_model), as
  // CTranslate2 reads it.
  const std::string scale_name = side + "/scale_embeddings";
  const Ct2Variable* scale = r.Find(scale_name);
  if (scale == nullptr) scale = r.Find(embeddings + "/multiply_by_sqrt_depth");
  const float sqrt_d = std::sqrt(static_cast<float>(d));
  if (scale == nullptr) {
    spec.embedding_scale = sqrt_d;
  } else {
    if (Elements(scale->shape) != 1) return r.Error(scale->name, "is not a single value");
    const float value = ElementAsFloat(*scale, 0);
    if (scale->dtype == Ct2Dtype::kInt8) {
      spec.embedding_scale = value != 0.0f ? sqrt_d : 1.0f;
    } else if (!std::isfinite(value)) {
      return r.Error(scale->name, absl::StrCat("is ", value, ", not a scale"));
    } else {
      spec.embedding_scale = value;
    }
  }
  return spec;
}

absl::Status ReadNorm(SpecReader& r, const std::string& scope, int64_t d, LayerNormWeights* out) {
  auto gamma = r.Floats(scope + "/gamma", {d});
  if (!gamma.ok()) return gamma.status();
  if (!r.Has(scope + "/beta")) {
    return r.Error(scope + "/gamma", "has no beta: RMS normalisation is not supported");
  }
  auto beta = r.Floats(scope + "/beta", {d});
  if (!beta.ok()) return beta.status();
  out->gamma = *std::move(gamma);
  out->beta = *std::move(beta);
  return absl::OkStatus();
}

absl::Status ReadOptionalNorm(SpecReader& r, const std::string& scope, int64_t d,
                              LayerNormWeights* out) {
  if (!r.Has(scope + "/gamma")) return absl::OkStatus();
  return ReadNorm(r, scope, d, out);
}

// A linear layer [out, in]; a missing bias reads as zeros.
absl::Status ReadLinear(SpecReader& r, const std::string& scope, int64_t out, int64_t in,
                        LinearWeights* dst) {
  auto w = r.Floats(scope + "/weight", {out, in});
  if (!w.ok()) return w.status();
  auto b = r.OptionalFloats(scope + "/bias", {out});
  if (!b.ok()) return b.status();
  dst->weight = *std::move(w);
  dst->bias = b->has_value() ? **std::move(b) : Zeros({out});
  return absl::OkStatus();
}

// The FFN width of a layer, from its first projection's stored shape.
absl::StatusOr<int64_t> FfnWidth(SpecReader& r, const std::string& layer, int64_t d) {
  const std::string name = layer + "/ffn/linear_0/weight";
  const std::vector<int64_t>* shape = r.ShapeOf(name);
  if (shape == nullptr) return r.Error(name, "is missing");
  if (shape->size() != 2 || (*shape)[1] != d || (*shape)[0] <= 0) {
    return r.Error(name, absl::StrCat("has shape [", absl::StrJoin(*shape, ", "),
                                      "], expected [ffn, ", d, "]"));
  }
  return (*shape)[0];
}

// Per-attention attributes are accepted where they restate the standard layout (as many key
// and value heads as query heads, d_model / heads wide).
absl::Status CheckStandardAttention(SpecReader& r, const std::string& scope, int heads, int64_t d) {
  for (const auto& [name, standard] :
       {std::pair<std::string, double>{scope + "/num_heads_kv", heads},
        {scope + "/head_dim", static_cast<double>(d / heads)}}) {
    auto value = r.Scalar(name);
    if (!value.ok()) return value.status();
    if (value->has_value() && **value != standard) {
      return r.Error(name, absl::StrCat("is ", **value, ": ", Unsupported(name)));
    }
  }
  return absl::OkStatus();
}

int CountLayers(const SpecReader& r, const std::string& side) {
  int n = 0;
  while (r.Has(absl::StrCat(side, "/layer_", n, "/self_attention/linear_0/weight"))) ++n;
  return n;
}

// A table [rows, d] with one more row of zeros: the pad id the engine needs (see the header).
Tensor WithZeroRow(const Tensor& table) {
  const int64_t rows = table.dim(0), d = table.dim(1);
  Tensor out = Zeros({rows + 1, d});
  std::memcpy(out.f32(), table.f32(), static_cast<size_t>(rows * d) * sizeof(float));
  return out;
}

}  // namespace

Tensor Ct2SinusoidalPositions(int64_t rows, int64_t dim) {
  Tensor table({rows, dim});
  const int64_t half = dim / 2;
  // Computed in float, as CTranslate2 does, so the rounding matches its table.
  const float increment = std::log(10000.0f) / static_cast<float>(half - 1);
  std::vector<float> timescales(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    timescales[i] = std::exp(-increment * static_cast<float>(i));
  }
  for (int64_t p = 0; p < rows; ++p) {
    float* row = table.f32() + p * dim;
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p + 1) * timescales[i];
      row[i] = std::sin(angle);
      row[half + i] = std::cos(angle);
    }
  }
  return table;
}

absl::StatusOr<std::unique_ptr<MarianModel>> LoadCt2Transformer(
    const Ct2Directory& dir, std::optional<ops::WeightFormat> pack) {
  const Ct2ModelBin& bin = dir.model;
  if (bin.binary_version() >= 2 && bin.spec_name() != "TransformerSpec") {
    return absl::InvalidArgumentError(
        absl::StrCat(bin.path(), ": spec ", bin.spec_name(),
                     " is not supported (only the encoder-decoder TransformerSpec)"));
  }
  if (bin.spec_revision() < 3 || bin.spec_revision() > 7) {
    return absl::InvalidArgumentError(absl::StrCat(
        bin.path(), ": TransformerSpec revision ", bin.spec_revision(),
        " is not supported (3 to 7; convert the model again with a current CTranslate2)"));
  }
  SpecReader r(bin);
  const std::string enc_table =
      r.Has("encoder/embeddings_0/weight") ? "encoder/embeddings_0" : "encoder/embeddings";
  const std::string dec_table = "decoder/embeddings";
  const std::vector<int64_t>* enc_shape = r.ShapeOf(enc_table + "/weight");
  const std::vector<int64_t>* dec_shape = r.ShapeOf(dec_table + "/weight");
  if (enc_shape == nullptr || dec_shape == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(bin.path(), ": no ", enc_shape == nullptr ? enc_table : dec_table, "/weight"));
  }
  if (enc_shape->size() != 2 || dec_shape->size() != 2 || (*enc_shape)[1] != (*dec_shape)[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat(bin.path(), ": embedding tables [", absl::StrJoin(*enc_shape, ", "), "] and [",
                     absl::StrJoin(*dec_shape, ", "), "] do not share a width"));
  }
  const int64_t d = (*enc_shape)[1];
  // The generated position tables are sized by d_model alone, not by the file: bound it so a
  // hostile file is an error, not an allocation of gigabytes (translation models stay far below).
  constexpr int64_t kMaxModelWidth = 16384;
  if (d <= 0 || d > kMaxModelWidth) {
    return absl::InvalidArgumentError(absl::StrCat(
        bin.path(), ": d_model ", d, " (the embedding width) is outside 1..", kMaxModelWidth));
  }
  const int64_t source_vocab = dir.source_vocabulary->size();
  const int64_t target_vocab = dir.target_vocabulary->size();
  if ((*enc_shape)[0] != source_vocab || (*dec_shape)[0] != target_vocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        bin.path(), ": the embedding tables have ", (*enc_shape)[0], " and ", (*dec_shape)[0],
        " rows, the vocabularies ", source_vocab, " and ", target_vocab, " tokens"));
  }

  auto encoder = ReadSide(r, "encoder", d, enc_table);
  if (!encoder.ok()) return encoder.status();
  auto decoder = ReadSide(r, "decoder", d, dec_table);
  if (!decoder.ok()) return decoder.status();
  if (encoder->activation != decoder->activation) {
    return r.Error("decoder/activation", "differs from the encoder's: not supported");
  }
  if (encoder->embedding_scale != decoder->embedding_scale) {
    return r.Error("decoder/scale_embeddings", "differs from the encoder's: not supported");
  }
  // Flags that must be off (read, so a false value is not a leftover).
  for (const char* flag : {"encoder/multi_query_attention", "decoder/alibi",
                           "decoder/alibi_use_positive_positions", "decoder/scale_alibi"}) {
    auto v = r.Scalar(flag);
    if (!v.ok()) return v.status();
    if (v->has_value() && **v != 0.0)
      return r.Error(flag, absl::StrCat("is set: ", Unsupported(flag)));
  }
  // Read, not used: a single source embedding has nothing to merge.
  for (const char* name : {"encoder/embeddings_merge", "embeddings_merge"}) {
    if (auto v = r.Scalar(name); !v.ok()) return v.status();
  }
  // Which cross-attention CTranslate2 returns as attention (and replaces unknowns by): its
  // defaults are the last layer and its first head. Both spellings are read (the short one is
  // an alias in CTranslate2's specs), the scoped one wins.
  std::optional<double> alignment_layer, alignment_heads;
  for (const auto& [name, value] : {std::pair{"alignment_layer", &alignment_layer},
                                    {"decoder/alignment_layer", &alignment_layer},
                                    {"alignment_heads", &alignment_heads},
                                    {"decoder/alignment_heads", &alignment_heads}}) {
    auto v = r.Scalar(name);
    if (!v.ok()) return v.status();
    if (v->has_value()) *value = *v;
  }
  auto zero_start = r.Scalar("decoder/start_from_zero_embedding");
  if (!zero_start.ok()) return zero_start.status();
  const bool start_from_zero = zero_start->has_value() && **zero_start != 0.0;

  auto model = std::make_unique<MarianModel>();
  model->model_dir = dir.path;
  const int encoder_layers = CountLayers(r, "encoder");
  const int decoder_layers = CountLayers(r, "decoder");
  if (encoder_layers == 0 || decoder_layers == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(bin.path(), ": ", encoder_layers, " encoder and ", decoder_layers,
                     " decoder layers; an encoder-decoder model needs both"));
  }
  auto encoder_ffn = FfnWidth(r, "encoder/layer_0", d);
  if (!encoder_ffn.ok()) return encoder_ffn.status();
  auto decoder_ffn = FfnWidth(r, "decoder/layer_0", d);
  if (!decoder_ffn.ok()) return decoder_ffn.status();

  TransformerConfig& t = model->transformer;
  t.d_model = d;
  t.encoder_layers = encoder_layers;
  t.decoder_layers = decoder_layers;
  t.encoder_heads = encoder->heads;
  t.decoder_heads = decoder->heads;
  t.encoder_ffn_dim = *encoder_ffn;
  t.decoder_ffn_dim = *decoder_ffn;
  t.activation = encoder->activation;
  t.embedding_scale = encoder->embedding_scale;
  t.encoder_pre_norm = encoder->pre_norm;
  t.decoder_pre_norm = decoder->pre_norm;
  t.alignment_layer = static_cast<int>(alignment_layer.value_or(-1.0));
  t.alignment_heads = static_cast<int>(alignment_heads.value_or(1.0));
  if (t.alignment_layer < -decoder_layers || t.alignment_layer >= decoder_layers) {
    return r.Error(
        "decoder/alignment_layer",
        absl::StrCat("is ", t.alignment_layer, ": the decoder has ", decoder_layers, " layers"));
  }
  if (t.alignment_heads < 0 || t.alignment_heads > decoder->heads) {
    return r.Error(
        "decoder/alignment_heads",
        absl::StrCat("is ", t.alignment_heads, ": the decoder has ", decoder->heads, " heads"));
  }
  t.layer_norm_eps = 1e-5f;
  if (auto it = dir.config.find("layer_norm_epsilon"); it != dir.config.end() && !it->is_null()) {
    if (!it->is_number() || !(it->get<double>() > 0.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir.path, "/config.json: layer_norm_epsilon is not a positive number"));
    }
    t.layer_norm_eps = it->get<float>();
  }

  TransformerWeights& w = model->weights;
  // The pad row goes into the decoder's table, and into the encoder's and the output's when
  // they are the same stored variable, so shared tables stay one tensor.
  auto dec_embedding = r.Floats(dec_table + "/weight", {target_vocab, d});
  if (!dec_embedding.ok()) return dec_embedding.status();
  w.decoder_embedding = WithZeroRow(*dec_embedding);
  const bool encoder_shares = r.SameVariable(enc_table + "/weight", dec_table + "/weight");
  if (encoder_shares) {
    w.encoder_embedding = w.decoder_embedding;
  } else {
    auto enc_embedding = r.Floats(enc_table + "/weight", {source_vocab, d});
    if (!enc_embedding.ok()) return enc_embedding.status();
    w.encoder_embedding = *std::move(enc_embedding);
  }
  if (r.SameVariable("decoder/projection/weight", dec_table + "/weight")) {
    r.Find("decoder/projection/weight");
    w.output.weight = w.decoder_embedding;
  } else {
    auto projection = r.Floats("decoder/projection/weight", {target_vocab, d});
    if (!projection.ok()) return projection.status();
    w.output.weight = WithZeroRow(*projection);
  }
  auto projection_bias = r.OptionalFloats("decoder/projection/bias", {target_vocab});
  if (!projection_bias.ok()) return projection_bias.status();
  w.output.bias = Zeros({target_vocab + 1});
  if (projection_bias->has_value()) {
    std::memcpy(w.output.bias.f32(), (*projection_bias)->f32(),
                static_cast<size_t>(target_vocab) * sizeof(float));
  }
  if (pack) PackTables(&w, *pack);

  // Positions: stored tables as they are; otherwise CTranslate2's generated table, one per side
  // (the same values).
  for (const auto& [side, table] :
       {std::pair<std::string, Tensor*>{"encoder", &w.encoder_positions},
        {"decoder", &w.decoder_positions}}) {
    const std::string name = side + "/position_encodings/encodings";
    if (const std::vector<int64_t>* shape = r.ShapeOf(name); shape != nullptr) {
      if (shape->size() != 2 || (*shape)[1] != d || (*shape)[0] <= 0) {
        return r.Error(name, absl::StrCat("has shape [", absl::StrJoin(*shape, ", "),
                                          "], expected [positions, ", d, "]"));
      }
      auto stored = r.Floats(name, *shape);
      if (!stored.ok()) return stored.status();
      *table = *std::move(stored);
    } else if (side == "decoder" && !w.encoder_positions.empty() &&
               !r.Has("encoder/position_encodings/encodings")) {
      *table = w.encoder_positions;
    } else {
      *table = Ct2SinusoidalPositions(kCt2GeneratedPositions, d);
    }
  }
  t.max_positions = std::min(w.encoder_positions.dim(0), w.decoder_positions.dim(0));

  for (const auto& [scope, norm] : {std::pair<std::string, LayerNormWeights*>{
                                        "encoder/layernorm_embedding", &w.encoder_embedding_norm},
                                    {"decoder/layernorm_embedding", &w.decoder_embedding_norm},
                                    {"encoder/layer_norm", &w.encoder_final_norm},
                                    {"decoder/layer_norm", &w.decoder_final_norm}}) {
    if (auto s = ReadOptionalNorm(r, scope, d, norm); !s.ok()) return s;
  }
  if (t.encoder_pre_norm && !w.encoder_final_norm.present()) {
    return r.Error("encoder/layer_norm",
                   "is missing: a pre-norm encoder without its final "
                   "norm (no_final_norm) is not supported");
  }
  if (t.decoder_pre_norm && !w.decoder_final_norm.present()) {
    return r.Error("decoder/layer_norm",
                   "is missing: a pre-norm decoder without its final "
                   "norm (no_final_norm) is not supported");
  }

  w.encoder.resize(static_cast<size_t>(encoder_layers));
  for (int l = 0; l < encoder_layers; ++l) {
    const std::string p = absl::StrCat("encoder/layer_", l);
    EncoderLayerWeights& layer = w.encoder[l];
    for (absl::Status s : {CheckStandardAttention(r, p + "/self_attention", t.encoder_heads, d),
                           ReadLinear(r, p + "/self_attention/linear_0", 3 * d, d, &layer.self_qkv),
                           ReadLinear(r, p + "/self_attention/linear_1", d, d, &layer.self_out),
                           ReadNorm(r, p + "/self_attention/layer_norm", d, &layer.self_attn_norm),
                           ReadLinear(r, p + "/ffn/linear_0", t.encoder_ffn_dim, d, &layer.fc1),
                           ReadLinear(r, p + "/ffn/linear_1", d, t.encoder_ffn_dim, &layer.fc2),
                           ReadNorm(r, p + "/ffn/layer_norm", d, &layer.final_norm)}) {
      if (!s.ok()) return s;
    }
    if (pack) PackLayer(&layer, *pack);
  }
  w.decoder.resize(static_cast<size_t>(decoder_layers));
  std::vector<LinearWeights> cross_kv(w.decoder.size());
  for (int l = 0; l < decoder_layers; ++l) {
    const std::string p = absl::StrCat("decoder/layer_", l);
    DecoderLayerWeights& layer = w.decoder[l];
    for (absl::Status s : {CheckStandardAttention(r, p + "/self_attention", t.decoder_heads, d),
                           CheckStandardAttention(r, p + "/attention", t.decoder_heads, d),
                           ReadLinear(r, p + "/self_attention/linear_0", 3 * d, d, &layer.self_qkv),
                           ReadLinear(r, p + "/self_attention/linear_1", d, d, &layer.self_out),
                           ReadNorm(r, p + "/self_attention/layer_norm", d, &layer.self_attn_norm),
                           ReadLinear(r, p + "/attention/linear_0", d, d, &layer.cross_q),
                           ReadLinear(r, p + "/attention/linear_1", 2 * d, d, &cross_kv[l]),
                           ReadLinear(r, p + "/attention/linear_2", d, d, &layer.cross_out),
                           ReadNorm(r, p + "/attention/layer_norm", d, &layer.cross_attn_norm),
                           ReadLinear(r, p + "/ffn/linear_0", t.decoder_ffn_dim, d, &layer.fc1),
                           ReadLinear(r, p + "/ffn/linear_1", d, t.decoder_ffn_dim, &layer.fc2),
                           ReadNorm(r, p + "/ffn/layer_norm", d, &layer.final_norm)}) {
      if (!s.ok()) return s;
    }
    if (pack) PackLayer(&layer, *pack);
  }
  if (absl::Status s = r.RefuseLeftovers(); !s.ok()) return s;

  // CTranslate2's linear_1 of a cross-attention is already [keys; values]: the layers' stack is
  // the engine's fused projection.
  {
    Tensor kv({2 * d * decoder_layers, d});
    Tensor kv_bias({2 * d * decoder_layers});
    for (int l = 0; l < decoder_layers; ++l) {
      std::memcpy(kv.f32() + l * 2 * d * d, cross_kv[l].weight.f32(),
                  static_cast<size_t>(2 * d * d) * sizeof(float));
      std::memcpy(kv_bias.f32() + l * 2 * d, cross_kv[l].bias.f32(),
                  static_cast<size_t>(2 * d) * sizeof(float));
    }
    w.cross_kv.weight = std::move(kv);
    w.cross_kv.bias = std::move(kv_bias);
  }
  if (pack) PackWeights(&w, *pack);

  // Ids: the pad row is V; the start is V (a zero vector) or the directory's start token.
  const int32_t pad = static_cast<int32_t>(target_vocab);
  const int32_t eos = static_cast<int32_t>(*dir.target_vocabulary->Find(dir.tokens.eos));
  int32_t start = pad;
  if (!start_from_zero) {
    if (!dir.tokens.decoder_start.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir.path,
                       ": the model starts the decoder from the caller's own tokens "
                       "(decoder_start_token null), which multilingual models need: not supported "
                       "yet"));
    }
    start = static_cast<int32_t>(*dir.target_vocabulary->Find(*dir.tokens.decoder_start));
  }
  t.source_vocab_size = encoder_shares ? target_vocab + 1 : source_vocab;
  t.target_vocab_size = target_vocab + 1;

  MarianConfig& c = model->config;
  c.vocab_size = t.source_vocab_size;
  c.decoder_vocab_size = t.target_vocab_size;
  c.d_model = d;
  c.encoder_layers = encoder_layers;
  c.decoder_layers = decoder_layers;
  c.encoder_attention_heads = t.encoder_heads;
  c.decoder_attention_heads = t.decoder_heads;
  c.encoder_ffn_dim = t.encoder_ffn_dim;
  c.decoder_ffn_dim = t.decoder_ffn_dim;
  c.max_position_embeddings = t.max_positions;
  c.activation = t.activation;
  c.scale_embedding = t.embedding_scale != 1.0f;
  c.share_encoder_decoder_embeddings = encoder_shares;
  c.tie_word_embeddings = r.SameVariable("decoder/projection/weight", dec_table + "/weight");
  c.pad_token_id = pad;
  c.eos_token_id = eos;
  c.decoder_start_token_id = start;
  c.forced_eos_token_id = eos;
  c.family = absl::StrCat("ctranslate2 transformer (",
                          t.encoder_pre_norm == t.decoder_pre_norm
                              ? (t.encoder_pre_norm ? "pre-norm" : "post-norm")
                              : "mixed norms",
                          ")");

  // CTranslate2's translate_batch defaults: beam 2, 256 tokens, length penalty 1, its own beam
  // stopping rule, and min_decoding_length 1 (EOS banned at the first step: 2 in our count).
  GenerationDefaults& g = model->generation;
  g.num_beams = 2;
  g.max_length = 256;
  g.min_length = 2;
  g.length_penalty = 1.0f;
  g.search_rules = SearchRules::kCTranslate2;

  Log().info(
      "loaded {} (CTranslate2 {} revision {}, binary version {}): d_model {}, {}+{} layers, "
      "{}/{} heads, {}, {}-norm, vocab {}/{}",
      dir.path, bin.spec_name().empty() ? "TransformerSpec" : bin.spec_name(), bin.spec_revision(),
      bin.binary_version(), d, encoder_layers, decoder_layers, t.encoder_heads, t.decoder_heads,
      ActivationName(t.activation), t.encoder_pre_norm ? "pre" : "post", source_vocab,
      target_vocab);
  return model;
}

}  // namespace transerve
