// Tests for LoadMarianConfig and LoadGenerationDefaults: required keys, types, ranges, and the
// generation_config.json / legacy config.json precedence with our max_length convention.
#include "model/loader/model_config.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// opus-mt-en-de's config.json as dumped by transformers 4.x (docs/marian-format.md 2.1, 2.2),
// including the legacy keys HF ignores.
Json OpusMtEnDe() {
  return Json::parse(R"({
    "_name_or_path": "Helsinki-NLP/opus-mt-en-de",
    "activation_dropout": 0.0, "activation_function": "swish", "add_bias_logits": false,
    "add_final_layer_norm": false, "architectures": ["MarianMTModel"], "attention_dropout": 0.0,
    "bad_words_ids": [[58100]], "bos_token_id": 0, "classif_dropout": 0.0,
    "classifier_dropout": 0.0, "d_model": 512, "decoder_attention_heads": 8,
    "decoder_ffn_dim": 2048, "decoder_layerdrop": 0.0,
    "decoder_layers": 6, "decoder_start_token_id": 58100, "dropout": 0.1,
    "encoder_attention_heads": 8, "encoder_ffn_dim": 2048, "encoder_layerdrop": 0.0,
    "encoder_layers": 6, "eos_token_id": 0, "extra_pos_embeddings": 58101,
    "forced_eos_token_id": 0, "gradient_checkpointing": false,
    "id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}, "init_std": 0.02,
    "is_encoder_decoder": true, "label2id": {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2},
    "max_length": 512, "max_position_embeddings": 512, "model_type": "marian",
    "normalize_before": false, "normalize_embedding": false, "num_beams": 4,
    "num_hidden_layers": 6, "pad_token_id": 58100, "scale_embedding": true,
    "static_position_embeddings": true, "transformers_version": "4.9.0.dev0",
    "use_cache": true, "vocab_size": 58101
  })");
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("transerve_config_", info->name(), "_", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string WriteText(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::trunc) << text;
    return path;
  }
  std::string WriteConfig(const Json& config) const {
    return WriteText("config.json", config.dump(2));
  }

  // Loads `config` and expects INVALID_ARGUMENT mentioning the file and every fragment.
  void ExpectConfigError(const Json& config, std::initializer_list<std::string_view> fragments) {
    const std::string path = WriteConfig(config);
    absl::StatusOr<MarianConfig> c = LoadMarianConfig(path);
    ASSERT_FALSE(c.ok()) << config.dump();
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(path));
    for (std::string_view f : fragments) {
      EXPECT_THAT(std::string(c.status().message()), HasSubstr(std::string(f)));
    }
  }

  void ExpectGenerationError(const std::string& file, const Json& json,
                             std::initializer_list<std::string_view> fragments) {
    const std::string path = WriteText(file, json.dump());
    absl::StatusOr<GenerationDefaults> g = LoadGenerationDefaults(dir_.string());
    ASSERT_FALSE(g.ok()) << json.dump();
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << g.status();
    EXPECT_THAT(std::string(g.status().message()), HasSubstr(path));
    for (std::string_view f : fragments) {
      EXPECT_THAT(std::string(g.status().message()), HasSubstr(std::string(f)));
    }
  }

  fs::path dir_;
};

TEST_F(ConfigTest, LoadsOpusMtConfig) {
  absl::StatusOr<MarianConfig> c = LoadMarianConfig(WriteConfig(OpusMtEnDe()));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->vocab_size, 58101);
  EXPECT_EQ(c->decoder_vocab_size, 58101);  // Absent: copies vocab_size.
  EXPECT_EQ(c->d_model, 512);
  EXPECT_EQ(c->encoder_layers, 6);
  EXPECT_EQ(c->decoder_layers, 6);
  EXPECT_EQ(c->encoder_attention_heads, 8);
  EXPECT_EQ(c->decoder_attention_heads, 8);
  EXPECT_EQ(c->encoder_ffn_dim, 2048);
  EXPECT_EQ(c->decoder_ffn_dim, 2048);
  EXPECT_EQ(c->max_position_embeddings, 512);
  EXPECT_EQ(c->activation, Activation::kSwish);
  EXPECT_TRUE(c->scale_embedding);
  EXPECT_TRUE(c->share_encoder_decoder_embeddings);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->pad_token_id, 58100);
  EXPECT_EQ(c->eos_token_id, 0);
  EXPECT_EQ(c->decoder_start_token_id, 58100);
  EXPECT_EQ(c->forced_eos_token_id, 0);
}

