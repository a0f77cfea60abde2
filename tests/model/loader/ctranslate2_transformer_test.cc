// Tests for CTranslate2's TransformerSpec mapped onto the engine: random specs written in the
// converters' layout (post-norm and pre-norm, tied and separate tables, every stored dtype),
// CTranslate2's generated position table, and specs the engine must refuse by name. Ids equal to
// the reference are checked on the committed fixtures (tests/model/translator/ct2_parity_test).
#include "model/loader/ctranslate2_transformer.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/core/half.h"
#include "model/loader/ctranslate2_model_bin_writer.h"
#include "tests/testing/random.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr int64_t kD = 16;
constexpr int64_t kFfn = 24;
constexpr int64_t kVocab = 23;  // target and shared
constexpr int64_t kSourceVocab = 19;

struct SpecOptions {
  bool pre_norm = false;
  bool shared_vocabulary = true;  // one table for both sides and the projection
  bool stored_positions = true;
  bool zero_start = true;
  Ct2Dtype store = Ct2Dtype::kFloat32;
};

// A random TransformerSpec as CTranslate2's converters write it: float32 values kept in `values`
// (what the loader must give back, up to the store's rounding), the bytes in `model`.
class SpecBuilder {
 public:
  SpecBuilder(const SpecOptions& options, uint32_t seed) : options_(options), rng_(seed) {
    const int64_t source_rows = options.shared_vocabulary ? kVocab : kSourceVocab;
    Weight(options.shared_vocabulary ? "decoder/embeddings/weight" : "encoder/embeddings_0/weight",
           {source_rows, kD}, /*quantizable=*/true);
    if (!options.shared_vocabulary) {
      Weight("decoder/embeddings/weight", {kVocab, kD}, true);
      Weight("decoder/projection/weight", {kVocab, kD}, true);
    }
    Weight("decoder/projection/bias", {kVocab});
    for (const std::string side : {"encoder", "decoder"}) {
      Attribute(side + "/num_heads", Ct2Dtype::kInt16, 2);
      Attribute(side + "/pre_norm", Ct2Dtype::kInt8, options.pre_norm ? 1 : 0);
      Attribute(side + "/activation", Ct2Dtype::kInt8, 2);  // swish
      Attribute(side + "/scale_embeddings", Ct2Dtype::kFloat32, 4.0);
      if (options.stored_positions) Weight(side + "/position_encodings/encodings", {40, kD});
      if (options.pre_norm) Norm(side + "/layer_norm");
      for (int l = 0; l < 2; ++l) {
        const std::string p = absl::StrCat(side, "/layer_", l);
        Linear(p + "/self_attention/linear_0", 3 * kD, kD);
        Linear(p + "/self_attention/linear_1", kD, kD);
        Norm(p + "/self_attention/layer_norm");
        if (side == "decoder") {
          Linear(p + "/attention/linear_0", kD, kD);
          Linear(p + "/attention/linear_1", 2 * kD, kD);
          Linear(p + "/attention/linear_2", kD, kD);
          Norm(p + "/attention/layer_norm");
        }
        Linear(p + "/ffn/linear_0", kFfn, kD);
        Linear(p + "/ffn/linear_1", kD, kFfn);
        Norm(p + "/ffn/layer_norm");
      }
    }
    Attribute("decoder/start_from_zero_embedding", Ct2Dtype::kInt8, options.zero_start ? 1 : 0);
    Attribute("decoder/alignment_layer", Ct2Dtype::kInt16, -1);
    Attribute("decoder/alignment_heads", Ct2Dtype::kInt16, 1);
    Attribute("encoder/embeddings_merge", Ct2Dtype::kInt8, 0);
    if (options.shared_vocabulary) {
      aliases_.push_back({"encoder/embeddings_0/weight", "decoder/embeddings/weight"});
      aliases_.push_back({"decoder/projection/weight", "decoder/embeddings/weight"});
    }
  }

