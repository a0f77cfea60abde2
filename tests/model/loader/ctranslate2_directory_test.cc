// Tests for CTranslate2 model directories: vocabularies in both file forms (shared and
// separate, random tokens), the special tokens of binary version 6 (config.json) and of older
// versions (the model's attribute variables), and directories that must be refused.
#include "model/loader/ctranslate2_directory.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/loader/ctranslate2_model_bin_writer.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class Ct2DirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("ct2dir_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  // A model.bin of `version` with one random weight and `attributes` (int8 variables).
  void WriteModel(uint32_t version, std::vector<Ct2NamedVariable> attributes = {}) {
    Ct2ModelBinContents m;
    m.binary_version = version;
    if (version >= 2) m.spec_name = "TransformerSpec";
    Ct2NamedVariable w{.name = "encoder/weight", .dtype = Ct2Dtype::kFloat32, .shape = {2, 3}};
    for (int i = 0; i < 24; ++i) w.bytes.push_back(static_cast<char>(rng_()));
    m.variables.push_back(w);
    for (auto& a : attributes) m.variables.push_back(std::move(a));
    ASSERT_TRUE(WriteCt2ModelBin((dir_ / "model.bin").string(), m).ok());
  }
  static Ct2NamedVariable Text(const std::string& name, const std::string& value) {
    return {.name = name,
            .dtype = Ct2Dtype::kInt8,
            .shape = {static_cast<int64_t>(value.size())},
            .bytes = value};
  }
  static Ct2NamedVariable Flag(const std::string& name, bool value) {
    return {.name = name, .dtype = Ct2Dtype::kInt8, .shape = {}, .bytes = std::string(1, value)};
  }
  // Random distinct pieces, SentencePiece-like (some with the word-start mark).
  std::vector<std::string> RandomTokens(int n) {
    std::vector<std::string> tokens;
    std::set<std::string> seen;
    while (static_cast<int>(tokens.size()) < n) {
      std::string t = rng_() % 2 ? "\xe2\x96\x81" : "";
      const int len = 1 + static_cast<int>(rng_() % 6);
      for (int i = 0; i < len; ++i) t.push_back(static_cast<char>('a' + rng_() % 26));
      if (seen.insert(t).second) tokens.push_back(t);
    }
    return tokens;
  }
  static std::string JsonArray(const std::vector<std::string>& tokens) {
    return nlohmann::json(tokens).dump();
  }
  static std::string Lines(const std::vector<std::string>& tokens, const char* end = "\n") {
    std::string out;
    for (const auto& t : tokens) out += t + end;
    return out;
  }

  fs::path dir_;
  std::mt19937 rng_{20261204};
};

TEST_F(Ct2DirectoryTest, SharedJsonVocabularyAndConfigTokens) {
  WriteModel(6);
  std::vector<std::string> tokens = RandomTokens(40);
  tokens.insert(tokens.begin(), {"<pad>", "</s>", "<unk>"});
  Write("shared_vocabulary.json", JsonArray(tokens));
  Write("config.json", R"({"add_source_bos": false, "add_source_eos": true, "bos_token": "<s>",
    "decoder_start_token": "</s>", "eos_token": "</s>", "unk_token": "<unk>",
    "layer_norm_epsilon": null, "multi_query_attention": false})");
  auto d = OpenCt2Directory(dir_.string());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->source_vocabulary, d->target_vocabulary);
  ASSERT_EQ(d->target_vocabulary->size(), static_cast<int64_t>(tokens.size()));
  for (size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(d->target_vocabulary->token(static_cast<int64_t>(i)), tokens[i]);
    EXPECT_EQ(d->target_vocabulary->Find(tokens[i]), static_cast<int64_t>(i));
  }
  EXPECT_TRUE(d->tokens.add_source_eos);
  EXPECT_FALSE(d->tokens.add_source_bos);
  EXPECT_EQ(d->tokens.decoder_start, "</s>");
  EXPECT_EQ(d->config["multi_query_attention"], false);
  EXPECT_EQ(d->model.spec_name(), "TransformerSpec");
}