TEST_F(ConfigTest, TcBigStyleValues) {
  // tc-big: relu, eos not 0, separate decoder vocabulary, explicit flags.
  Json j = OpusMtEnDe();
  j["activation_function"] = "relu";
  j["vocab_size"] = 53017;
  j["decoder_vocab_size"] = 53020;
  j["share_encoder_decoder_embeddings"] = false;
  j["tie_word_embeddings"] = false;
  j["eos_token_id"] = 43311;
  j["pad_token_id"] = 53016;
  j["decoder_start_token_id"] = 53016;
  j["forced_eos_token_id"] = 43311;
  j["d_model"] = 1024;
  j["encoder_attention_heads"] = 16;
  j["decoder_attention_heads"] = 16;
  absl::StatusOr<MarianConfig> c = LoadMarianConfig(WriteConfig(j));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->activation, Activation::kRelu);
  EXPECT_EQ(c->decoder_vocab_size, 53020);
  EXPECT_FALSE(c->share_encoder_decoder_embeddings);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_EQ(c->eos_token_id, 43311);
  EXPECT_EQ(c->forced_eos_token_id, 43311);
}

TEST_F(ConfigTest, ForcedEosDefaultsToEos) {
  for (bool null_value : {false, true}) {
    Json j = OpusMtEnDe();
    j["eos_token_id"] = 7;
    if (null_value) {
      j["forced_eos_token_id"] = nullptr;
    } else {
      j.erase("forced_eos_token_id");
    }
    absl::StatusOr<MarianConfig> c = LoadMarianConfig(WriteConfig(j));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->forced_eos_token_id, 7);
  }
}

TEST_F(ConfigTest, NullDecoderVocabSizeCopiesVocabSize) {
  Json j = OpusMtEnDe();
  j["decoder_vocab_size"] = nullptr;
  EXPECT_EQ(LoadMarianConfig(WriteConfig(j))->decoder_vocab_size, 58101);
}

TEST_F(ConfigTest, EveryArchitecturalKeyIsRequired) {
  for (const char* key :
       {"vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
        "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "max_position_embeddings",
        "activation_function", "scale_embedding", "pad_token_id", "eos_token_id",
        "decoder_start_token_id"}) {
    SCOPED_TRACE(key);
    Json j = OpusMtEnDe();
    j.erase(key);
    ExpectConfigError(j, {absl::StrCat("missing required key \"", key, "\"")});
  }
}

TEST_F(ConfigTest, RequiredKeyThatIsNullIsAnError) {
  Json j = OpusMtEnDe();
  j["d_model"] = nullptr;
  ExpectConfigError(j, {"\"d_model\"", "must be an integer, got null"});
}

TEST_F(ConfigTest, WrongTypesAreClearErrors) {
  struct Case {
    const char* key;
    Json value;
    const char* fragment;
  };
  for (const Case& c : {
           Case{"d_model", "512", "must be an integer, got string \"512\""},
           Case{"d_model", 512.0, "must be an integer, got number"},
           Case{"vocab_size", true, "must be an integer, got boolean true"},
           Case{"encoder_layers", Json::array({6}), "must be an integer, got an array"},
           Case{"scale_embedding", "true", "must be true or false, got string"},
           Case{"scale_embedding", 1, "must be true or false, got integer 1"},
           Case{"activation_function", 1, "must be a string, got integer 1"},
           Case{"pad_token_id", "58100", "must be an integer"},
           Case{"share_encoder_decoder_embeddings", "yes", "must be true or false"},
           Case{"tie_word_embeddings", 0, "must be true or false"},
           Case{"model_type", 3, "must be a string"},
           Case{"normalize_before", "false", "must be true or false"},
           Case{"decoder_vocab_size", "58101", "must be an integer"},
       }) {
    SCOPED_TRACE(c.key);
    Json j = OpusMtEnDe();
    j[c.key] = c.value;
    ExpectConfigError(j, {absl::StrCat("key \"", c.key, "\""), c.fragment});
  }
  // An integer literal too big for 64 bits arrives as a float, and is refused as one.
  std::string text = OpusMtEnDe().dump();
  const std::string key = "\"max_position_embeddings\":512";
  ASSERT_NE(text.find(key), std::string::npos);
  text.replace(text.find(key), key.size(), "\"max_position_embeddings\":100000000000000000000");
  const std::string path = WriteText("config.json", text);
  absl::StatusOr<MarianConfig> c = LoadMarianConfig(path);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("\"max_position_embeddings\" must be an integer, got number"));
}

