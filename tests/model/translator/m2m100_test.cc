// M2M-100 / NLLB-200 checkpoints (model_type m2m_100) as the hub lays them out: a random-weight
// checkpoint drawn anew each run by the independent reference (tools/reference/m2m_reference.py),
// which also translates random sources; the engine must give its ids, greedy in one batch whose
// sentences force different target languages, and beam 4.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "model/translator/translator.h"
#include "nlohmann/json.hpp"
#include "tests/testing/paths.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

// A near-tie (the chosen token ahead of the next by less than this) may fall either way under
// float32 rounding: such a case is not compared.
constexpr double kMinMargin = 1e-3;

class M2m100Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("m2m100_test." + std::to_string(getpid())));
    fs::remove_all(*dir_);
    seed_ = static_cast<int>(std::random_device{}() % 100000);
    const std::string script =
        (fs::path(testing::SourceDir()) / "tools/reference/m2m_reference.py").string();
    const std::string model = (*dir_ / "model").string();
    const std::string command =
        "/usr/bin/python3 " + script + " --make " + model + " --model_dir " + model + " --cases " +
        (*dir_ / "cases.json").string() + " --seed " + std::to_string(seed_) + " > " +
        (*dir_ / "reference.log").string() + " 2>&1";
    fs::create_directories(*dir_);
    reference_status_ = std::system(command.c_str());
    std::ifstream in(*dir_ / "cases.json");
    if (in) cases_ = new nlohmann::json(nlohmann::json::parse(in));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete cases_;
  }
  void SetUp() override {
    ASSERT_EQ(reference_status_, 0) << "the reference failed (seed " << seed_ << ")";
    ASSERT_NE(cases_, nullptr);
    auto t = Translator::Create({.model_dir = (*dir_ / "model").string(),
                                 .device = "cpu",
                                 .dtype = "float32",
                                 .with_tokenizer = false});
    ASSERT_TRUE(t.ok()) << t.status();
    translator_ = *std::move(t);
  }

  static fs::path* dir_;
  static int seed_;
  static int reference_status_;
  static nlohmann::json* cases_;
  std::unique_ptr<Translator> translator_;
};

fs::path* M2m100Test::dir_ = nullptr;
int M2m100Test::seed_ = 0;
int M2m100Test::reference_status_ = -1;
nlohmann::json* M2m100Test::cases_ = nullptr;

TEST_F(M2m100Test, LoadsAsTheM2m100Architecture) {
  const MarianModel& m = translator_->model();
  EXPECT_EQ(m.config.family, "m2m_100 transformer");
  EXPECT_TRUE(m.transformer.encoder_pre_norm);
  EXPECT_TRUE(m.transformer.decoder_pre_norm);
  EXPECT_TRUE(m.weights.encoder_final_norm.present());
  EXPECT_TRUE(m.weights.decoder_final_norm.present());
  EXPECT_EQ(translator_->special_tokens().decoder_start, 2);  // the EOS
}

TEST_F(M2m100Test, GreedyInOneBatchOfMixedTargetLanguagesGivesTheReferenceIds) {
  const auto& cases = (*cases_)["cases"];
  std::vector<std::vector<int32_t>> sources;
  for (const auto& c : cases) sources.push_back(c["source"].get<std::vector<int32_t>>());
  auto encoded = translator_->Encode(sources);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  std::vector<std::unique_ptr<SentenceSearch>> searches;
  for (size_t i = 0; i < cases.size(); ++i) {
    DecodingOptions o;
    o.max_length = (*cases_)["max_length"].get<int>();
    o.forced_first_token = cases[i]["target_code"].get<int32_t>();
    ASSERT_TRUE(translator_->ValidateOptions(o).ok());
    searches.push_back(translator_->StartSearch((*encoded)[i], o));
  }
  for (;;) {
    std::vector<SentenceSearch*> active;
    for (auto& s : searches) {
      if (!s->done()) active.push_back(s.get());
    }
    if (active.empty()) break;
    ASSERT_TRUE(translator_->Step(active).ok());
  }
  int compared = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> got = searches[i]->TakeResult().hypotheses.at(0).ids;
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got[0], cases[i]["target_code"].get<int32_t>()) << "case " << i;
    if (cases[i]["greedy_margin"].get<double>() < kMinMargin) continue;
    ++compared;
    EXPECT_EQ(got, cases[i]["greedy"].get<std::vector<int32_t>>())
        << "case " << i << ", seed " << seed_;
  }
  EXPECT_GE(compared, static_cast<int>(cases.size()) - 3) << "seed " << seed_;
}

TEST_F(M2m100Test, BeamFourGivesTheReferenceIds) {
  const auto& cases = (*cases_)["cases"];
  int compared = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i]["greedy_margin"].get<double>() < kMinMargin) continue;
    ++compared;
    DecodingOptions o;
    o.beam_size = 4;
    o.max_length = (*cases_)["max_length"].get<int>();
    o.forced_first_token = cases[i]["target_code"].get<int32_t>();
    const std::vector<std::vector<int32_t>> source{cases[i]["source"].get<std::vector<int32_t>>()};
    auto got = translator_->TranslateIds(source, o);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->at(0).hypotheses.at(0).ids, cases[i]["beam4"].get<std::vector<int32_t>>())
        << "case " << i << ", seed " << seed_;
  }
  EXPECT_GT(compared, 0);
}

// Without the tokenizer's files, asking for text is refused naming the missing file.
TEST_F(M2m100Test, TextWithoutTheTokenizerFilesIsRefusedNamingTheFile) {
  auto t = Translator::Create(
      {.model_dir = (*dir_ / "model").string(), .device = "cpu", .dtype = "float32"});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("sentencepiece.bpe.model"), std::string::npos) << t.status();
}

TEST_F(M2m100Test, AForcedTokenOutsideTheVocabularyIsRefused) {
  DecodingOptions o;
  o.forced_first_token = static_cast<int32_t>(translator_->model().transformer.target_vocab_size);
  EXPECT_FALSE(translator_->ValidateOptions(o).ok());
  o.forced_first_token = translator_->special_tokens().pad;
  EXPECT_FALSE(translator_->ValidateOptions(o).ok());
}

}  // namespace
}  // namespace transerve