  // Replaces or adds a variable.
  void Set(Ct2NamedVariable v) { variables_[v.name] = std::move(v); }
  void Remove(const std::string& name) {
    variables_.erase(name);
    values_.erase(name);
  }
  void Attribute(const std::string& name, Ct2Dtype dtype, double value) {
    Ct2NamedVariable v{.name = name, .dtype = dtype, .shape = {}};
    if (dtype == Ct2Dtype::kInt8) v.bytes = std::string(1, static_cast<char>(value));
    if (dtype == Ct2Dtype::kInt16) {
      const int16_t s = static_cast<int16_t>(value);
      v.bytes.assign(reinterpret_cast<const char*>(&s), sizeof(s));
    }
    if (dtype == Ct2Dtype::kInt32) {
      const int32_t s = static_cast<int32_t>(value);
      v.bytes.assign(reinterpret_cast<const char*>(&s), sizeof(s));
    }
    if (dtype == Ct2Dtype::kFloat32) {
      const float f = static_cast<float>(value);
      v.bytes.assign(reinterpret_cast<const char*>(&f), sizeof(f));
    }
    Set(std::move(v));
  }
  const std::vector<float>& values(const std::string& name) const { return values_.at(name); }

  void WriteTo(const fs::path& dir, uint32_t revision = 7, const std::string& spec = "") const {
    Ct2ModelBinContents m;
    m.spec_name = spec.empty() ? "TransformerSpec" : spec;
    m.spec_revision = revision;
    for (const auto& [name, v] : variables_) m.variables.push_back(v);  // sorted by name
    m.aliases = aliases_;
    const absl::Status s = WriteCt2ModelBin((dir / "model.bin").string(), m);
    ASSERT_TRUE(s.ok()) << s;
    std::vector<std::string> target, source;
    for (int64_t i = 0; i < kVocab; ++i) target.push_back(absl::StrCat("t", i));
    target[0] = "<unk>";
    target[1] = "<s>";
    target[2] = "</s>";
    if (options_.shared_vocabulary) {
      std::ofstream(dir / "shared_vocabulary.json") << nlohmann::json(target).dump();
    } else {
      for (int64_t i = 0; i < kSourceVocab; ++i) source.push_back(absl::StrCat("s", i));
      source[0] = "<unk>";
      std::ofstream(dir / "target_vocabulary.json") << nlohmann::json(target).dump();
      std::ofstream(dir / "source_vocabulary.json") << nlohmann::json(source).dump();
    }
    std::ofstream(dir / "config.json")
        << R"({"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>",)"
        << R"( "decoder_start_token": "<s>", "layer_norm_epsilon": null})";
  }

 private:
  void Weight(const std::string& name, std::vector<int64_t> shape, bool quantizable = false) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<float> v = testing::RandomFloats(static_cast<size_t>(n), rng_, 0.5f);
    Ct2NamedVariable var{.name = name, .dtype = Ct2Dtype::kFloat32, .shape = shape};
    const bool quantize = options_.store == Ct2Dtype::kInt8 && quantizable && shape.size() == 2;
    if (quantize) {
      // Per row, as CTranslate2's quantizer: scale = 127 / max|row|, round, int8.
      const int64_t rows = shape[0], cols = shape[1];
      std::vector<float> scales(static_cast<size_t>(rows));
      var.dtype = Ct2Dtype::kInt8;
      for (int64_t r = 0; r < rows; ++r) {
        float amax = 0.0f;
        for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(v[r * cols + c]));
        scales[r] = 127.0f / amax;
        for (int64_t c = 0; c < cols; ++c) {
          const float q = std::nearbyint(v[r * cols + c] * scales[r]);
          var.bytes.push_back(static_cast<char>(static_cast<int8_t>(q)));
          v[r * cols + c] = q / scales[r];
        }
      }
      Ct2NamedVariable scale{.name = name + "_scale", .dtype = Ct2Dtype::kFloat32, .shape = {rows}};
      scale.bytes.assign(reinterpret_cast<const char*>(scales.data()), scales.size() * 4);
      Set(std::move(scale));
    } else if (options_.store == Ct2Dtype::kFloat16 || options_.store == Ct2Dtype::kBFloat16) {
      var.dtype = options_.store;
      for (float& x : v) {
        const uint16_t h =
            options_.store == Ct2Dtype::kFloat16 ? FloatToHalf(x) : FloatToBFloat16(x);
        x = options_.store == Ct2Dtype::kFloat16 ? HalfToFloat(h) : BFloat16ToFloat(h);
        var.bytes.append(reinterpret_cast<const char*>(&h), sizeof(h));
      }
    } else {
      var.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    }
    values_[name] = std::move(v);
    Set(std::move(var));
  }
  void Linear(const std::string& scope, int64_t out, int64_t in) {
    Weight(scope + "/weight", {out, in}, true);
    Weight(scope + "/bias", {out});
  }
  void Norm(const std::string& scope) {
    Weight(scope + "/gamma", {kD});
    Weight(scope + "/beta", {kD});
  }

  SpecOptions options_;
  std::mt19937 rng_;
  std::map<std::string, Ct2NamedVariable> variables_;
  std::map<std::string, std::vector<float>> values_;
  std::vector<std::pair<std::string, std::string>> aliases_;
};

