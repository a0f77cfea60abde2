// Unit tests of SentencePieceModel on hand-built ModelProtos (exact scores, so the expected pieces
// are known) and on a model trained with spm_train (for file errors and corruption). The
// hand-built models are also run through spm_encode / spm_decode to check the expectations.
#include "model/tokenizer/sentencepiece_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tests/model/tokenizer/oracle_text.h"
#include "tests/model/tokenizer/spm_model_builder.h"
#include "tests/model/tokenizer/spm_test_util.h"

namespace transerve::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Type = spm::ModelProto::SentencePiece;

constexpr char kSp[] = "\xE2\x96\x81";  // U+2581
std::string Sp(const std::string& s) { return kSp + s; }

// A small English model with known scores.
spm::ModelProto WordsProto() {
  return MakeModelProto({
      {Sp("hello"), -1},
      {Sp("world"), -1.5},
      {Sp("he"), -2.5},
      {"llo", -2},
      {kSp, -3},
      {"h", -4},
      {"e", -4},
      {"l", -4},
      {"o", -4},
      {"w", -4},
      {"r", -4},
      {"d", -4},
      {"a", -4},
      {"b", -4},
  });
}

std::unique_ptr<SentencePieceModel> Load(const spm::ModelProto& proto) {
  auto model = SentencePieceModel::LoadFromSerialized(proto.SerializeAsString());
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

TEST(SentencePieceModel, AddsDummyPrefixAndEscapesSpaces) {
  auto model = Load(WordsProto());
  EXPECT_THAT(model->EncodeToPieces("hello world"), ElementsAre(Sp("hello"), Sp("world")));
}

TEST(SentencePieceModel, TrimsAndCollapsesWhitespace) {
  auto model = Load(WordsProto());
  EXPECT_THAT(model->EncodeToPieces("   hello     world  "), ElementsAre(Sp("hello"), Sp("world")));
  EXPECT_TRUE(model->EncodeToPieces("    ").empty());
  EXPECT_TRUE(model->EncodeToPieces("").empty());
}

TEST(SentencePieceModel, NoDummyPrefixWhenDisabled) {
  spm::ModelProto proto = WordsProto();
  proto.mutable_normalizer_spec()->set_add_dummy_prefix(false);
  auto model = Load(proto);
  EXPECT_THAT(model->EncodeToPieces("hello world"), ElementsAre("h", "e", "llo", Sp("world")));
}

TEST(SentencePieceModel, KeepsWhitespaceWhenNotRemovingExtraWhitespace) {
  spm::ModelProto proto = WordsProto();
  proto.mutable_normalizer_spec()->set_remove_extra_whitespaces(false);
  auto model = Load(proto);
  EXPECT_THAT(model->EncodeToPieces("hello  world "),
              ElementsAre(Sp("hello"), kSp, Sp("world"), kSp));
}

TEST(SentencePieceModel, WhitespaceAsSuffix) {
  spm::ModelProto proto = MakeModelProto(
      {{"hello" + std::string(kSp), -1}, {"world" + std::string(kSp), -1}, {"h", -5}});
  proto.mutable_trainer_spec()->set_treat_whitespace_as_suffix(true);
  auto model = Load(proto);
  EXPECT_THAT(model->EncodeToPieces(" hello  world"),
              ElementsAre("hello" + std::string(kSp), "world" + std::string(kSp)));
  EXPECT_EQ(model->DecodePieces({"hello" + std::string(kSp), "world" + std::string(kSp)}),
            "hello world ");
}

TEST(SentencePieceModel, MergesRunsOfUnknownCharacters) {
  auto model = Load(WordsProto());
  EXPECT_THAT(model->EncodeToPieces("hello zzz world"),
              ElementsAre(Sp("hello"), kSp, "zzz", Sp("world")));
  // Unknown characters separated by a known one stay separate pieces.
  EXPECT_THAT(model->EncodeToPieces("xax"), ElementsAre(kSp, "x", "a", "x"));
  EXPECT_THAT(model->EncodeToPieces("日本"), ElementsAre(kSp, "日本"));
}

TEST(SentencePieceModel, MalformedUtf8BecomesReplacementCharacters) {
  auto model = Load(WordsProto());
  EXPECT_THAT(model->EncodeToPieces("hello\xFFworld"),
              ElementsAre(Sp("hello"), "\xEF\xBF\xBD", "w", "o", "r", "l", "d"));
  // Each bad byte is one U+FFFD; a run of them is one unknown piece.
  EXPECT_THAT(model->EncodeToPieces("\xE2\x82 a"),
              ElementsAre(kSp, "\xEF\xBF\xBD\xEF\xBF\xBD", kSp, "a"));
}

TEST(SentencePieceModel, UserDefinedSymbolsAreAlwaysOnePiece) {
  auto proto = MakeModelProto({{Sp("hello"), -1},
                               {"<sep>", 0, Type::USER_DEFINED},
                               {"o<", -0.5},
                               {"w", -4},
                               {"o", -4},
                               {"r", -4},
                               {"l", -4},
                               {"d", -4}});
  auto model = Load(proto);
  EXPECT_THAT(model->EncodeToPieces("hello<sep>world"),
              ElementsAre(Sp("hello"), "<sep>", "w", "o", "r", "l", "d"));
}

TEST(SentencePieceModel, UnusedPiecesAreNeverProduced) {
  spm::ModelProto proto = WordsProto();
  proto.mutable_pieces(3)->set_type(Type::UNUSED);  // ▁hello
  auto model = Load(proto);
  EXPECT_THAT(model->EncodeToPieces("hello"), ElementsAre(Sp("he"), "llo"));
  EXPECT_TRUE(model->HasPiece(Sp("hello")));
}

TEST(SentencePieceModel, TiesKeepThePathFoundFirst) {
  // ▁ab (-2) and ▁a + b (-1 + -1) score the same; SentencePiece keeps the longer piece, found
  // first because it starts earlier.
  auto model = Load(MakeModelProto({{Sp("ab"), -2}, {Sp("a"), -1}, {"b", -1}}));
  EXPECT_THAT(model->EncodeToPieces("ab"), ElementsAre(Sp("ab")));
}

TEST(SentencePieceModel, ByteFallbackSplitsUnknownCharactersIntoBytes) {
  std::vector<PieceSpec> pieces = {{Sp("h"), -1}, {kSp, -2}};
  for (const PieceSpec& b : BytePieceSpecs()) pieces.push_back(b);
  spm::ModelProto proto = MakeModelProto(pieces);
  proto.mutable_trainer_spec()->set_byte_fallback(true);
  auto model = Load(proto);
  const std::vector<std::string> pieces_out = model->EncodeToPieces("h\xC3\xA9 \xE2\x82\xAC");
  EXPECT_THAT(pieces_out,
              ElementsAre(Sp("h"), "<0xC3>", "<0xA9>", kSp, "<0xE2>", "<0x82>", "<0xAC>"));
  EXPECT_EQ(model->DecodePieces(pieces_out), "h\xC3\xA9 \xE2\x82\xAC");
  // Bytes that do not form a character decode to U+FFFD, one per byte.
  EXPECT_EQ(model->DecodePieces({"<0xE2>", "<0x82>", Sp("h")}), "\xEF\xBF\xBD\xEF\xBF\xBD h");
}

TEST(SentencePieceModel, DecodeRoundTripsNormalizedText) {
  auto model = Load(WordsProto());
  EXPECT_EQ(model->DecodePieces(model->EncodeToPieces("hello   world")), "hello world");
  // Unknown runs are pieces the model does not have, so they come back verbatim.
  EXPECT_EQ(model->DecodePieces(model->EncodeToPieces("hello zzz")), "hello zzz");
}

TEST(SentencePieceModel, DecodeSpecialPieces) {
  auto model = Load(WordsProto());
  EXPECT_EQ(model->DecodePieces({"<s>", Sp("hello"), "<unk>", "</s>"}), "hello \xE2\x81\x87 ");
  // A piece the model lacks is copied as is, U+2581 included.
  EXPECT_EQ(model->DecodePieces({Sp("hello"), Sp("xyz")}), "hello" + Sp("xyz"));
  // Leading U+2581s are all dropped when whitespace is collapsed.
  EXPECT_EQ(model->DecodePieces({kSp, kSp, Sp("hello")}), "hello");
  EXPECT_EQ(model->DecodePieces({}), "");
}

TEST(SentencePieceModel, PieceLookup) {
  auto model = Load(WordsProto());
  EXPECT_TRUE(model->HasPiece(Sp("hello")));
  EXPECT_TRUE(model->HasPiece("<unk>"));
  EXPECT_TRUE(model->HasPiece("</s>"));
  EXPECT_FALSE(model->HasPiece("hello"));
  EXPECT_EQ(model->PieceToId(Sp("hello")), 3);
  EXPECT_EQ(model->PieceToId("nope"), 0);
  EXPECT_EQ(model->IdToPiece(2), "</s>");
}

// Linear, not quadratic: the time per character at 2 MB stays close to the time per character at
// 100 KB (a quadratic encoder would take 20x as long per character). A ratio of two timings in
// one process, so a slow or sanitized build slows both sides alike.
TEST(SentencePieceModel, LongInputIsLinear) {
  auto model = Load(WordsProto());
  SplitMix64 rng(1);
  auto random_text = [&rng](size_t size) {
    std::string text;
    while (text.size() < size)
      text += rng.Chance(20) ? ' ' : static_cast<char>('a' + rng.Below(26));
    return text;
  };
  auto seconds_per_char = [&model](const std::string& text, size_t* pieces) {
    const auto start = std::chrono::steady_clock::now();
    *pieces = model->EncodeToPieces(text).size();
    const auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(end - start).count() / static_cast<double>(text.size());
  };
  const std::string small = random_text(100'000);
  const std::string large = random_text(2'000'000);
  size_t small_pieces = 0, large_pieces = 0;
  double small_rate = seconds_per_char(small, &small_pieces);
  for (int i = 0; i < 2; ++i)
    small_rate = std::min(small_rate, seconds_per_char(small, &small_pieces));
  const double large_rate = seconds_per_char(large, &large_pieces);
  EXPECT_GT(small_pieces, 5'000u);
  EXPECT_GT(large_pieces, 100'000u);
  EXPECT_LT(large_rate / small_rate, 5.0) << "per character: " << small_rate * 1e9
                                          << " ns at 100 KB, " << large_rate * 1e9 << " ns at 2 MB";
}

// ---- load errors ----

TEST(SentencePieceModelErrors, UnsupportedModelType) {
  spm::ModelProto proto = WordsProto();
  proto.mutable_trainer_spec()->set_model_type(spm::TrainerSpec::WORD);
  auto model = SentencePieceModel::LoadFromSerialized(proto.SerializeAsString(), "m/source.spm");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "unsupported SentencePiece model type WORD in m/source.spm; only unigram and bpe are "
            "supported");
}

TEST(SentencePieceModelErrors, InvalidPieceTables) {
  auto expect_error = [](spm::ModelProto proto, const std::string& what) {
    auto model = SentencePieceModel::LoadFromSerialized(proto.SerializeAsString(), "x.spm");
    ASSERT_FALSE(model.ok()) << what;
    EXPECT_THAT(std::string(model.status().message()), HasSubstr(what));
    EXPECT_THAT(std::string(model.status().message()), HasSubstr("x.spm"));
  };
  spm::ModelProto no_unk = WordsProto();
  no_unk.mutable_pieces(0)->set_type(Type::NORMAL);
  expect_error(no_unk, "no UNKNOWN");
  spm::ModelProto dup = WordsProto();
  dup.mutable_pieces(4)->set_piece(Sp("hello"));
  expect_error(dup, "defined twice");
  spm::ModelProto empty_piece = WordsProto();
  empty_piece.mutable_pieces(5)->set_piece("");
  expect_error(empty_piece, "is empty");
  spm::ModelProto stray_byte = MakeModelProto({{"a", -1}, {"<0x41>", 0, Type::BYTE}});
  expect_error(stray_byte, "byte_fallback is false");
  spm::ModelProto missing_bytes = MakeModelProto({{"a", -1}, {"<0x41>", 0, Type::BYTE}});
  missing_bytes.mutable_trainer_spec()->set_byte_fallback(true);
  expect_error(missing_bytes, "is missing");
  spm::ModelProto no_pieces = WordsProto();
  no_pieces.clear_pieces();
  expect_error(no_pieces, "no pieces");
  spm::ModelProto bad_charsmap = WordsProto();
  bad_charsmap.mutable_normalizer_spec()->set_precompiled_charsmap(
      std::string("\xFF\xFF\x00\x00xx", 6));
  expect_error(bad_charsmap, "precompiled_charsmap");
}

TEST(SentencePieceModelErrors, MissingFileIsNotFound) {
  auto model = SentencePieceModel::LoadFromFile("/nonexistent/dir/source.spm");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("/nonexistent/dir/source.spm"));
}

TEST(SentencePieceModelErrors, DirectoryAndGarbageAreErrors) {
  ScratchDir dir("transerve-spm-unit");
  auto as_dir = SentencePieceModel::LoadFromFile(dir.path());
  ASSERT_FALSE(as_dir.ok());
  EXPECT_THAT(std::string(as_dir.status().message()), HasSubstr(dir.path()));
  for (const std::string& junk : {std::string(), std::string("not a model at all\n"),
                                  std::string("\x0A\x05hello", 7), std::string(1000, '\xFF')}) {
    WriteFileOrDie(dir.File("junk.spm"), junk);
    auto model = SentencePieceModel::LoadFromFile(dir.File("junk.spm"));
    ASSERT_FALSE(model.ok()) << Escape(junk);
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(model.status().message()), HasSubstr(dir.File("junk.spm")));
  }
}

// ---- trained models ----

class TrainedModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    missing_tools_ = new std::string(MissingSpmToolsMessage());
    if (!missing_tools_->empty()) return;
    dir_ = new ScratchDir("transerve-spm-unit");
    WriteLines(dir_->File("corpus.txt"), GenerateTrainingCorpus(11, 600));
    train_error_ = new std::string(TrainSpmModel(dir_->path(), "m", dir_->File("corpus.txt"),
                                                 "--vocab_size=400 --hard_vocab_limit=false"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete missing_tools_;
    delete train_error_;
    dir_ = nullptr;
    missing_tools_ = train_error_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(missing_tools_->empty()) << *missing_tools_;
    ASSERT_EQ(*train_error_, "");
  }
  static std::string ModelPath() { return dir_->File("m.model"); }

  static std::string* missing_tools_;
  static std::string* train_error_;
  static ScratchDir* dir_;
};
std::string* TrainedModelTest::missing_tools_ = nullptr;
std::string* TrainedModelTest::train_error_ = nullptr;
ScratchDir* TrainedModelTest::dir_ = nullptr;

TEST_F(TrainedModelTest, NormalizesWithTheModelsCharsmap) {
  auto model = SentencePieceModel::LoadFromFile(ModelPath());
  ASSERT_TRUE(model.ok()) << model.status();
  // nmt_nfkc: full-width letters fold to ASCII, the ideographic space is a space, a control
  // character disappears.
  EXPECT_EQ((*model)->EncodeToPieces("\xEF\xBC\xA8\xEF\xBD\x85llo\xE3\x80\x80world\x01"),
            (*model)->EncodeToPieces("Hello world"));
}

TEST_F(TrainedModelTest, EveryTruncationIsAnError) {
  const std::string bytes = ReadFileOrDie(ModelPath());
  ASSERT_GT(bytes.size(), 1000u);
  // Every prefix near the start and the end, and a spread in between.
  std::vector<size_t> cuts;
  for (size_t n = 0; n < 300; ++n) cuts.push_back(n);
  for (size_t n = bytes.size() - 300; n < bytes.size(); ++n) cuts.push_back(n);
  for (size_t n = 300; n < bytes.size() - 300; n += 97) cuts.push_back(n);
  for (const size_t n : cuts) {
    auto model =
        SentencePieceModel::LoadFromSerialized(std::string_view(bytes).substr(0, n), "cut");
    EXPECT_FALSE(model.ok()) << "prefix of " << n << " bytes loaded";
    if (!model.ok()) {
      EXPECT_THAT(std::string(model.status().message()), HasSubstr("cut"));
    }
  }
}

// Corrupted model files either fail to load with a reason or load and then encode and decode
// without crashing. Both outcomes must occur, or one of the two paths went untested.
TEST_F(TrainedModelTest, CorruptBytesNeverCrash) {
  const std::string bytes = ReadFileOrDie(ModelPath());
  const std::vector<std::string> probe = GenerateOracleLines(3, 30);
  SplitMix64 rng(99);
  int loaded = 0, rejected = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string corrupt = bytes;
    // Mostly hit the charsmap (the tail of the file), sometimes anywhere.
    for (int k = 0, n = 1 + rng.Below(8); k < n; ++k) {
      const size_t pos =
          rng.Chance(70) ? corrupt.size() - 1 - rng.Below(std::min<size_t>(corrupt.size(), 200000))
                         : rng.Below(corrupt.size());
      corrupt[pos] = static_cast<char>(rng.Below(256));
    }
    auto model = SentencePieceModel::LoadFromSerialized(corrupt, "corrupt");
    if (!model.ok()) {
      ++rejected;
      EXPECT_FALSE(model.status().message().empty()) << "trial " << trial;
      continue;
    }
    ++loaded;
    for (const std::string& line : probe) {
      const std::vector<std::string> pieces = (*model)->EncodeToPieces(line);
      EXPECT_FALSE(pieces.empty()) << "trial " << trial << ": '" << line << "'";
      (*model)->DecodePieces(pieces);
    }
  }
  std::cout << "[          ] " << loaded << " of 300 corrupted files still parsed and encoded, "
            << rejected << " were refused\n";
  EXPECT_GT(loaded, 0) << "no corrupted file loaded: the encoder never met a damaged model";
  EXPECT_GT(rejected, 0) << "every corrupted file loaded: the loader's checks went untested";
}