TEST_F(Ct2DirectoryTest, SeparateTextVocabulariesKeepCtranslate2sRules) {
  WriteModel(6);
  const std::vector<std::string> source = RandomTokens(30), target = RandomTokens(25);
  std::vector<std::string> target_with_eos = target;
  target_with_eos.push_back("</s>");
  target_with_eos.push_back("<s>");
  // Every line ending in \r: dropped. The source file has no final newline.
  Write("target_vocabulary.txt", Lines(target_with_eos, "\r\n"));
  std::string source_text = Lines(source);
  source_text.pop_back();
  Write("source_vocabulary.txt", source_text);
  auto d = OpenCt2Directory(dir_.string());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NE(d->source_vocabulary, d->target_vocabulary);
  // The unknown token is appended to each, as CTranslate2 does when a file lacks it.
  ASSERT_EQ(d->source_vocabulary->size(), static_cast<int64_t>(source.size()) + 1);
  ASSERT_EQ(d->target_vocabulary->size(), static_cast<int64_t>(target_with_eos.size()) + 1);
  EXPECT_EQ(d->source_vocabulary->token(static_cast<int64_t>(source.size())), "<unk>");
  for (size_t i = 0; i < source.size(); ++i) {
    EXPECT_EQ(d->source_vocabulary->token(static_cast<int64_t>(i)), source[i]);
  }
  for (size_t i = 0; i < target_with_eos.size(); ++i) {
    EXPECT_EQ(d->target_vocabulary->token(static_cast<int64_t>(i)), target_with_eos[i]);
  }
  // Defaults without config.json: decoder starts from <s>, no source bos/eos.
  EXPECT_EQ(d->tokens.decoder_start, "<s>");
  EXPECT_FALSE(d->tokens.add_source_eos);
}

TEST_F(Ct2DirectoryTest, CarriageReturnsOnSomeLinesOnlyArePartOfTheTokens) {
  WriteModel(6);
  Write("shared_vocabulary.txt", "<s>\r\n</s>\nx\r\n<s>\n");
  auto d = OpenCt2Directory(dir_.string());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->target_vocabulary->token(0), "<s>\r");
  EXPECT_EQ(d->target_vocabulary->token(1), "</s>");
  EXPECT_EQ(d->target_vocabulary->Find("x\r"), 2);
  EXPECT_EQ(d->target_vocabulary->Find("<s>"), 3);
  EXPECT_FALSE(d->target_vocabulary->Find("x").has_value());
}

TEST_F(Ct2DirectoryTest, ATokenWrittenTwiceKeepsBothIdsAndFindsTheFirst) {
  WriteModel(6);
  Write("shared_vocabulary.json", R"(["<s>", "</s>", "a", "b", "a", "<unk>"])");
  auto d = OpenCt2Directory(dir_.string());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->target_vocabulary->size(), 6);
  EXPECT_EQ(d->target_vocabulary->token(4), "a");
  EXPECT_EQ(d->target_vocabulary->Find("a"), 2);
}

TEST_F(Ct2DirectoryTest, OlderVersionsTakeTheirTokensFromAttributes) {
  for (uint32_t version : {3u, 5u}) {
    WriteModel(version, {Text("bos_token", "<start>"), Text("eos_token", "<end>"),
                         Text("unk_token", "<oov>"), Flag("with_source_eos", true),
                         Flag("with_target_bos", false)});
    std::vector<std::string> tokens = RandomTokens(10);
    tokens.push_back("<end>");
    Write("shared_vocabulary.txt", Lines(tokens));
    // A config.json of a later converter is not what such a model reads.
    Write("config.json", R"({"eos_token": "zzz"})");
    auto d = OpenCt2Directory(dir_.string());
    ASSERT_TRUE(d.ok()) << version << ": " << d.status();
    EXPECT_EQ(d->tokens.bos, "<start>") << version;
    EXPECT_EQ(d->tokens.eos, "<end>") << version;
    EXPECT_EQ(d->tokens.unk, "<oov>") << version;
    EXPECT_TRUE(d->tokens.add_source_eos) << version;
    EXPECT_EQ(d->tokens.decoder_start, "<end>") << version;  // with_target_bos false: eos
    EXPECT_EQ(d->target_vocabulary->token(d->target_vocabulary->size() - 1), "<oov>");
  }
}