class Ct2TransformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("ct2spec_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  absl::StatusOr<std::unique_ptr<MarianModel>> Load() {
    auto dir = OpenCt2Directory(dir_.string());
    if (!dir.ok()) return dir.status();
    return LoadCt2Transformer(*dir, std::nullopt);
  }
  // The loader's error for `builder` written as is.
  std::string Refusal(const SpecBuilder& builder, uint32_t revision = 7,
                      const std::string& spec = "") {
    builder.WriteTo(dir_, revision, spec);
    auto model = Load();
    EXPECT_FALSE(model.ok());
    return model.ok() ? "" : std::string(model.status().message());
  }

  fs::path dir_;
};

void ExpectRows(const Tensor& t, const std::vector<float>& want, int64_t rows, float tolerance) {
  ASSERT_GE(t.numel(), rows * kD);
  for (int64_t i = 0; i < rows * kD; ++i) {
    ASSERT_NEAR(t.f32()[i], want[i], tolerance) << "element " << i;
  }
}

TEST_F(Ct2TransformerTest, PostNormSharedTablesMapOntoTheEngine) {
  SpecBuilder b({}, 11);
  b.WriteTo(dir_);
  auto model = Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const TransformerConfig& t = (*model)->transformer;
  EXPECT_EQ(t.d_model, kD);
  EXPECT_EQ(t.encoder_layers, 2);
  EXPECT_EQ(t.decoder_layers, 2);
  EXPECT_EQ(t.encoder_heads, 2);
  EXPECT_EQ(t.encoder_ffn_dim, kFfn);
  EXPECT_FALSE(t.encoder_pre_norm);
  EXPECT_FALSE(t.decoder_pre_norm);
  EXPECT_EQ(t.activation, Activation::kSwish);
  EXPECT_FLOAT_EQ(t.embedding_scale, 4.0f);
  EXPECT_EQ(t.max_positions, 40);
  EXPECT_EQ(t.alignment_layer, -1);  // the spec's: the last layer's first head
  EXPECT_EQ(t.alignment_heads, 1);
  // The pad row after the vocabulary, shared by every table, and the start from it.
  EXPECT_EQ(t.target_vocab_size, kVocab + 1);
  const MarianConfig& c = (*model)->config;
  EXPECT_EQ(c.pad_token_id, kVocab);
  EXPECT_EQ(c.decoder_start_token_id, kVocab);
  EXPECT_EQ(c.eos_token_id, 2);
  const TransformerWeights& w = (*model)->weights;
  EXPECT_EQ(w.encoder_embedding.f32(), w.decoder_embedding.f32());
  EXPECT_EQ(w.output.weight.f32(), w.decoder_embedding.f32());
  ExpectRows(w.decoder_embedding, b.values("decoder/embeddings/weight"), kVocab, 0.0f);
  for (int64_t j = 0; j < kD; ++j) EXPECT_EQ(w.decoder_embedding.f32()[kVocab * kD + j], 0.0f);
  EXPECT_EQ(w.output.bias.f32()[kVocab], 0.0f);
  EXPECT_EQ(w.output.bias.f32()[3], b.values("decoder/projection/bias")[3]);
  // The cross-attention keys and values of layer 1 follow layer 0's.
  const std::vector<float>& kv1 = b.values("decoder/layer_1/attention/linear_1/weight");
  EXPECT_EQ(w.cross_kv.weight.f32()[2 * kD * kD + 5], kv1[5]);
  EXPECT_FALSE(w.encoder_final_norm.present());
}

