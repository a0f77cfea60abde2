// The vocabulary shortlist (model/translator/vocabulary_map.h, DecodingOptions::
// use_vocabulary_map) on the tiny fixture with a vmap.txt written beside it: a list of every
// token changes nothing, a short list keeps every output token within the sentence's list, and
// a sentence's output does not depend on what else shares its steps.
#include "model/translator/vocabulary_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "model/translator/translator.h"
#include "tests/model/translator/fixtures.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;

class VocabularyMapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    dir_ = fs::temp_directory_path() / ("vocabulary_map_test." + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy(testing::FixtureModelDir(testing::kFixtureNames[0]), dir_ / "model",
             fs::copy_options::recursive);
    auto plain = Translator::Create(
        {.model_dir = (dir_ / "model").string(), .device = "cpu", .dtype = "float32"});
    ASSERT_TRUE(plain.ok()) << plain.status();
    plain_ = *std::move(plain);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The fixture with `vmap` as its vmap.txt.
  std::unique_ptr<Translator> WithMap(const std::string& vmap, const std::string& dtype) {
    std::ofstream(dir_ / "model" / "vmap.txt") << vmap;
    auto t = Translator::Create(
        {.model_dir = (dir_ / "model").string(), .device = "cpu", .dtype = dtype});
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }

  std::vector<std::vector<int32_t>> RandomSources(int n) {
    static const char* kWords[] = {"the",  "house", "is",   "small", "and",     "green", "we",
                                   "walk", "old",   "city", "with",  "friends", "river", "fast"};
    std::vector<std::vector<int32_t>> sources;
    for (int i = 0; i < n; ++i) {
      std::string text;
      for (int w = std::uniform_int_distribution<int>(1, 8)(rng_); w > 0; --w) {
        text += std::string(text.empty() ? "" : " ") + kWords[rng_() % std::size(kWords)];
      }
      auto ids = plain_->Tokenize(text, false);
      EXPECT_TRUE(ids.ok());
      sources.push_back(*ids);
    }
    return sources;
  }

  DecodingOptions Options(int beam, bool shortlist) const {
    DecodingOptions o = plain_->DefaultOptions();
    o.beam_size = beam;
    o.max_length = 20;
    o.use_vocabulary_map = shortlist;
    return o;
  }

  uint32_t seed_ = 0;
  std::mt19937 rng_;
  fs::path dir_;
  std::unique_ptr<Translator> plain_;
};

TEST_F(VocabularyMapTest, AListOfEveryTokenChangesNothing) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  std::string every;
  for (int64_t id = 0; id < plain_->tokenizer().target_vocab_size(); ++id) {
    every += std::string(every.empty() ? "" : " ") +
             std::string(plain_->tokenizer().TargetIdToPiece(static_cast<int32_t>(id)));
  }
  for (const std::string dtype : {"float32", "int8"}) {
    auto reference = Translator::Create(
        {.model_dir = (dir_ / "model").string(), .device = "cpu", .dtype = dtype});
    ASSERT_TRUE(reference.ok());
    auto listed = WithMap("\t" + every + "\n", dtype);
    ASSERT_NE(listed, nullptr);
    const auto sources = RandomSources(6);
    for (int beam : {1, 4}) {
      auto want = (*reference)->TranslateIds(sources, Options(beam, false));
      auto got = listed->TranslateIds(sources, Options(beam, true));
      ASSERT_TRUE(want.ok() && got.ok());
      for (size_t i = 0; i < sources.size(); ++i) {
        EXPECT_EQ((*got)[i].hypotheses[0].ids, (*want)[i].hypotheses[0].ids) << dtype << " " << i;
        EXPECT_EQ((*got)[i].hypotheses[0].score, (*want)[i].hypotheses[0].score) << dtype;
      }
    }
    fs::remove(dir_ / "model" / "vmap.txt");
  }
}

