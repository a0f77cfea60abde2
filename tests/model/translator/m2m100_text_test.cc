// Text in, text out for M2M-100 and NLLB-200 checkpoints: random tokenizers in the hub's layout
// (a BPE SentencePiece model trained anew each run, the codes' ids written three ways) with a
// random-weight model, drawn and translated by the independent references
// (tools/reference/m2m_tokenizer_reference.py over m2m_reference.py). The engine must give the
// reference's source ids for each text and source language, its ids for each forced target
// language, and its texts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/tokenizer/m2m100_tokenizer.h"
#include "model/translator/translator.h"
#include "nlohmann/json.hpp"
#include "tests/testing/paths.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

constexpr double kMinMargin = 1e-3;  // as m2m100_test.cc: a near-tie may fall either way

struct Flavour {
  std::string name;
  std::string args;  // for the reference's --make
};

// Runs the reference with `args` (after --make DIR), its output in DIR's parent; true when it
// succeeded.
bool RunReference(const fs::path& dir, const std::string& args, int seed) {
  const std::string script =
      (fs::path(testing::SourceDir()) / "tools/reference/m2m_tokenizer_reference.py").string();
  const std::string command = "/usr/bin/python3 " + script + " --make " + dir.string() + " " +
                              args + " --seed " + std::to_string(seed) + " > " +
                              (dir.parent_path() / "reference.log").string() + " 2>&1";
  return std::system(command.c_str()) == 0;
}

class M2m100TextTest : public ::testing::TestWithParam<Flavour> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("m2m100_text_test." + std::to_string(getpid()) + "." + GetParam().name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    seed_ = static_cast<int>(std::random_device{}() % 100000);
    ASSERT_TRUE(RunReference(dir_ / "model",
                             GetParam().args + " --model --cases " + (dir_ / "cases.json").string(),
                             seed_))
        << "the reference failed (seed " << seed_ << ")";
    std::ifstream in(dir_ / "cases.json");
    ASSERT_TRUE(in);
    cases_ = nlohmann::json::parse(in);
    auto t = Translator::Create(
        {.model_dir = (dir_ / "model").string(), .device = "cpu", .dtype = "float32"});
    ASSERT_TRUE(t.ok()) << t.status();
    translator_ = *std::move(t);
  }
  void TearDown() override { fs::remove_all(dir_); }

  int32_t Code(const nlohmann::json& c, const char* key) const {
    return translator_->tokenizer().LanguageTokenId(c[key].get<std::string>());
  }

  fs::path dir_;
  int seed_ = 0;
  nlohmann::json cases_;
  std::unique_ptr<Translator> translator_;
};

TEST_P(M2m100TextTest, EachTextAndSourceLanguageGivesTheReferenceSourceIds) {
  for (const auto& c : cases_["cases"]) {
    auto ids = translator_->Tokenize(c["text"].get<std::string>(), /*truncate=*/false,
                                     c["source_code"].get<std::string>());
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, c["source"].get<std::vector<int32_t>>())
        << "'" << c["text"].get<std::string>() << "' in " << c["source_code"] << ", seed " << seed_;
    EXPECT_EQ((*ids)[0], Code(c, "source_code"));
  }
  // Codes come in the files' order; anything else is not one.
  const MarianTokenizer& tok = translator_->tokenizer();
  ASSERT_FALSE(tok.language_tokens().empty());
  for (size_t i = 1; i < tok.language_tokens().size(); ++i) {
    EXPECT_EQ(tok.LanguageTokenId(tok.language_tokens()[i]),
              tok.LanguageTokenId(tok.language_tokens()[i - 1]) + 1);
  }
  EXPECT_EQ(tok.LanguageTokenId("</s>"), -1);
  auto bad = translator_->Tokenize("hello", false, "</s>");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  // A text without pieces is the lone EOS, whatever its language: the empty translation.
  auto empty = translator_->Tokenize("   ", false, tok.language_tokens()[0]);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(translator_->IsEmptySource(*empty));
}

TEST_P(M2m100TextTest, EachForcedTargetLanguageGivesTheReferenceIdsAndText) {
  int compared = 0;
  for (const auto& c : cases_["cases"]) {
    DecodingOptions o;
    o.max_length = cases_["max_length"].get<int>();
    o.forced_first_token = Code(c, "target_code");
    ASSERT_GE(o.forced_first_token, 0) << c["target_code"];
    const std::vector<std::vector<int32_t>> source{c["source"].get<std::vector<int32_t>>()};
    auto got = translator_->TranslateIds(source, o);
    ASSERT_TRUE(got.ok()) << got.status();
    const std::vector<int32_t>& ids = got->at(0).hypotheses.at(0).ids;
    EXPECT_EQ(ids.at(0), o.forced_first_token);
    if (c["margin"].get<double>() < kMinMargin) continue;
    ++compared;
    EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>()) << "seed " << seed_;
    EXPECT_EQ(translator_->Detokenize(ids), c["translation"].get<std::string>())
        << "seed " << seed_;
  }
  EXPECT_GE(compared, static_cast<int>(cases_["cases"].size()) - 4) << "seed " << seed_;
}

