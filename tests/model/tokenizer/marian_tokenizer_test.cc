// Tests of MarianTokenizer on a checkpoint directory written by the test: hand-built source.spm
// and target.spm (exact scores, identity normalization) and a vocab.json laid out like opus-mt's
// ("</s>" 0, "<unk>" 1, language codes, pieces, "<pad>" last). Also the v4 text rules.
#include "model/tokenizer/marian_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/tokenizer/marian_text_rules.h"
#include "model/tokenizer/marian_vocab.h"
#include "model/tokenizer/sentencepiece_model.h"
#include "tests/model/tokenizer/spm_model_builder.h"
#include "tests/model/tokenizer/spm_test_util.h"

namespace transerve::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kSp[] = "\xE2\x96\x81";
std::string Sp(const std::string& s) { return kSp + s; }

std::vector<PieceSpec> LetterPieces() {
  std::vector<PieceSpec> pieces;
  for (char c = 'a'; c <= 'z'; ++c) pieces.push_back({std::string(1, c), -5});
  for (char c = 'A'; c <= 'Z'; ++c) pieces.push_back({std::string(1, c), -5});
  for (const char* c : {"<", ">", "/", "!"}) pieces.push_back({c, -5});
  return pieces;
}

spm::ModelProto SourceSpm() {
  std::vector<PieceSpec> pieces = {
      {Sp("Hello"), -1}, {Sp("world"), -1}, {kSp, -3}, {Sp("zz"), -1}};  // ▁zz is not in vocab.json
  for (const PieceSpec& p : LetterPieces()) pieces.push_back(p);
  return MakeModelProto(pieces);
}

spm::ModelProto TargetSpm() {
  std::vector<PieceSpec> pieces = {{Sp("Hallo"), -1}, {Sp("Welt"), -1}, {kSp, -3}};
  for (const PieceSpec& p : LetterPieces()) pieces.push_back(p);
  return MakeModelProto(pieces);
}

// A vocab.json object with the entries in the given order (duplicates allowed).
std::string JsonVocab(const std::vector<std::pair<std::string, int>>& entries) {
  std::string json = "{";
  for (const auto& [piece, id] : entries) {
    if (json.size() > 1) json += ", ";
    json += '"';
    json += piece;
    json += "\": ";
    json += std::to_string(id);
  }
  json += '}';
  return json;
}

// Ids: 0 </s>, 1 <unk>, 2 >>fra<<, 3 >>deu<<, 4 ▁Hello, 5 ▁world, 6 ▁Hallo, 7 ▁Welt, 8 ▁,
// 9 ▁Bonjour (in no spm), 10.. letters, last <pad>.
std::string VocabJson(int* pad_id) {
  std::vector<std::pair<std::string, int>> entries = {
      {"</s>", 0},      {"<unk>", 1},     {">>fra<<", 2},  {">>deu<<", 3}, {Sp("Hello"), 4},
      {Sp("world"), 5}, {Sp("Hallo"), 6}, {Sp("Welt"), 7}, {kSp, 8},       {Sp("Bonjour"), 9}};
  int id = 10;
  for (const PieceSpec& p : LetterPieces()) {
    if (p.piece == "/") continue;  // a piece in the spm models but not in the vocabulary
    entries.emplace_back(p.piece, id++);
  }
  entries.emplace_back("<pad>", id);
  *pad_id = id;
  return JsonVocab(entries);
}

class MarianTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<ScratchDir>("transerve-marian-tok");
    WriteFileOrDie(dir_->File("source.spm"), SourceSpm().SerializeAsString());
    WriteFileOrDie(dir_->File("target.spm"), TargetSpm().SerializeAsString());
    WriteFileOrDie(dir_->File("vocab.json"), VocabJson(&pad_id_));
    WriteFileOrDie(dir_->File("tokenizer_config.json"),
                   R"({"source_lang": "eng", "target_lang": "deu"})");
  }

  std::unique_ptr<MarianTokenizer> Load() {
    auto tok = MarianTokenizer::Load(dir_->path());
    EXPECT_TRUE(tok.ok()) << tok.status();
    return tok.ok() ? *std::move(tok) : nullptr;
  }
  std::vector<int32_t> Encode(const MarianTokenizer& tok, std::string_view text) {
    auto ids = tok.Encode(text);
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.ok() ? *ids : std::vector<int32_t>{};
  }

  std::unique_ptr<ScratchDir> dir_;
  int pad_id_ = -1;
};

TEST_F(MarianTokenizerTest, SpecialIdsAndSizes) {
  auto tok = Load();
  EXPECT_EQ(tok->eos_id(), 0);
  EXPECT_EQ(tok->unk_id(), 1);
  EXPECT_EQ(tok->pad_id(), pad_id_);
  EXPECT_EQ(tok->source_vocab_size(), pad_id_ + 1);
  EXPECT_EQ(tok->target_vocab_size(), pad_id_ + 1);
}

