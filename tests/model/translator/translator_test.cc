// The Translator facade: text round trip, validation errors, length limits, device choice.
#include "model/translator/translator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

class TranslatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // float32: the greedy ids are the PyTorch reference's (auto may pick int8).
    auto t = Translator::Create({.model_dir = testing::FixtureModelDir(testing::kFixtureNames[0]),
                                 .device = "cpu",
                                 .dtype = "float32"});
    ASSERT_TRUE(t.ok()) << t.status();
    translator_ = *std::move(t);
    expected_ = testing::LoadExpected(testing::kFixtureNames[0]);
  }
  std::unique_ptr<Translator> translator_;
  nlohmann::json expected_;
};

TEST_F(TranslatorTest, TextTranslationDetokenizesTheGreedyIdsInInputOrder) {
  std::vector<std::string> texts;
  for (size_t i = 0; i < 9; ++i) texts.push_back(expected_["cases"][i]["text"]);
  DecodingOptions o;
  o.beam_size = 1;
  o.max_length = expected_["max_length"].get<int>();
  auto out = translator_->Translate(texts, o, /*max_batch_size=*/4);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = expected_["cases"][i]["greedy"]["ids"].get<std::vector<int32_t>>();
    // The fixture's empty text: the text API answers it with the empty translation (below).
    if (texts[i].empty()) ids = {translator_->special_tokens().eos};
    EXPECT_EQ((*out)[i].best.ids, ids);
    EXPECT_EQ((*out)[i].best.text, translator_->Detokenize(ids));
  }
}

// The model itself would answer EOS alone with some sentence (TranslateIds); the text API
// answers an empty or blank text with the empty text, beside normal texts that are translated.
TEST_F(TranslatorTest, EmptyAndBlankTextsTranslateToTheEmptyText) {
  const int32_t eos = translator_->special_tokens().eos;
  DecodingOptions o;
  o.beam_size = 2;
  o.max_length = 12;
  const std::vector<int32_t> eos_alone = {eos};
  auto model_says = translator_->TranslateIds(std::span(&eos_alone, 1), o);
  ASSERT_TRUE(model_says.ok());
  ASSERT_NE((*model_says)[0].hypotheses[0].ids, eos_alone) << "the test needs a model that talks";
  const std::vector<std::string> texts = {"", "x y z", " ", "\t\n"};
  auto out = translator_->Translate(texts, o, /*max_batch_size=*/2);
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i : {0u, 2u, 3u}) {
    EXPECT_EQ((*out)[i].best.text, "");
    EXPECT_EQ((*out)[i].best.ids, eos_alone);
    EXPECT_EQ((*out)[i].best.score, 0.0f);
    EXPECT_TRUE(translator_->IsEmptySource(*translator_->Tokenize(texts[i], false)));
  }
  const auto alone = translator_->Translate(std::span(&texts[1], 1), o);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ((*out)[1].best.ids, (*alone)[0].best.ids);
  EXPECT_FALSE(translator_->IsEmptySource(*translator_->Tokenize("x", false)));
  o.return_alignment = true;
  EXPECT_EQ(translator_->EmptySourceResult(o).hypotheses[0].alignment, std::vector<float>{1.0f});
}

TEST_F(TranslatorTest, OverlongSourceIsRejectedUnlessTruncationIsAsked) {
  const int64_t limit = translator_->model().config.max_position_embeddings;
  std::string text;
  for (int64_t i = 0; i < limit * 2; ++i) text += "word" + std::to_string(i % 97) + " ";
  auto rejected = translator_->Tokenize(text, /*truncate=*/false);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rejected.status().message().find("longer than"), std::string::npos);
  auto truncated = translator_->Tokenize(text, /*truncate=*/true);
  ASSERT_TRUE(truncated.ok());
  EXPECT_EQ(static_cast<int64_t>(truncated->size()), limit);
  EXPECT_EQ(truncated->back(), translator_->special_tokens().eos);
}

TEST_F(TranslatorTest, InvalidOptionsAreRejectedWithTheirName) {
  DecodingOptions o;
  o.beam_size = 0;
  EXPECT_NE(translator_->ValidateOptions(o).message().find("beam_size"), std::string::npos);
  o = DecodingOptions{};
  o.max_length = static_cast<int>(translator_->model().config.max_position_embeddings) + 1;
  EXPECT_NE(translator_->ValidateOptions(o).message().find("max_length"), std::string::npos);
  o = DecodingOptions{};
  o.max_length = 10;
  o.min_length = 11;
  EXPECT_NE(translator_->ValidateOptions(o).message().find("min_length"), std::string::npos);
  o = DecodingOptions{};
  o.beam_size = 2;
  o.num_hypotheses = 3;
  EXPECT_NE(translator_->ValidateOptions(o).message().find("num_hypotheses"), std::string::npos);
}

TEST_F(TranslatorTest, ForcedLengthGeneratesExactlyThatManyTokensEndingWithEos) {
  const std::vector<std::vector<int32_t>> sources{
      expected_["cases"][3]["source_ids"].get<std::vector<int32_t>>()};
  for (int beam : {1, 3}) {
    DecodingOptions o;
    o.beam_size = beam;
    o.min_length = o.max_length = 13;
    auto r = translator_->TranslateIds(sources, o);
    ASSERT_TRUE(r.ok());
    const auto& ids = (*r)[0].hypotheses[0].ids;
    ASSERT_EQ(ids.size(), 13u) << "beam " << beam;
    EXPECT_EQ(ids.back(), translator_->special_tokens().eos);
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      EXPECT_NE(ids[i], translator_->special_tokens().eos);
      EXPECT_NE(ids[i], translator_->special_tokens().pad);
    }
  }
}

