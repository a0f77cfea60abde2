// Argos Translate packages: an unpacked package folder is a model directory (its model/ is a
// CTranslate2 directory), and a .argosmodel archive unpacks into one; hostile archives (names
// that leave the folder, bombs, damaged or truncated files, no package inside) are refused with
// the reason and leave nothing behind.
#include "model/translator/argos_package.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zip.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_replace.h"
#include "model/translator/model_directory.h"
#include "model/translator/translator.h"
#include "nlohmann/json.hpp"
#include "tests/testing/paths.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string RandomBytes(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(byte(rng));
  return s;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// Writes a zip holding `files` (name -> bytes, in name order), compressed where `deflate`.
void WriteZip(const fs::path& path, const std::map<std::string, std::string>& files,
              bool deflate = true) {
  int error = 0;
  zip_t* zip = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  ASSERT_NE(zip, nullptr) << error;
  for (const auto& [name, bytes] : files) {
    zip_source_t* source = zip_source_buffer(zip, bytes.data(), bytes.size(), 0);
    ASSERT_NE(source, nullptr);
    const zip_int64_t index = zip_file_add(zip, name.c_str(), source, ZIP_FL_ENC_UTF_8);
    ASSERT_GE(index, 0) << name << ": " << zip_strerror(zip);
    zip_set_file_compression(zip, static_cast<zip_uint64_t>(index),
                             deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  ASSERT_EQ(zip_close(zip), 0);
}

class ArgosPackageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("argos_package_test." + std::to_string(getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A package as argospm writes one: one folder with metadata.json, model/ and the
  // SentencePiece model, plus files the engine does not read (stanza/).
  std::map<std::string, std::string> PackageFiles(const std::string& top) {
    std::map<std::string, std::string> files;
    files[top + "metadata.json"] = R"({"from_code": "en", "to_code": "de"})";
    files[top + "model/model.bin"] = RandomBytes(70'000, rng_);
    files[top + "model/shared_vocabulary.json"] = RandomBytes(3'000, rng_);
    files[top + "sentencepiece.model"] = RandomBytes(5'000, rng_);
    files[top + "stanza/en/tokenize/ewt.pt"] = RandomBytes(9'000, rng_);
    return files;
  }

  void ExpectRefused(const std::map<std::string, std::string>& files, const std::string& why,
                     const UnpackLimits& limits = {}) {
    const fs::path archive = dir_ / "hostile.argosmodel";
    WriteZip(archive, files);
    const fs::path into = dir_ / "into";
    auto got = UnpackArgosArchive(archive.string(), into.string(), limits);
    ASSERT_FALSE(got.ok()) << why;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(why));
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(archive.string()));
    EXPECT_FALSE(fs::exists(into)) << why << ": something was left behind";
    EXPECT_FALSE(fs::exists(dir_ / "evil")) << why << ": written outside the folder";
  }

  fs::path dir_;
  std::mt19937 rng_{std::random_device{}()};
};

TEST_F(ArgosPackageTest, AnArchiveUnpacksByteForByteIntoItsPackageFolder) {
  for (const bool deflate : {true, false}) {
    const auto files = PackageFiles("translate-en_de-1_0/");
    const fs::path archive = dir_ / "translate-en_de-1_0.argosmodel";
    WriteZip(archive, files, deflate);
    EXPECT_TRUE(IsArgosArchive(archive.string()));
    const fs::path into = dir_ / (deflate ? "deflated" : "stored");
    auto folder = UnpackArgosArchive(archive.string(), into.string());
    ASSERT_TRUE(folder.ok()) << folder.status();
    EXPECT_EQ(fs::path(*folder), into / "translate-en_de-1_0");
    for (const auto& [name, bytes] : files) EXPECT_EQ(ReadFile(into / name), bytes) << name;
    EXPECT_TRUE(IsArgosPackage(*folder));
    EXPECT_EQ(fs::path(WeightsFolder(*folder)), fs::path(*folder) / "model");
  }
}

TEST_F(ArgosPackageTest, APackageAtTheArchivesTopIsFoundToo) {
  const auto files = PackageFiles("");
  WriteZip(dir_ / "flat.argosmodel", files);
  auto folder = UnpackArgosArchive((dir_ / "flat.argosmodel").string(), (dir_ / "f").string());
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(fs::path(*folder), dir_ / "f");
}

TEST_F(ArgosPackageTest, HostileArchivesAreRefusedAndLeaveNothingBehind) {
  auto with = [this](const std::string& name) {
    auto files = PackageFiles("p/");
    files[name] = RandomBytes(100, rng_);
    return files;
  };
  ExpectRefused(with("../evil"), "would be written outside the package");
  ExpectRefused(with("p/../../evil"), "would be written outside the package");
  ExpectRefused(with("/tmp/evil"), "would be written outside the package");
  ExpectRefused(with("p\\..\\..\\evil"), "would be written outside the package");
  ExpectRefused(with("p//x"), "would be written outside the package");
  ExpectRefused(PackageFiles("p/"), "entries (at most 3)", {.max_entries = 3});
  ExpectRefused(PackageFiles("p/"), "unpacks to more than 50000 bytes",
                {.max_total_bytes = 50'000});
  auto no_metadata = PackageFiles("p/");
  no_metadata.erase("p/metadata.json");
  ExpectRefused(no_metadata, "no Argos package inside");
  auto two = PackageFiles("a/");
  two.merge(PackageFiles("b/"));
  ExpectRefused(two, "more than one package folder inside");
}

TEST_F(ArgosPackageTest, DamagedAndTruncatedArchivesAreRefused) {
  WriteZip(dir_ / "good.argosmodel", PackageFiles("p/"));
  const std::string good = ReadFile(dir_ / "good.argosmodel");
  std::uniform_int_distribution<size_t> cut(1, good.size() - 1);
  std::vector<std::pair<std::string, std::string>> cases = {
      {"random bytes", RandomBytes(4'000, rng_)}, {"empty", ""}};
  for (int i = 0; i < 8; ++i) cases.push_back({"truncated", good.substr(0, cut(rng_))});
  for (int i = 0; i < 8; ++i) {
    std::string flipped = good;
    // A flipped byte inside the compressed data or the headers, never both ends' signatures.
    std::uniform_int_distribution<size_t> at(40, good.size() / 2);
    flipped[at(rng_)] ^= static_cast<char>(1 + rng_() % 255);
    cases.push_back({"damaged", flipped});
  }
  for (const auto& [what, bytes] : cases) {
    WriteFile(dir_ / "bad.argosmodel", bytes);
    const fs::path into = dir_ / "into";
    auto got = UnpackArgosArchive((dir_ / "bad.argosmodel").string(), into.string());
    if (got.ok()) {
      // A flipped byte in a part libzip does not check (a file name's letter, a time stamp)
      // still gives a package: then its files are what the archive holds, nothing more.
      EXPECT_EQ(what, "damaged");
      EXPECT_TRUE(fs::exists(fs::path(*got) / "metadata.json"));
      fs::remove_all(into);
      continue;
    }
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("bad.argosmodel")) << what;
    EXPECT_FALSE(fs::exists(into)) << what << ": something was left behind";
  }
}

TEST_F(ArgosPackageTest, AnExistingFolderIsNeverOverwritten) {
  WriteZip(dir_ / "p.argosmodel", PackageFiles("p/"));
  fs::create_directories(dir_ / "into");
  WriteFile(dir_ / "into" / "keep", "mine");
  auto got = UnpackArgosArchive((dir_ / "p.argosmodel").string(), (dir_ / "into").string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(ReadFile(dir_ / "into" / "keep"), "mine");
}

// A package folder around a CTranslate2 fixture is a model directory: found, its weights read
// from model/, and the fixture's reference ids.
TEST_F(ArgosPackageTest, APackageFolderTranslatesAsItsModel) {
  const fs::path fixture = fs::path(testing::SourceDir()) / "tests/fixtures/ct2/marian-like";
  const fs::path package = dir_ / "translate-xx_yy-1_0";
  fs::create_directories(package);
  fs::copy(fixture / "model", package / "model", fs::copy_options::recursive);
  WriteFile(package / "metadata.json", R"({"from_code": "en", "to_code": "de"})");
  EXPECT_TRUE(IsArgosPackage(package.string()));
  EXPECT_TRUE(HoldsModel(package.string()));
  EXPECT_TRUE(IsCt2Directory(package.string()));
  EXPECT_EQ(EstimateWeightBytes(package.string()),
            EstimateWeightBytes((fixture / "model").string()));
  EXPECT_GT(EstimateWeightBytes(package.string()), 0);
  EXPECT_FALSE(IsArgosPackage((fixture / "model").string()));

  std::ifstream in(fixture / "expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  auto t = Translator::Create({.model_dir = package.string(),
                               .device = "cpu",
                               .dtype = "float32",
                               .with_tokenizer = false});
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<std::vector<int32_t>> sources;
  for (const auto& c : expected["cases"])
    sources.push_back(c["source"].get<std::vector<int32_t>>());
  DecodingOptions o;
  o.beam_size = 1;
  o.max_length = expected["max_length"].get<int>();
  auto got = (*t)->TranslateIds(sources, o);
  ASSERT_TRUE(got.ok()) << got.status();
  for (size_t i = 0; i < sources.size(); ++i) {
    EXPECT_EQ(got->at(i).hypotheses.at(0).ids,
              expected["cases"][i]["greedy"]["ids"].get<std::vector<int32_t>>())
        << "case " << i;
  }
  // Without its SentencePiece model the tokenizer is refused with the reason.
  auto with_tokenizer =
      Translator::Create({.model_dir = package.string(), .device = "cpu", .dtype = "float32"});
  ASSERT_FALSE(with_tokenizer.ok());
  EXPECT_THAT(std::string(with_tokenizer.status().message()), HasSubstr("no SentencePiece model"));
}

// CTranslate2's replace_unknowns, which Argos Translate asks for: each generated unknown token
// becomes the source piece its alignment row weighs most. Random ids and alignments: the answer
// is the piece at the row's argmax, the first of equals, and the text decodes it in place.
TEST_F(ArgosPackageTest, UnknownTokensBecomeTheSourcePieceTheyAttendMost) {
  const fs::path fixtures = fs::path(testing::SourceDir()) / "tests/fixtures";
  const fs::path package = dir_ / "translate-xx_yy-1_0";
  fs::create_directories(package);
  fs::copy(fixtures / "ct2/marian-like/model", package / "model", fs::copy_options::recursive);
  fs::copy(fixtures / "tiny-marian/model/source.spm", package / "sentencepiece.model");
  WriteFile(package / "metadata.json", R"({"from_code": "en", "to_code": "de"})");
  auto t = Translator::Create({.model_dir = package.string(), .device = "cpu", .dtype = "float32"});
  ASSERT_TRUE(t.ok()) << t.status();
  const Translator& translator = **t;
  EXPECT_TRUE(translator.DefaultOptions().replace_unknowns);
  EXPECT_TRUE(translator.DefaultOptions().records_alignment());
  EXPECT_FALSE(translator.DefaultOptions().return_alignment);  // recorded, not returned
  const MarianTokenizer& tok = translator.tokenizer();
  const int32_t unk = tok.unk_id();
  const SentencePieceModel& spm = tok.source_spm();

  for (int round = 0; round < 20; ++round) {
    // A source of random pieces, and a hypothesis of random ids with unknowns among them.
    std::string text;
    std::uniform_int_distribution<int> word_count(1, 12), piece(3, spm.piece_size() - 1);
    for (int w = word_count(rng_); w > 0; --w) {
      text += absl::StrReplaceAll(spm.IdToPiece(piece(rng_)), {{"\u2581", " "}});
    }
    text += " x";  // never blank
    const std::vector<std::string> pieces = spm.EncodeToPieces(text);
    EXPECT_EQ(tok.SourcePieces(text), pieces);
    auto source = translator.Tokenize(text, false);
    ASSERT_TRUE(source.ok()) << source.status();
    const size_t source_length = source->size();
    std::uniform_int_distribution<int> target(3, 80), length(1, 10);
    std::bernoulli_distribution is_unknown(0.4);
    std::vector<int32_t> ids;
    for (int i = length(rng_); i > 0; --i) ids.push_back(is_unknown(rng_) ? unk : target(rng_));
    ids.push_back(unk);
    std::uniform_real_distribution<float> weight(0.0f, 1.0f);
    std::vector<float> alignment(ids.size() * source_length);
    for (float& a : alignment) a = weight(rng_);
    if (round % 2 == 1) alignment[(ids.size() - 1) * source_length] = 2.0f;  // the first wins

    const std::vector<std::string> got = translator.UnknownReplacements(ids, alignment, text);
    ASSERT_EQ(got.size(), ids.size());
    std::vector<std::string> want_pieces;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] != unk) {
        EXPECT_EQ(got[i], "") << i;
        want_pieces.emplace_back(tok.TargetIdToPiece(ids[i]));
        continue;
      }
      size_t best = 0;
      for (size_t p = 1; p < pieces.size(); ++p) {
        if (alignment[i * source_length + p] > alignment[i * source_length + best]) best = p;
      }
      EXPECT_EQ(got[i], pieces[best]) << "position " << i << " of " << text;
      want_pieces.push_back(pieces[best]);
    }
    std::string want = spm.DecodePieces(want_pieces);
    want.erase(0, want.find_first_not_of(' '));
    want.erase(want.find_last_not_of(' ') + 1);
    EXPECT_EQ(translator.Detokenize(ids, got), want);
    // Nothing to replace, or rows that do not fit the ids: nothing replaced.
    std::vector<int32_t> known = ids;
    std::replace(known.begin(), known.end(), unk, 5);
    EXPECT_TRUE(translator.UnknownReplacements(known, alignment, text).empty());
    if (ids.size() > 1) {
      EXPECT_TRUE(
          translator.UnknownReplacements(ids, {alignment.data(), alignment.size() - 1}, text)
              .empty());
    }
  }
  // Only an Argos package replaces: the same CTranslate2 directory on its own does not.
  auto plain = Translator::Create({.model_dir = (package / "model").string(),
                                   .device = "cpu",
                                   .dtype = "float32",
                                   .with_tokenizer = false});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE((*plain)->DefaultOptions().replace_unknowns);
}

}  // namespace
}  // namespace transerve