TEST_F(MarianTokenizerTest, EncodeAppendsEos) {
  auto tok = Load();
  EXPECT_THAT(Encode(*tok, "Hello world"), ElementsAre(4, 5, 0));
  EXPECT_THAT(Encode(*tok, "  Hello   world  "), ElementsAre(4, 5, 0));
  EXPECT_THAT(Encode(*tok, ""), ElementsAre(0));
  EXPECT_THAT(Encode(*tok, "   "), ElementsAre(0));
}

TEST_F(MarianTokenizerTest, PiecesMissingFromVocabBecomeUnk) {
  auto tok = Load();
  // ▁zz is a source.spm piece without a vocab.json entry; "/" likewise; 日 is unknown to spm.
  EXPECT_THAT(Encode(*tok, "zz Hello / \xE6\x97\xA5"), ElementsAre(1, 4, 8, 1, 8, 1, 0));
}

TEST_F(MarianTokenizerTest, LanguageCodeAtTheStartIsOneToken) {
  auto tok = Load();
  EXPECT_THAT(Encode(*tok, ">>fra<< Hello"), ElementsAre(2, 4, 0));
  EXPECT_THAT(Encode(*tok, ">>deu<<Hello"), ElementsAre(3, 4, 0));
  // Not in the vocabulary: the code maps to <unk> and is still removed from the text.
  EXPECT_THAT(Encode(*tok, ">>xyz<< Hello"), ElementsAre(1, 4, 0));
}

TEST_F(MarianTokenizerTest, LanguageCodeRegexIsGreedyAndRemovedEverywhere) {
  auto tok = Load();
  // v4's `>>.+<<` is greedy: the match runs to the last "<<", so this "code" is unknown.
  EXPECT_THAT(Encode(*tok, ">>fra<< Hello >>deu<< world"), ElementsAre(1, 5, 0));
  // A code that is not at the start is deleted, not emitted.
  EXPECT_THAT(Encode(*tok, "Hello >>fra<< world"), ElementsAre(4, 5, 0));
  // ">><<" needs at least one character in between; "<<" alone is text.
  EXPECT_THAT(Encode(*tok, ">><< Hello"), ElementsAre(8, 63, 63, 62, 62, 4, 0));
}

TEST_F(MarianTokenizerTest, SpecialTokensInTextAreSplitOut) {
  auto tok = Load();
  EXPECT_THAT(Encode(*tok, "Hello</s>world<unk> <pad>"), ElementsAre(4, 0, 5, 1, pad_id_, 0));
  // Each chunk between special tokens is tokenized on its own (dummy prefix, language code).
  EXPECT_THAT(Encode(*tok, "</s>>>fra<< Hello"), ElementsAre(0, 2, 4, 0));
}

// A CTranslate2 directory that is no Marian conversion: SentencePiece's pieces of the whole text,
// as its users' sp.encode gives them; codes and special tokens' strings are text like any other.
TEST_F(MarianTokenizerTest, WithoutMarianTextRulesSentencePieceReadsEverything) {
  std::vector<std::string> tokens = {"</s>",      "<unk>",      ">>fra<<",   ">>deu<<",
                                     Sp("Hello"), Sp("world"),  Sp("Hallo"), Sp("Welt"),
                                     kSp,         Sp("Bonjour")};
  for (const PieceSpec& p : LetterPieces()) {
    if (p.piece != "/") tokens.push_back(p.piece);
  }
  tokens.push_back("<pad>");
  MarianTokenizer::Parts parts;
  parts.source_vocab = MarianVocab::FromTokens(tokens);
  auto source = SentencePieceModel::LoadFromFile(dir_->File("source.spm"));
  auto target = SentencePieceModel::LoadFromFile(dir_->File("target.spm"));
  ASSERT_TRUE(source.ok() && target.ok());
  parts.source_spm = *std::move(source);
  parts.target_spm = *std::move(target);
  parts.eos_token = "</s>";
  parts.unk_token = "<unk>";
  parts.append_eos = false;
  parts.marian_text = false;
  auto tok = MarianTokenizer::FromParts(std::move(parts));
  ASSERT_TRUE(tok.ok()) << tok.status();
  // ▁ > > f r a < < ▁Hello: the code is characters (ids: letters from 10, "<" 62, ">" 63).
  EXPECT_THAT(Encode(**tok, ">>fra<< Hello"), ElementsAre(8, 63, 63, 15, 27, 10, 62, 62, 4));
  // "</s>" is characters too ("/" has no entry: <unk>), and nothing is appended.
  EXPECT_THAT(Encode(**tok, "Hello</s>"), ElementsAre(4, 62, 1, 28, 63));
  EXPECT_THAT(Encode(**tok, ""), ElementsAre(0));  // the empty source: the lone EOS
}