TEST_F(ConfigTest, ActivationNames) {
  struct Case {
    const char* name;
    Activation activation;
  };
  for (const Case& c : {Case{"swish", Activation::kSwish}, Case{"silu", Activation::kSwish},
                        Case{"relu", Activation::kRelu}, Case{"gelu", Activation::kGelu},
                        Case{"gelu_new", Activation::kGeluTanh},
                        Case{"gelu_pytorch_tanh", Activation::kGeluTanh}}) {
    Json j = OpusMtEnDe();
    j["activation_function"] = c.name;
    absl::StatusOr<MarianConfig> config = LoadMarianConfig(WriteConfig(j));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->activation, c.activation) << c.name;
  }
  for (const char* bad : {"gelu_fast", "tanh", "Swish", "quick_gelu", ""}) {
    Json j = OpusMtEnDe();
    j["activation_function"] = bad;
    ExpectConfigError(j, {"unsupported activation_function", absl::StrCat("\"", bad, "\"")});
  }
}

TEST_F(ConfigTest, MarianAndM2m100ModelTypesOnly) {
  Json j = OpusMtEnDe();
  j["model_type"] = "bart";
  ExpectConfigError(j, {"\"model_type\"", "\"bart\"", "\"marian\" and \"m2m_100\""});
  j.erase("model_type");
  auto marian = LoadMarianConfig(WriteConfig(j));
  ASSERT_TRUE(marian.ok()) << marian.status();
  EXPECT_EQ(marian->architecture, MarianConfig::Architecture::kMarian);
  j["model_type"] = "m2m_100";
  auto m2m = LoadMarianConfig(WriteConfig(j));
  ASSERT_TRUE(m2m.ok()) << m2m.status();
  EXPECT_EQ(m2m->architecture, MarianConfig::Architecture::kM2m100);
  EXPECT_EQ(m2m->family, "m2m_100 transformer");
}

TEST_F(ConfigTest, PreNormIsRejected) {
  Json j = OpusMtEnDe();
  j["normalize_before"] = true;
  ExpectConfigError(j, {"normalize_before", "pre-norm"});
  j.erase("normalize_before");
  EXPECT_TRUE(LoadMarianConfig(WriteConfig(j)).ok());
  // Other legacy keys are ignored whatever they say.
  j["add_final_layer_norm"] = true;
  j["static_position_embeddings"] = "whatever";
  EXPECT_TRUE(LoadMarianConfig(WriteConfig(j)).ok());
}

TEST_F(ConfigTest, SizesMustBePositive) {
  for (const char* key : {"d_model", "encoder_layers", "decoder_attention_heads", "vocab_size",
                          "max_position_embeddings", "decoder_ffn_dim"}) {
    for (int value : {0, -4}) {
      Json j = OpusMtEnDe();
      j[key] = value;
      ExpectConfigError(j, {absl::StrCat("key \"", key, "\""), "must be positive"});
    }
  }
  Json j = OpusMtEnDe();
  j["decoder_vocab_size"] = 0;
  ExpectConfigError(j, {"\"decoder_vocab_size\"", "must be positive"});
}

TEST_F(ConfigTest, HeadsMustDivideDModel) {
  Json j = OpusMtEnDe();
  j["encoder_attention_heads"] = 7;
  ExpectConfigError(j, {"\"encoder_attention_heads\"", "does not divide d_model (512)"});
  j = OpusMtEnDe();
  j["decoder_attention_heads"] = 3;
  ExpectConfigError(j, {"\"decoder_attention_heads\"", "does not divide d_model"});
}