// The same model as CTranslate2's converter lays it out (tools/reference/m2m_to_ct2.py): its
// codes found in the vocabulary, the same source ids, and under the same search rules the same
// ids and texts.
TEST_P(M2m100TextTest, ItsCTranslate2DirectoryGivesTheSameIdsAndTexts) {
  const fs::path ct2 = dir_ / "ct2";
  const std::string command =
      "/usr/bin/python3 " +
      (fs::path(testing::SourceDir()) / "tools/reference/m2m_to_ct2.py").string() +
      " --model_dir " + (dir_ / "model").string() + " --out " + ct2.string() + " > " +
      (dir_ / "convert.log").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << "conversion failed (seed " << seed_ << ")";
  auto t = Translator::Create({.model_dir = ct2.string(), .device = "cpu", .dtype = "float32"});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->tokenizer().language_tokens(), translator_->tokenizer().language_tokens());
  int compared = 0;
  for (const auto& c : cases_["cases"]) {
    auto ids =
        (*t)->Tokenize(c["text"].get<std::string>(), false, c["source_code"].get<std::string>());
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, c["source"].get<std::vector<int32_t>>()) << "seed " << seed_;
    if (c["margin"].get<double>() < kMinMargin) continue;
    ++compared;
    DecodingOptions o = (*t)->DefaultOptions();
    o.rules = SearchRules::kHuggingFace;  // the reference's, where the length limit differs
    o.beam_size = 1;
    o.min_length = 0;
    o.max_length = cases_["max_length"].get<int>();
    o.forced_first_token = (*t)->tokenizer().LanguageTokenId(c["target_code"].get<std::string>());
    auto got = (*t)->TranslateIds(std::vector<std::vector<int32_t>>{*ids}, o);
    ASSERT_TRUE(got.ok()) << got.status();
    const std::vector<int32_t>& out = got->at(0).hypotheses.at(0).ids;
    EXPECT_EQ(out, c["ids"].get<std::vector<int32_t>>()) << "seed " << seed_;
    EXPECT_EQ((*t)->Detokenize(out), c["translation"].get<std::string>()) << "seed " << seed_;
  }
  EXPECT_GE(compared, static_cast<int>(cases_["cases"].size()) - 4) << "seed " << seed_;
}

TEST_P(M2m100TextTest, AnyIdsDecodeAsTheReferenceDecodesThem) {
  for (const auto& d : cases_["decodes"]) {
    const std::vector<int32_t> ids = d["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(translator_->Detokenize(ids), d["text"].get<std::string>())
        << ::testing::PrintToString(ids) << ", seed " << seed_;
  }
}

// Files that disagree, or name no codes, are refused naming the file; the model is not served
// with ids it would misread.
TEST(M2m100TokenizerFiles, BrokenOnesAreRefusedNamingTheFile) {
  const fs::path dir_ =
      fs::temp_directory_path() / ("m2m100_tokenizer_files." + std::to_string(getpid()));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  const fs::path model = dir_ / "model";
  ASSERT_TRUE(RunReference(model, "--flavour nllb --explicit_ids", 3));
  std::ifstream in(model / "tokenizer_config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  auto load_with = [&](const nlohmann::json& changed) {
    const fs::path broken = dir_ / "broken";
    fs::remove_all(broken);
    fs::create_directories(broken);
    fs::copy_file(model / "sentencepiece.bpe.model", broken / "sentencepiece.bpe.model");
    std::ofstream(broken / "tokenizer_config.json") << changed.dump();
    return LoadM2m100Tokenizer(broken.string());
  };
  ASSERT_TRUE(load_with(config).ok());
  // The first code's id: the vocabulary's size.
  const auto& added = config["added_tokens_decoder"];
  int first_code = 1 << 30;
  for (const auto& [id, token] : added.items()) {
    if (token["content"] == "eng_Latn") first_code = std::stoi(id);
  }
  ASSERT_LT(first_code, 1 << 30);

  nlohmann::json gap = config;
  gap["added_tokens_decoder"][std::to_string(first_code + 100)] = {{"content", "ita_Latn"}};
  auto r = load_with(gap);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("tokenizer_config.json"), std::string::npos) << r.status();

  nlohmann::json clash = config;
  clash["added_tokens_decoder"]["10"] = {{"content", "ita_Latn"}};
  r = load_with(clash);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("gives to"), std::string::npos) << r.status();

  nlohmann::json none = config;
  none.erase("added_tokens_decoder");
  r = load_with(none);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("no language codes"), std::string::npos) << r.status();

  nlohmann::json not_codes = none;
  not_codes["additional_special_tokens"] = {"eng_Latn", "<extra>"};
  r = load_with(not_codes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("<extra>"), std::string::npos) << r.status();

  nlohmann::json bad_id = config;
  bad_id["added_tokens_decoder"]["x1"] = {{"content", "ita_Latn"}};
  EXPECT_EQ(load_with(bad_id).status().code(), absl::StatusCode::kInvalidArgument);

  fs::remove(dir_ / "broken" / "sentencepiece.bpe.model");
  r = LoadM2m100Tokenizer((dir_ / "broken").string());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("sentencepiece.bpe.model"), std::string::npos) << r.status();
  fs::remove_all(dir_);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, M2m100TextTest,
                         ::testing::Values(Flavour{"nllb", "--flavour nllb"},
                                           Flavour{"nllb_ids", "--flavour nllb --explicit_ids"},
                                           Flavour{"m2m100", "--flavour m2m100"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace transerve