TEST_F(MarianTokenizerTest, InvalidUtf8IsInvalidArgument) {
  auto tok = Load();
  auto ids = tok->Encode("Hello \xC3\x28");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ids.status().message()), HasSubstr("byte 6"));
  EXPECT_FALSE(tok->Encode("\xED\xA0\x80").ok());  // a surrogate
}

TEST_F(MarianTokenizerTest, DecodeSkipsSpecialAndUnknownIds) {
  auto tok = Load();
  const std::vector<int32_t> ids = {6, 1, 7, pad_id_, 123456, -5, 0};
  EXPECT_EQ(tok->Decode(ids), "Hallo Welt");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{0}), "");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{}), "");
}

TEST_F(MarianTokenizerTest, DecodeCopiesPiecesUnknownToTargetSpmVerbatim) {
  auto tok = Load();
  // ▁Bonjour is in vocab.json but not in target.spm: DecodePieces copies it, U+2581 included.
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{6, 9, 0}), "Hallo" + Sp("Bonjour"));
  // Leading and trailing spaces go (str.strip()).
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{8, 8, 6, 8, 0}), "Hallo");
}

TEST_F(MarianTokenizerTest, TargetIdToPiece) {
  auto tok = Load();
  EXPECT_EQ(tok->TargetIdToPiece(6), Sp("Hallo"));
  EXPECT_EQ(tok->TargetIdToPiece(0), "</s>");
  EXPECT_EQ(tok->TargetIdToPiece(99999), "<unk>");
}

TEST_F(MarianTokenizerTest, SeparateVocabularies) {
  WriteFileOrDie(dir_->File("tokenizer_config.json"), R"({"separate_vocabs": true})");
  WriteFileOrDie(
      dir_->File("target_vocab.json"),
      JsonVocab({{"</s>", 0}, {"<unk>", 1}, {Sp("Welt"), 2}, {Sp("Hallo"), 3}, {"<pad>", 4}}));
  auto tok = Load();
  EXPECT_EQ(tok->target_vocab_size(), 5);
  EXPECT_EQ(tok->source_vocab_size(), pad_id_ + 1);
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{3, 2, 0}), "Hallo Welt");
  EXPECT_EQ(tok->TargetIdToPiece(2), Sp("Welt"));
  // Encoding still uses vocab.json.
  EXPECT_THAT(Encode(*tok, "Hello"), ElementsAre(4, 0));
}

TEST_F(MarianTokenizerTest, SpecialTokenStringsFromConfig) {
  // AddedToken objects as transformers writes them.
  WriteFileOrDie(dir_->File("special_tokens_map.json"),
                 R"({"eos_token": {"content": "</s>", "lstrip": false}, "unk_token": "<unk>",
                     "pad_token": ">>fra<<"})");
  auto tok = Load();
  EXPECT_EQ(tok->pad_id(), 2);
  EXPECT_THAT(Encode(*tok, "Hello>>fra<<"), ElementsAre(4, 2, 0));
}

TEST_F(MarianTokenizerTest, DuplicateKeysFollowPythonDicts) {
  // json.load keeps the last value of a key; the id -> piece map keeps the last key per id.
  WriteFileOrDie(dir_->File("vocab.json"), JsonVocab({{"</s>", 0},
                                                      {"<unk>", 1},
                                                      {Sp("Hallo"), 5},
                                                      {Sp("Hallo"), 2},
                                                      {Sp("Welt"), 3},
                                                      {"x", 3},
                                                      {"<pad>", 4}}));
  auto tok = Load();
  EXPECT_EQ(tok->source_vocab_size(), 6);
  EXPECT_EQ(tok->TargetIdToPiece(2), Sp("Hallo"));
  EXPECT_EQ(tok->TargetIdToPiece(3), "x");
  EXPECT_EQ(tok->TargetIdToPiece(5), "<unk>");
}

// ---- load errors: every one names the file ----

TEST_F(MarianTokenizerTest, MissingVocabIsNotFound) {
  std::filesystem::remove(dir_->File("vocab.json"));
  auto tok = MarianTokenizer::Load(dir_->path());
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(tok.status().message()), HasSubstr(dir_->File("vocab.json")));
}