TEST_F(Ct2TransformerTest, PreNormSeparateTablesAndGeneratedPositions) {
  SpecBuilder b({.pre_norm = true,
                 .shared_vocabulary = false,
                 .stored_positions = false,
                 .zero_start = false},
                12);
  b.WriteTo(dir_);
  auto model = Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const TransformerConfig& t = (*model)->transformer;
  EXPECT_TRUE(t.encoder_pre_norm);
  EXPECT_TRUE(t.decoder_pre_norm);
  EXPECT_EQ(t.source_vocab_size, kSourceVocab);
  EXPECT_EQ(t.max_positions, kCt2GeneratedPositions);
  EXPECT_EQ((*model)->config.decoder_start_token_id, 1);  // "<s>"
  const TransformerWeights& w = (*model)->weights;
  EXPECT_NE(w.encoder_embedding.f32(), w.decoder_embedding.f32());
  EXPECT_NE(w.output.weight.f32(), w.decoder_embedding.f32());
  ExpectRows(w.output.weight, b.values("decoder/projection/weight"), kVocab, 0.0f);
  ASSERT_TRUE(w.encoder_final_norm.present());
  ExpectRows(w.decoder_final_norm.gamma, b.values("decoder/layer_norm/gamma"), 1, 0.0f);
  const Tensor table = Ct2SinusoidalPositions(kCt2GeneratedPositions, kD);
  ExpectRows(w.encoder_positions, std::vector<float>(table.f32(), table.f32() + 3 * kD), 3, 0.0f);
}

TEST_F(Ct2TransformerTest, EveryStoredDtypeReadsBackItsValues) {
  for (Ct2Dtype store : {Ct2Dtype::kFloat16, Ct2Dtype::kBFloat16, Ct2Dtype::kInt8}) {
    SCOPED_TRACE(Ct2DtypeName(store));
    SpecBuilder b({.shared_vocabulary = false, .store = store}, 13);
    b.WriteTo(dir_);
    auto model = Load();
    ASSERT_TRUE(model.ok()) << model.status();
    const TransformerWeights& w = (*model)->weights;
    // The builder kept each value as the store rounds it: the loader must give exactly those,
    // up to int8's division by its scale.
    const float tolerance = store == Ct2Dtype::kInt8 ? 1e-6f : 0.0f;
    ExpectRows(w.encoder[1].fc1.weight, b.values("encoder/layer_1/ffn/linear_0/weight"), kFfn / kD,
               tolerance);
    ExpectRows(w.output.weight, b.values("decoder/projection/weight"), kVocab, tolerance);
    ExpectRows(w.encoder[0].self_attn_norm.gamma,
               b.values("encoder/layer_0/self_attention/layer_norm/gamma"), 1, 0.0f);
  }
}

TEST_F(Ct2TransformerTest, GeneratedPositionsAreCtranslate2sTable) {
  const Tensor table = Ct2SinusoidalPositions(50, 8);
  // D = 8: timescales exp(-i * ln(10000) / 3) for i < 4; position p uses (p + 1).
  for (int64_t p : {0, 7, 49}) {
    for (int64_t i = 0; i < 4; ++i) {
      const double angle = (p + 1) * std::exp(-static_cast<double>(i) * std::log(10000.0) / 3.0);
      EXPECT_NEAR(table.f32()[p * 8 + i], std::sin(angle), 1e-5) << p << "," << i;
      EXPECT_NEAR(table.f32()[p * 8 + 4 + i], std::cos(angle), 1e-5) << p << "," << i;
    }
  }
}