TEST_F(ConfigTest, TokenIdsMustBeInsideTheVocabularies) {
  struct Case {
    const char* key;
    int64_t value;
  };
  for (const Case& c :
       {Case{"pad_token_id", 58101}, Case{"pad_token_id", -1}, Case{"eos_token_id", 58101},
        Case{"eos_token_id", -5}, Case{"decoder_start_token_id", 58101},
        Case{"forced_eos_token_id", 99999}, Case{"pad_token_id", 1LL << 40}}) {
    Json j = OpusMtEnDe();
    j[c.key] = c.value;
    ExpectConfigError(j, {absl::StrCat("key \"", c.key, "\""), "outside"});
  }
  // With separate vocabularies pad/eos must fit both; decoder ids only the decoder one.
  Json j = OpusMtEnDe();
  j["share_encoder_decoder_embeddings"] = false;
  j["decoder_vocab_size"] = 60000;
  j["decoder_start_token_id"] = 59999;
  EXPECT_TRUE(LoadMarianConfig(WriteConfig(j)).ok());
  j["pad_token_id"] = 59000;  // In the decoder vocabulary only.
  ExpectConfigError(j, {"\"pad_token_id\"", "both vocabularies [0, 58101)"});
}

TEST_F(ConfigTest, SharedEmbeddingsNeedOneVocabularySize) {
  Json j = OpusMtEnDe();
  j["decoder_vocab_size"] = 60000;
  ExpectConfigError(j, {"\"decoder_vocab_size\"", "share_encoder_decoder_embeddings"});
}

TEST_F(ConfigTest, FileErrors) {
  absl::StatusOr<MarianConfig> missing = LoadMarianConfig((dir_ / "nope.json").string());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("nope.json"));

  const std::string bad = WriteText("config.json", "{\n  \"d_model\": 512,\n  oops\n}");
  absl::StatusOr<MarianConfig> c = LoadMarianConfig(bad);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(bad + ": invalid JSON at line 3"));

  const std::string array = WriteText("config.json", "[1, 2]");
  c = LoadMarianConfig(array);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("expected a JSON object"));

  const std::string dup = WriteText("config.json", R"({"d_model": 512, "d_model": 1024})");
  c = LoadMarianConfig(dup);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("duplicate key \"d_model\""));
}

// ---------------------------------------------------------------------------------------------
// Generation defaults.

TEST_F(ConfigTest, GenerationConfigJson) {
  WriteConfig(OpusMtEnDe());
  // opus-mt-en-zh's generation_config.json (docs/marian-format.md 2.3).
  WriteText("generation_config.json",
            R"({"bad_words_ids": [[65000]], "bos_token_id": 0, "decoder_start_token_id": 65000,
                "eos_token_id": 0, "forced_eos_token_id": 0, "max_length": 512, "num_beams": 4,
                "pad_token_id": 65000, "renormalize_logits": true})");
  absl::StatusOr<GenerationDefaults> g = LoadGenerationDefaults(dir_.string());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_beams, 4);
  EXPECT_EQ(g->max_length, 511);  // HF counts the decoder start token; we do not.
  EXPECT_EQ(g->min_length, 0);
  EXPECT_EQ(g->length_penalty, 1.0f);
  EXPECT_EQ(g->num_return_sequences, 1);
  EXPECT_THAT(g->bad_words_ids, ElementsAre(65000));
}

TEST_F(ConfigTest, GenerationConfigWinsAndMissingKeysAreBuiltIn) {
  // As in HF, a present generation_config.json is the whole story: config.json's legacy keys do
  // not fill its gaps.
  Json config = OpusMtEnDe();
  config["num_beams"] = 6;
  config["length_penalty"] = 0.6;
  WriteConfig(config);
  WriteText("generation_config.json", R"({"num_beams": 3})");
  absl::StatusOr<GenerationDefaults> g = LoadGenerationDefaults(dir_.string());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_beams, 3);
  EXPECT_EQ(g->max_length, 0);
  EXPECT_EQ(g->length_penalty, 1.0f);
  EXPECT_TRUE(g->bad_words_ids.empty());
}