TEST_F(TranslatorTest, KvCacheIsReturnedWhenSearchesEnd) {
  const std::vector<std::vector<int32_t>> sources{
      expected_["cases"][5]["source_ids"].get<std::vector<int32_t>>(),
      expected_["cases"][6]["source_ids"].get<std::vector<int32_t>>()};
  DecodingOptions o;
  o.beam_size = 4;
  o.max_length = 40;
  ASSERT_TRUE(translator_->TranslateIds(sources, o).ok());
  EXPECT_EQ(translator_->kv_pool().blocks_in_use(), 0);
}

// The headroom a scheduler reserves covers what a search takes in its next block's worth of
// steps; greedy takes exactly it (one block per layer).
TEST_F(TranslatorTest, KvHeadroomCoversABlockOfStepsFromTheStart) {
  const std::vector<std::vector<int32_t>> source{
      expected_["cases"][5]["source_ids"].get<std::vector<int32_t>>()};
  for (int beam : {1, 4}) {
    DecodingOptions o;
    o.beam_size = beam;
    o.min_length = kKvBlockPositions + 1;  // still running after the window
    o.max_length = 2 * kKvBlockPositions;
    auto encoded = translator_->Encode(source);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    std::unique_ptr<SentenceSearch> search = translator_->StartSearch((*encoded)[0], o);
    SentenceSearch* const searches[] = {search.get()};
    for (int step = 0; step < kKvBlockPositions; ++step) {
      ASSERT_TRUE(translator_->Step(searches).ok());
    }
    ASSERT_FALSE(search->done());
    const int64_t headroom = translator_->KvHeadroomBlocks(o);
    EXPECT_LE(translator_->kv_pool().blocks_in_use(), headroom) << "beam " << beam;
    if (beam == 1) EXPECT_EQ(translator_->kv_pool().blocks_in_use(), headroom);
  }
}

TEST(TranslatorCreate, KvBudgetIsWholeBlocksAndAtLeastOne) {
  const std::string dir = testing::FixtureModelDir(testing::kFixtureNames[0]);
  auto unbounded = Translator::Create({.model_dir = dir, .device = "cpu"});
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  EXPECT_EQ((*unbounded)->KvCapacityBlocks(), 0);
  const int64_t d_model = (*unbounded)->model().config.d_model;
  const int64_t block_bytes = 2 * kKvBlockPositions * d_model * sizeof(float);
  // Less than a block still gets one; a partial block is not counted.
  for (const auto& [bytes, blocks] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {block_bytes, 1}, {7 * block_bytes + block_bytes - 1, 7}}) {
    auto t = Translator::Create({.model_dir = dir, .device = "cpu", .kv_cache_max_bytes = bytes});
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ((*t)->KvCapacityBlocks(), blocks) << bytes << " bytes";
    EXPECT_EQ((*t)->kv_pool().max_blocks(), blocks) << bytes << " bytes";
  }
}

// The server tokenizes on its gRPC threads while the scheduler steps: the text methods read
// only what Create fixed, so several threads at once, during steps, get what one thread gets.
TEST_F(TranslatorTest, TextMethodsAnswerTheSameFromManyThreadsWhileSearchesStep) {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> want_ids;
  std::vector<std::string> want_texts;
  for (size_t i = 0; i < 9; ++i) {
    texts.push_back(expected_["cases"][i]["text"]);
    auto ids = translator_->Tokenize(texts.back(), /*truncate=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status();
    want_ids.push_back(*ids);
    want_texts.push_back(translator_->Detokenize(*ids));
  }
  const DecodingOptions defaults = translator_->DefaultOptions();
  DecodingOptions o;
  o.beam_size = 2;
  o.max_length = 16;
  const auto alone = translator_->TranslateIds(want_ids, o);
  ASSERT_TRUE(alone.ok()) << alone.status();

  constexpr int kReaders = 3, kRounds = 20;
  std::atomic<int> mismatches{0}, readers_done{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&] {
      for (int round = 0; round < kRounds; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          auto ids = translator_->Tokenize(texts[i], /*truncate=*/false);
          if (!ids.ok() || *ids != want_ids[i]) ++mismatches;
          if (translator_->Detokenize(want_ids[i]) != want_texts[i]) ++mismatches;
          if (translator_->IsEmptySource(want_ids[i]) != (want_ids[i].size() == 1)) ++mismatches;
        }
        if (!translator_->ValidateOptions(defaults).ok()) ++mismatches;
        if (translator_->DefaultOptions().max_length != defaults.max_length) ++mismatches;
      }
      ++readers_done;
    });
  }
  // Steps for as long as the readers read, at least once.
  bool same = true;
  do {
    auto during = translator_->TranslateIds(want_ids, o);
    ASSERT_TRUE(during.ok()) << during.status();
    for (size_t i = 0; i < want_ids.size(); ++i) {
      same = same && (*during)[i].hypotheses[0].ids == (*alone)[i].hypotheses[0].ids;
    }
  } while (readers_done.load() < kReaders);
  for (std::thread& reader : readers) reader.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_TRUE(same) << "translations changed while other threads tokenized";
}

TEST(TranslatorCreate, UnknownDeviceAndMissingModelAreClearErrors) {
  auto bad_device = Translator::Create(
      {.model_dir = testing::FixtureModelDir(testing::kFixtureNames[0]), .device = "tpu"});
  ASSERT_FALSE(bad_device.ok());
  EXPECT_NE(bad_device.status().message().find("tpu"), std::string::npos);
  auto missing = Translator::Create({.model_dir = "/nonexistent/model", .device = "cpu"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/model"), std::string::npos);
}

}  // namespace
}  // namespace transerve