TEST_F(MarianTokenizerTest, BadFilesAreErrorsNamingTheFile) {
  struct Case {
    const char* file;
    std::string contents;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"vocab.json", "{\"</s>\": 0, ", "invalid JSON"},
      {"vocab.json", "[1, 2]", "expected a JSON object"},
      {"vocab.json", "{\"</s>\": 0, \"<unk>\": 1.5}", "non-integer"},
      {"vocab.json", "{\"</s>\": 0, \"<unk>\": -1}", "outside"},
      {"vocab.json", "{\"</s>\": 0, \"<unk>\": {\"a\": 1}}", "nested object"},
      {"vocab.json", "{}", "empty"},
      {"vocab.json", "{\"</s>\": 0, \"<pad>\": 1}", "\"<unk>\""},
      {"tokenizer_config.json", "{oops", "not a JSON object"},
      {"tokenizer_config.json", "{\"separate_vocabs\": \"yes\"}", "separate_vocabs"},
      {"tokenizer_config.json", "{\"separate_vocabs\": true}", "target_vocab.json"},
      {"tokenizer_config.json", "{\"eos_token\": 5}", "eos_token"},
      {"source.spm", "garbage", "source.spm"},
      {"target.spm", "", "target.spm"},
  };
  for (const Case& c : cases) {
    SetUp();  // fresh, valid directory
    WriteFileOrDie(dir_->File(c.file), c.contents);
    auto tok = MarianTokenizer::Load(dir_->path());
    ASSERT_FALSE(tok.ok()) << c.file << ": " << c.contents;
    const std::string message(tok.status().message());
    EXPECT_THAT(message, HasSubstr(c.expect)) << c.file << ": " << c.contents;
    EXPECT_THAT(message, HasSubstr(dir_->path())) << c.file << ": " << c.contents;
  }
}

TEST_F(MarianTokenizerTest, MissingSpmNamesTheFile) {
  std::filesystem::remove(dir_->File("target.spm"));
  auto tok = MarianTokenizer::Load(dir_->path());
  ASSERT_FALSE(tok.ok());
  EXPECT_THAT(std::string(tok.status().message()), HasSubstr(dir_->File("target.spm")));
}

// ---- the Python rules (expected values checked with CPython's re and str) ----

TEST(MarianTextRules, LanguageCodeMatch) {
  using marian_text::MatchLanguageCodeAt;
  EXPECT_EQ(MatchLanguageCodeAt(">>fra<< x", 0), 7u);
  EXPECT_EQ(MatchLanguageCodeAt(">>fra<< >>de<< x", 0), 14u);  // greedy
  EXPECT_EQ(MatchLanguageCodeAt(">><<", 0), 0u);
  EXPECT_EQ(MatchLanguageCodeAt(">>a<<", 0), 5u);
  EXPECT_EQ(MatchLanguageCodeAt(">><<<", 0), 5u);  // `.` matches the first '<'
  EXPECT_EQ(MatchLanguageCodeAt(">>>a<<", 0), 6u);
  EXPECT_EQ(MatchLanguageCodeAt(">>fr\n<<", 0), 0u);  // `.` stops at a newline
  EXPECT_EQ(MatchLanguageCodeAt(">>fr<<\n<<", 0), 6u);
  EXPECT_EQ(MatchLanguageCodeAt(" >>fr<<", 0), 0u);
  EXPECT_EQ(MatchLanguageCodeAt(" >>fr<<", 1), 6u);
  EXPECT_EQ(MatchLanguageCodeAt(">>\xC3\xA9<<", 0), 6u);
}

TEST(MarianTextRules, RemoveLanguageCodes) {
  using marian_text::RemoveLanguageCodes;
  EXPECT_EQ(RemoveLanguageCodes(">>fra<< Hello"), " Hello");
  EXPECT_EQ(RemoveLanguageCodes("a >>x<< b >>y<< c"), "a  c");
  EXPECT_EQ(RemoveLanguageCodes("a >>x<<\nb >>y<< c"), "a \nb  c");
  EXPECT_EQ(RemoveLanguageCodes(">> <<"), "");
  EXPECT_EQ(RemoveLanguageCodes(">><< >>"), ">><< >>");
  EXPECT_EQ(RemoveLanguageCodes(">>>>a<<<<"), "");
  EXPECT_EQ(RemoveLanguageCodes("x>>\n>>a<<y"), "x>>\ny");
}

TEST(MarianTextRules, StripPythonWhitespace) {
  using marian_text::StripPythonWhitespace;
  EXPECT_EQ(StripPythonWhitespace("  a b \t\n"), "a b");
  EXPECT_EQ(StripPythonWhitespace("\xE3\x80\x80x\xC2\xA0\xE2\x80\x83"),
            "x");  // U+3000, U+00A0, U+2003
  EXPECT_EQ(StripPythonWhitespace("\x1Cx\x1F"), "x");
  EXPECT_EQ(StripPythonWhitespace("\xE2\x80\x8Bx"), "\xE2\x80\x8Bx");  // U+200B is not a space
  EXPECT_EQ(StripPythonWhitespace("\xE2\x96\x81x"), "\xE2\x96\x81x");  // nor is U+2581
  EXPECT_EQ(StripPythonWhitespace("   "), "");
  EXPECT_EQ(StripPythonWhitespace(""), "");
}

}  // namespace
}  // namespace transerve::testing