TEST_F(ConfigTest, LegacyKeysInConfigJson) {
  Json config = OpusMtEnDe();
  config["length_penalty"] = 0.8;
  config["min_length"] = 3;
  config["num_return_sequences"] = 2;
  WriteConfig(config);
  absl::StatusOr<GenerationDefaults> g = LoadGenerationDefaults(dir_.string());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_beams, 4);
  EXPECT_EQ(g->max_length, 511);
  EXPECT_EQ(g->min_length, 3);
  EXPECT_FLOAT_EQ(g->length_penalty, 0.8f);
  EXPECT_EQ(g->num_return_sequences, 2);
  EXPECT_THAT(g->bad_words_ids, ElementsAre(58100));
}

TEST_F(ConfigTest, BuiltInDefaultsWhenNoKeys) {
  WriteConfig(Json{{"d_model", 512}});
  absl::StatusOr<GenerationDefaults> g = LoadGenerationDefaults(dir_.string());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_beams, 1);
  EXPECT_EQ(g->max_length, 0);
  EXPECT_EQ(g->min_length, 0);
  EXPECT_EQ(g->length_penalty, 1.0f);
  EXPECT_EQ(g->num_return_sequences, 1);
  EXPECT_TRUE(g->bad_words_ids.empty());
}

TEST_F(ConfigTest, NullGenerationKeysAreUnset) {
  WriteText("generation_config.json",
            R"({"num_beams": null, "max_length": null, "bad_words_ids": null})");
  absl::StatusOr<GenerationDefaults> g = LoadGenerationDefaults(dir_.string());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_beams, 1);
  EXPECT_EQ(g->max_length, 0);
}

TEST_F(ConfigTest, NewTokenLimitsConvert) {
  WriteText("generation_config.json",
            R"({"max_length": 512, "max_new_tokens": 100, "min_length": 2, "min_new_tokens": 5})");
  absl::StatusOr<GenerationDefaults> g = LoadGenerationDefaults(dir_.string());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->max_length, 100);  // max_new_tokens overrides max_length, and is already ours.
  EXPECT_EQ(g->min_length, 6);    // EOS allowed once 5 new tokens exist: 6 incl. EOS.
}

TEST_F(ConfigTest, GenerationErrors) {
  struct Case {
    Json json;
    const char* fragment;
  };
  for (const Case& c : {
           Case{{{"num_beams", 0}}, "\"num_beams\" is 0"},
           Case{{{"num_beams", "4"}}, "\"num_beams\" must be an integer"},
           Case{{{"max_length", 1}}, "counts the decoder start token"},
           Case{{{"max_length", 5.5}}, "\"max_length\" must be an integer"},
           Case{{{"max_new_tokens", 0}}, "\"max_new_tokens\" is 0"},
           Case{{{"min_length", -1}}, "\"min_length\" is -1"},
           Case{{{"length_penalty", "1.0"}}, "\"length_penalty\" must be a number"},
           Case{{{"num_beams", 2}, {"num_return_sequences", 3}}, "more than num_beams (2)"},
           Case{{{"bad_words_ids", {{1, 2}}}}, "2-token entry"},
           Case{{{"bad_words_ids", Json::array({Json::array()})}}, "non-empty lists"},
           Case{{{"bad_words_ids", {1, 2}}}, "non-empty lists"},
           Case{{{"bad_words_ids", 5}}, "must be a list"},
           Case{{{"bad_words_ids", {{-1}}}}, "token ids in [0,"},
           Case{{{"num_beams", 4294967296LL}}, "\"num_beams\" is 4294967296"},
       }) {
    SCOPED_TRACE(c.json.dump());
    ExpectGenerationError("generation_config.json", c.json, {c.fragment});
  }
}

TEST_F(ConfigTest, LegacyGenerationErrorsNameConfigJson) {
  Json config = OpusMtEnDe();
  config["num_beams"] = -2;
  ExpectGenerationError("config.json", config, {"config.json", "\"num_beams\""});
}

TEST_F(ConfigTest, MalformedGenerationConfigIsAnErrorNotAFallback) {
  WriteConfig(OpusMtEnDe());
  const std::string path = WriteText("generation_config.json", "{\"num_beams\": 4,}");
  absl::StatusOr<GenerationDefaults> g = LoadGenerationDefaults(dir_.string());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr(path + ": invalid JSON at line 1"));
}

TEST_F(ConfigTest, NoConfigFilesIsNotFound) {
  absl::StatusOr<GenerationDefaults> g = LoadGenerationDefaults(dir_.string());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr(dir_.string()));
}

}  // namespace
}  // namespace transerve