TEST_F(Ct2TransformerTest, WhatTheEngineDoesNotComputeIsRefusedByName) {
  struct Case {
    std::string variable;
    Ct2Dtype dtype;
    std::vector<int64_t> shape;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"encoder/layer_0/self_attention/relative_position_keys",
       Ct2Dtype::kFloat32,
       {9, kD},
       "relative position"},
      {"decoder/layer_1/self_attention/rotary_dim", Ct2Dtype::kInt32, {}, "rotary"},
      {"encoder/layer_0/ffn/linear_0_noact/weight", Ct2Dtype::kFloat32, {kFfn, kD}, "GLU"},
      {"decoder/project_in/weight", Ct2Dtype::kFloat32, {kD, kD}, "projections"},
      {"decoder/layer_0/layer_scalar", Ct2Dtype::kFloat32, {}, "scalar"},
      {"encoder/embeddings_1/weight", Ct2Dtype::kFloat32, {5, kD}, "source factors"},
      {"decoder/something_new", Ct2Dtype::kFloat32, {3}, "does not declare"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.variable);
    SpecBuilder b({}, 14);
    Ct2NamedVariable v{.name = c.variable, .dtype = c.dtype, .shape = c.shape};
    int64_t n = 1;
    for (int64_t s : c.shape) n *= s;
    v.bytes.assign(static_cast<size_t>(n) * Ct2DtypeSize(c.dtype), '\x01');
    b.Set(v);
    const std::string error = Refusal(b);
    EXPECT_THAT(error, HasSubstr(c.variable));
    EXPECT_THAT(error, HasSubstr(c.expect));
  }
}

TEST_F(Ct2TransformerTest, SettingsTheEngineDoesNotComputeAreRefused) {
  {
    SpecBuilder b({}, 15);
    b.Attribute("decoder/alibi", Ct2Dtype::kInt8, 1);
    EXPECT_THAT(Refusal(b), HasSubstr("decoder/alibi"));
  }
  {
    SpecBuilder b({}, 15);
    b.Attribute("decoder/layer_0/attention/num_heads_kv", Ct2Dtype::kInt32, 1);
    EXPECT_THAT(Refusal(b), HasSubstr("num_heads_kv"));
  }
  {
    SpecBuilder b({}, 15);
    b.Attribute("encoder/activation", Ct2Dtype::kInt8, 5);  // tanh
    EXPECT_THAT(Refusal(b), HasSubstr("encoder/activation"));
  }
  {
    SpecBuilder b({}, 15);
    b.Remove("decoder/layer_1/ffn/layer_norm/beta");
    EXPECT_THAT(Refusal(b), HasSubstr("RMS"));
  }
  {
    SpecBuilder b({.pre_norm = true}, 15);
    b.Remove("encoder/layer_norm/gamma");
    b.Remove("encoder/layer_norm/beta");
    EXPECT_THAT(Refusal(b), HasSubstr("encoder/layer_norm"));
  }
  {
    SpecBuilder b({}, 15);
    b.Attribute("encoder/num_heads", Ct2Dtype::kInt16, 3);  // does not divide 16
    EXPECT_THAT(Refusal(b), HasSubstr("encoder/num_heads"));
  }
  EXPECT_THAT(Refusal(SpecBuilder({}, 15), 7, "TransformerDecoderModelSpec"),
              HasSubstr("TransformerDecoderModelSpec"));
  EXPECT_THAT(Refusal(SpecBuilder({}, 15), 2), HasSubstr("revision 2"));
}

