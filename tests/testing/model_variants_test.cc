// The model variants the repository tests serve: distinct seeds translate differently, one seed
// always writes the same bytes, a replacement swaps the files, a broken model does not load.
#include "tests/testing/model_variants.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/translator/translator.h"
#include "tests/testing/sentence_pool.h"

namespace transerve::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> GreedyTranslations(const fs::path& dir) {
  auto translator = Translator::Create({.model_dir = dir.string(), .device = "cpu"});
  EXPECT_TRUE(translator.ok()) << translator.status();
  if (!translator.ok()) return {};
  const std::vector<std::string> texts(std::begin(kSentencePool), std::end(kSentencePool));
  DecodingOptions options;
  options.beam_size = 1;
  options.max_length = 24;
  auto out = (*translator)->Translate(texts, options);
  EXPECT_TRUE(out.ok()) << out.status();
  std::vector<std::string> result;
  if (out.ok()) {
    for (const auto& t : *out) result.push_back(t.best.text);
  }
  return result;
}

ino_t Inode(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

int CountDifferent(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  int n = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += a[i] != b[i];
  return n;
}

class ModelVariantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / absl::StrCat("transerve_model_variants_", getpid());
    fs::remove_all(root_);
    fs::create_directories(root_ / "repo");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path Model(const std::string& name) const { return root_ / "repo" / name; }

  fs::path root_;
};

TEST_F(ModelVariantsTest, DistinctSeedsTranslateMostSentencesDifferently) {
  ASSERT_TRUE(WriteModelVariant(TinyFixtureModel(), Model("a"), 1).ok());
  ASSERT_TRUE(WriteModelVariant(TinyFixtureModel(), Model("b"), 2).ok());
  const auto fixture = GreedyTranslations(TinyFixtureModel());
  const auto a = GreedyTranslations(Model("a"));
  const auto b = GreedyTranslations(Model("b"));
  const int pool = static_cast<int>(std::size(kSentencePool));
  ASSERT_EQ(static_cast<int>(a.size()), pool);
  ASSERT_EQ(static_cast<int>(b.size()), pool);
  EXPECT_GT(CountDifferent(a, b), pool / 2);
  EXPECT_GT(CountDifferent(a, fixture), pool / 2);
  // The staging directory is cleaned up and nothing else lands in the repository.
  EXPECT_EQ(std::distance(fs::directory_iterator(root_ / "repo"), fs::directory_iterator()), 2);
}

TEST_F(ModelVariantsTest, OneSeedWritesTheSameFiles) {
  ASSERT_TRUE(WriteModelVariant(TinyFixtureModel(), Model("a"), 7).ok());
  ASSERT_TRUE(WriteModelVariant(TinyFixtureModel(), Model("b"), 7).ok());
  ASSERT_TRUE(WriteModelVariant(TinyFixtureModel(), Model("c"), 8).ok());
  int files = 0;
  for (const auto& entry : fs::directory_iterator(TinyFixtureModel())) {
    const fs::path name = entry.path().filename();
    EXPECT_EQ(ReadAll(Model("a") / name), ReadAll(Model("b") / name)) << name;
    ++files;
  }
  EXPECT_GE(files, 4);
  EXPECT_NE(ReadAll(Model("a") / "model.safetensors"), ReadAll(Model("c") / "model.safetensors"));
  EXPECT_NE(ReadAll(Model("a") / "model.safetensors"),
            ReadAll(TinyFixtureModel() / "model.safetensors"));
}

TEST_F(ModelVariantsTest, ReplacingAModelSwapsItsFilesInPlace) {
  ASSERT_TRUE(WriteModelVariant(TinyFixtureModel(), Model("a"), 1).ok());
  ASSERT_TRUE(WriteModelVariant(TinyFixtureModel(), Model("two"), 2).ok());
  // The directory stays (a poll never sees it missing); its files are the new ones.
  const ino_t directory_before = Inode(Model("a"));
  ASSERT_TRUE(WriteModelVariant(TinyFixtureModel(), Model("a"), 2).ok());
  EXPECT_EQ(Inode(Model("a")), directory_before);
  EXPECT_EQ(ReadAll(Model("a") / "model.safetensors"), ReadAll(Model("two") / "model.safetensors"));
  EXPECT_EQ(GreedyTranslations(Model("a")), GreedyTranslations(Model("two")));
}

TEST_F(ModelVariantsTest, ABrokenModelDoesNotLoadAndRemovalIsWhole) {
  ASSERT_TRUE(WriteModelVariant(TinyFixtureModel(), Model("a"), 1).ok());
  ASSERT_TRUE(WriteBrokenModel(TinyFixtureModel(), Model("a")).ok());
  auto broken = Translator::Create({.model_dir = Model("a").string(), .device = "cpu"});
  EXPECT_FALSE(broken.ok());
  EXPECT_TRUE(fs::exists(Model("a") / "config.json"));
  ASSERT_TRUE(RemoveModelDirectory(Model("a")).ok());
  EXPECT_FALSE(fs::exists(Model("a")));
  EXPECT_FALSE(RemoveModelDirectory(Model("a")).ok());
}

}  // namespace
}  // namespace transerve::testing