// The expectations above, checked against the real tools: each hand-built model is written to a
// file and run through spm_encode and spm_decode.
TEST(SentencePieceModelVsSpmTools, HandBuiltModelsAgree) {
  const std::string missing = MissingSpmToolsMessage();
  ASSERT_TRUE(missing.empty()) << missing;
  ScratchDir dir("transerve-spm-unit");
  std::vector<std::pair<std::string, spm::ModelProto>> models;
  models.emplace_back("words", WordsProto());
  {
    spm::ModelProto p = WordsProto();
    p.mutable_normalizer_spec()->set_add_dummy_prefix(false);
    models.emplace_back("no_prefix", p);
    p = WordsProto();
    p.mutable_normalizer_spec()->set_remove_extra_whitespaces(false);
    models.emplace_back("keep_ws", p);
    p = WordsProto();
    p.mutable_pieces(3)->set_type(Type::UNUSED);
    models.emplace_back("unused", p);
    models.emplace_back("tie", MakeModelProto({{Sp("ab"), -2}, {Sp("a"), -1}, {"b", -1}}));
    // Scores all positive: user-defined pieces then get length * max_score - 0.1.
    models.emplace_back("positive", MakeModelProto({{Sp("ab"), 2},
                                                    {"<u>", 0, Type::USER_DEFINED},
                                                    {"a", 1},
                                                    {"b", 1},
                                                    {"<", 0.5},
                                                    {"u>", 1.6}}));
    // All scores negative: max_score stays FLT_MIN, a user-defined piece scores about -0.1 and
    // loses to a better split of its characters.
    models.emplace_back(
        "uds_loses",
        MakeModelProto(
            {{kSp, -0.01f}, {"a", -0.01f}, {"b", -0.01f}, {"ab", 0, Type::USER_DEFINED}}));
    models.emplace_back("user", MakeModelProto({{Sp("hello"), -1},
                                                {"<sep>", 0, Type::USER_DEFINED},
                                                {"o<", -0.5},
                                                {"l", -1},
                                                {kSp, -1}}));
    std::vector<PieceSpec> bytes = {{Sp("h"), -1}, {kSp, -2}, {"a", -1}};
    for (const PieceSpec& b : BytePieceSpecs()) bytes.push_back(b);
    p = MakeModelProto(bytes);
    p.mutable_trainer_spec()->set_byte_fallback(true);
    models.emplace_back("bytes", p);
    // BPE: merges in score order, ties to the leftmost, a merge into an UNUSED piece undone, a
    // user-defined symbol never merged, unknown characters as bytes.
    auto bpe = [](spm::ModelProto proto) {
      proto.mutable_trainer_spec()->set_model_type(spm::TrainerSpec::BPE);
      return proto;
    };
    const std::vector<PieceSpec> merges = {
        {"ab", -1},        {"bc", -1},  {"ca", -1}, {"abc", -2},  {Sp("a"), -3}, {Sp("abc"), -4},
        {Sp("ab"), -5},    {"hel", -6}, {"he", -2}, {"lo", -2.5}, {"llo", -3},   {Sp("hel"), -7},
        {Sp("hello"), -8}, {kSp, -10},  {"a", -10}, {"b", -10},   {"c", -10},    {"h", -10},
        {"e", -10},        {"l", -10},  {"o", -10}, {"w", -10},   {"r", -10},    {"d", -10}};
    models.emplace_back("bpe", bpe(MakeModelProto(merges)));
    models.emplace_back("bpe_words", bpe(WordsProto()));
    p = bpe(MakeModelProto(merges));
    p.mutable_pieces(3)->set_type(Type::UNUSED);   // ab (after <unk>, <s>, </s>)
    p.mutable_pieces(13)->set_type(Type::UNUSED);  // llo
    models.emplace_back("bpe_unused", p);
    std::vector<PieceSpec> with_user = merges;
    with_user.push_back({"<sep>", 0, Type::USER_DEFINED});
    with_user.push_back({"ca<", -0.5});
    models.emplace_back("bpe_user", bpe(MakeModelProto(with_user)));
    std::vector<PieceSpec> with_bytes = merges;
    for (const PieceSpec& b : BytePieceSpecs()) with_bytes.push_back(b);
    p = bpe(MakeModelProto(with_bytes));
    p.mutable_trainer_spec()->set_byte_fallback(true);
    models.emplace_back("bpe_bytes", p);
  }
  const std::vector<std::string> lines = {"hello world",
                                          "   hello     world  ",
                                          "",
                                          "  ",
                                          "hello  world ",
                                          "hello zzz world",
                                          "xax",
                                          "日本",
                                          "hello\xFFworld",
                                          "\xE2\x82 a",
                                          "hello<sep>world",
                                          "ab",
                                          "a b ab abab",
                                          "<u><u>ab<",
                                          "h\xC3\xA9 \xE2\x82\xAC",
                                          "hellohello",
                                          "\t hello",
                                          "a\xE2\x96\x81"
                                          "b",
                                          "helloo<sep<sep>",
                                          "abcabc",
                                          "abc abca cabca",
                                          "ca<sep>abc<sep>",
                                          "hello hellllo helo"};
  WriteLines(dir.File("lines.txt"), lines);
  for (const auto& [name, proto] : models) {
    const std::string path = dir.File(name + ".model");
    WriteFileOrDie(path, proto.SerializeAsString());
    ASSERT_EQ(RunShell("spm_encode --model=" + ShellQuote(path) + " --output_format=piece < " +
                       ShellQuote(dir.File("lines.txt")) + " > " + ShellQuote(path + ".pieces")),
              0);
    ASSERT_EQ(RunShell("spm_decode --model=" + ShellQuote(path) + " --input_format=piece < " +
                       ShellQuote(path + ".pieces") + " > " + ShellQuote(path + ".decoded")),
              0);
    const auto expected = SplitLines(ReadFileOrDie(path + ".pieces"));
    const auto decoded = SplitLines(ReadFileOrDie(path + ".decoded"));
    ASSERT_EQ(expected.size(), lines.size()) << name;
    ASSERT_EQ(decoded.size(), lines.size()) << name;
    auto model = SentencePieceModel::LoadFromFile(path);
    ASSERT_TRUE(model.ok()) << model.status();
    for (size_t i = 0; i < lines.size(); ++i) {
      const auto pieces = (*model)->EncodeToPieces(lines[i]);
      std::string joined;
      for (size_t k = 0; k < pieces.size(); ++k) {
        if (k > 0) joined += ' ';
        joined += pieces[k];
      }
      EXPECT_EQ(joined, expected[i]) << name << ": [" << Escape(lines[i]) << "]";
      EXPECT_EQ((*model)->DecodePieces(pieces), decoded[i])
          << name << ": [" << Escape(lines[i]) << "]";
    }
  }
}

}  // namespace
}  // namespace transerve::testing