// Which attention alignments (and replaced unknowns) come from: the spec's layer and heads, its
// defaults when absent, and values outside the decoder refused by name.
TEST_F(Ct2TransformerTest, AlignmentLayerAndHeadsComeFromTheSpec) {
  {
    SpecBuilder b({}, 16);
    b.Attribute("decoder/alignment_layer", Ct2Dtype::kInt16, 0);
    b.Attribute("decoder/alignment_heads", Ct2Dtype::kInt16, 0);  // every head
    b.WriteTo(dir_);
    auto model = Load();
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ((*model)->transformer.alignment_layer, 0);
    EXPECT_EQ((*model)->transformer.alignment_heads, 0);
  }
  {
    SpecBuilder b({}, 16);
    b.Remove("decoder/alignment_layer");
    b.Remove("decoder/alignment_heads");
    b.WriteTo(dir_);
    auto model = Load();
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ((*model)->transformer.alignment_layer, -1);
    EXPECT_EQ((*model)->transformer.alignment_heads, 1);
  }
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, double>>{{"decoder/alignment_layer", 2},
                                                   {"decoder/alignment_layer", -3},
                                                   {"decoder/alignment_heads", 3},
                                                   {"decoder/alignment_heads", -1}}) {
    SCOPED_TRACE(::testing::Message() << name << " = " << value);
    SpecBuilder b({}, 16);
    b.Attribute(name, Ct2Dtype::kInt16, value);  // 2 layers of 2 heads
    EXPECT_THAT(Refusal(b), HasSubstr(name));
  }
}

TEST_F(Ct2TransformerTest, BrokenWeightsAreRefusedNamingTheVariable) {
  {
    SpecBuilder b({}, 16);
    b.Set({.name = "encoder/layer_0/ffn/linear_1/weight",
           .dtype = Ct2Dtype::kFloat32,
           .shape = {kD, kFfn + 1},
           .bytes = std::string(static_cast<size_t>(kD * (kFfn + 1) * 4), '\0')});
    EXPECT_THAT(Refusal(b), HasSubstr("encoder/layer_0/ffn/linear_1/weight"));
  }
  {
    SpecBuilder b({}, 16);
    const float nan = std::nanf("");
    std::string bytes(static_cast<size_t>(kD * 4), '\0');
    std::memcpy(bytes.data() + 8, &nan, sizeof(nan));
    b.Set({.name = "decoder/layer_0/ffn/layer_norm/gamma",
           .dtype = Ct2Dtype::kFloat32,
           .shape = {kD},
           .bytes = bytes});
    EXPECT_THAT(Refusal(b), HasSubstr("decoder/layer_0/ffn/layer_norm/gamma"));
  }
  {
    // An infinity past the first block of the loader's finiteness scan, in a float16 store.
    SpecBuilder b({}, 16);
    constexpr int64_t kRows = 100;
    std::string bytes(static_cast<size_t>(kRows * kD * 2), '\0');
    for (size_t i = 0; i < bytes.size(); i += 2) bytes[i + 1] = 0x3C;  // 1.0
    const uint16_t infinity = 0x7C00;
    std::memcpy(bytes.data() + 2 * 1500, &infinity, sizeof(infinity));
    b.Set({.name = "encoder/position_encodings/encodings",
           .dtype = Ct2Dtype::kFloat16,
           .shape = {kRows, kD},
           .bytes = bytes});
    const std::string error = Refusal(b);
    EXPECT_THAT(error, HasSubstr("encoder/position_encodings/encodings"));
    EXPECT_THAT(error, HasSubstr("at element 1500"));
  }
  {
    SpecBuilder b({.store = Ct2Dtype::kInt8}, 16);
    b.Remove("decoder/layer_0/attention/linear_2/weight_scale");
    EXPECT_THAT(Refusal(b), HasSubstr("no _scale"));
  }
  {
    SpecBuilder b({.store = Ct2Dtype::kInt8}, 16);
    b.Set({.name = "decoder/layer_0/attention/linear_2/weight_scale",
           .dtype = Ct2Dtype::kFloat32,
           .shape = {kD},
           .bytes = std::string(static_cast<size_t>(kD * 4), '\0')});
    EXPECT_THAT(Refusal(b), HasSubstr("weight_scale"));
  }
  {
    SpecBuilder b({}, 16);
    b.Remove("decoder/layer_1/attention/linear_1/weight");
    EXPECT_THAT(Refusal(b), HasSubstr("decoder/layer_1/attention/linear_1/weight"));
  }
}

}  // namespace
}  // namespace transerve