TEST_F(VocabularyMapTest, OutputStaysInTheSentencesListWhateverSharesItsSteps) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const MarianTokenizer& tok = plain_->tokenizer();
  const int64_t vocab = tok.target_vocab_size();
  auto piece = [&](int64_t id) {
    return std::string(tok.TargetIdToPiece(static_cast<int32_t>(id)));
  };
  // A few tokens for every sentence, and a few more for each source piece of the words.
  std::string vmap = "\t";
  for (int i = 0; i < 6; ++i) vmap += piece(rng_() % vocab) + " ";
  vmap += "\n";
  const auto sources = RandomSources(8);
  std::set<std::string> seen;
  for (const auto& s : sources) {
    for (int32_t id : s) {
      const std::string p(tok.SourceIdToPiece(id));
      if (!seen.insert(p).second || p == "</s>") continue;
      vmap += p + "\t";
      for (int i = 0; i < 4; ++i) vmap += piece(rng_() % vocab) + " ";
      vmap += "\n";
    }
  }
  auto listed = WithMap(vmap, "float32");
  ASSERT_NE(listed, nullptr);
  ASSERT_NE(listed->vocabulary_map(), nullptr);
  for (int beam : {1, 4}) {
    // Alone, each with its list.
    std::vector<SearchResult> alone;
    for (const auto& s : sources) {
      auto r = listed->TranslateIds(std::span(&s, 1), Options(beam, true));
      ASSERT_TRUE(r.ok()) << r.status();
      const std::vector<int32_t> allowed = listed->vocabulary_map()->Candidates(
          s, std::vector<int32_t>{plain_->special_tokens().eos, plain_->special_tokens().pad,
                                  plain_->special_tokens().decoder_start});
      for (int32_t id : (*r)[0].hypotheses[0].ids) {
        EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), id))
            << "token " << id << " is not in the sentence's list";
      }
      alone.push_back((*r)[0]);
    }
    // Together, every other sentence without its list, in one batch of steps.
    auto encoded = listed->Encode(sources);
    ASSERT_TRUE(encoded.ok());
    std::vector<std::unique_ptr<SentenceSearch>> searches;
    std::vector<SentenceSearch*> active;
    for (size_t i = 0; i < sources.size(); ++i) {
      searches.push_back(listed->StartSearch((*encoded)[i], Options(beam, i % 2 == 0), sources[i]));
      active.push_back(searches.back().get());
    }
    while (!active.empty()) {
      ASSERT_TRUE(listed->Step(active).ok());
      std::erase_if(active, [](SentenceSearch* s) { return s->done(); });
    }
    for (size_t i = 0; i < sources.size(); ++i) {
      const SearchResult r = searches[i]->TakeResult();
      if (i % 2 == 0) {
        EXPECT_EQ(r.hypotheses[0].ids, alone[i].hypotheses[0].ids) << "beam " << beam << " " << i;
        EXPECT_EQ(r.hypotheses[0].score, alone[i].hypotheses[0].score);
      } else {
        auto full = plain_->TranslateIds(std::span(&sources[i], 1), Options(beam, false));
        ASSERT_TRUE(full.ok());
        EXPECT_EQ(r.hypotheses[0].ids, (*full)[0].hypotheses[0].ids) << "beam " << beam << " " << i;
      }
    }
  }
}

TEST_F(VocabularyMapTest, ReadsNgramsAndRefusesWhatItCannotUse) {
  const MarianTokenizer& tok = plain_->tokenizer();
  const auto sources = RandomSources(1);
  ASSERT_GE(sources[0].size(), 2u);
  const std::string a(tok.SourceIdToPiece(sources[0][0]));
  const std::string b(tok.SourceIdToPiece(sources[0][1]));
  const std::string t1(tok.TargetIdToPiece(5)), t2(tok.TargetIdToPiece(6)),
      t3(tok.TargetIdToPiece(7));
  auto map = VocabularyMap::Parse(a + "\t" + t1 + "\n" + a + " " + b + "\t" + t2 +
                                      " no-such-piece\r\n" + "zz-never zz-seen\t" + t3 + "\n",
                                  "vmap.txt", tok);
  ASSERT_TRUE(map.ok()) << map.status();
  const std::vector<int32_t> got = map->Candidates(sources[0], std::vector<int32_t>{});
  // The unigram's and the bigram's targets, the unknown piece as <unk>, the specials; not the
  // rule whose n-gram is not in the source.
  for (int32_t id : {5, 6, tok.unk_id(), tok.eos_id()}) {
    EXPECT_TRUE(std::binary_search(got.begin(), got.end(), id)) << id;
  }
  EXPECT_FALSE(std::binary_search(got.begin(), got.end(), 7));
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
  EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end());
  auto bad = VocabularyMap::Parse("ok\tx\nno tab here\n", "vmap.txt", tok);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status();
  // A model without vmap.txt refuses the option rather than ignoring it.
  const absl::Status refused = plain_->ValidateOptions(Options(1, true));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("vmap.txt"), std::string::npos) << refused;
}

}  // namespace
}  // namespace transerve