TEST_F(Ct2DirectoryTest, UserStartTokensMeanNoDecoderStart) {
  WriteModel(5, {Flag("user_decoder_start_tokens", true)});
  Write("shared_vocabulary.json", R"(["<s>", "</s>", "x"])");
  auto d = OpenCt2Directory(dir_.string());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->tokens.decoder_start.has_value());
  WriteModel(6);
  Write("config.json", R"({"decoder_start_token": null})");
  d = OpenCt2Directory(dir_.string());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->tokens.decoder_start.has_value());
}

TEST_F(Ct2DirectoryTest, BrokenDirectoriesAreRefusedWithTheReason) {
  struct Case {
    const char* what;
    std::vector<std::pair<std::string, std::string>> files;  // besides a version 6 model.bin
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"no vocabulary", {}, "no target_vocabulary.json or target_vocabulary.txt"},
      {"target only", {{"target_vocabulary.txt", "</s>\n<s>\n"}}, "no source_vocabulary"},
      {"multi-source",
       {{"target_vocabulary.txt", "</s>\n<s>\n"}, {"source_1_vocabulary.txt", "a\n"}},
       "multi-source"},
      {"not an array", {{"shared_vocabulary.json", R"({"a": 1})"}}, "array of strings"},
      {"not strings", {{"shared_vocabulary.json", R"(["</s>", 7])"}}, "entry 1"},
      {"empty", {{"shared_vocabulary.txt", ""}}, "no tokens"},
      {"bad json", {{"shared_vocabulary.json", R"(["</s>", )"}}, "shared_vocabulary.json"},
      {"duplicate config key",
       {{"shared_vocabulary.json", R"(["<s>", "</s>"])"},
        {"config.json", R"({"eos_token": "</s>", "eos_token": "<s>"})"}},
       "eos_token"},
      {"config not an object",
       {{"shared_vocabulary.json", R"(["<s>", "</s>"])"}, {"config.json", "[1]"}},
       "not a JSON object"},
      {"token of the wrong type",
       {{"shared_vocabulary.json", R"(["<s>", "</s>"])"}, {"config.json", R"({"eos_token": 2})"}},
       "\"eos_token\" must be a string"},
      {"flag of the wrong type",
       {{"shared_vocabulary.json", R"(["<s>", "</s>"])"},
        {"config.json", R"({"add_source_eos": "yes"})"}},
       "\"add_source_eos\" must be true or false"},
      {"eos not in the vocabulary",
       {{"shared_vocabulary.json", R"(["<s>", "x"])"}},
       "end token \"</s>\" is not in the target vocabulary"},
      {"start not in the vocabulary",
       {{"shared_vocabulary.json", R"(["<s>", "</s>"])"},
        {"config.json", R"({"decoder_start_token": "<2de>"})"}},
       "decoder start token \"<2de>\""},
  };
  for (const Case& c : cases) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    WriteModel(6);
    for (const auto& [name, text] : c.files) Write(name, text);
    auto d = OpenCt2Directory(dir_.string());
    ASSERT_FALSE(d.ok()) << c.what;
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(c.expected)) << c.what;
  }
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  Write("shared_vocabulary.json", R"(["<s>", "</s>"])");
  auto d = OpenCt2Directory(dir_.string());
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(absl::IsNotFound(d.status())) << d.status();
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("model.bin"));
}

TEST_F(Ct2DirectoryTest, AttributesOfTheWrongTypeAreRefused) {
  WriteModel(5, {{.name = "eos_token",
                  .dtype = Ct2Dtype::kFloat32,
                  .shape = {1},
                  .bytes = std::string(4, '\x01')}});
  Write("shared_vocabulary.json", R"(["<s>", "</s>"])");
  auto d = OpenCt2Directory(dir_.string());
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("eos_token is float32"));
  WriteModel(5, {{.name = "with_source_eos",
                  .dtype = Ct2Dtype::kInt8,
                  .shape = {3},
                  .bytes = std::string("\x01\x00\x01", 3)}});
  d = OpenCt2Directory(dir_.string());
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("with_source_eos is not one value"));
}

}  // namespace
}  // namespace transerve
