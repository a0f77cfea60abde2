// The oracle test: for SentencePiece models trained with Debian's spm_train under many
// normalization settings, our encoder must give exactly the pieces `spm_encode
// --output_format=piece` gives on 20,000 generated lines, and our DecodePieces exactly what
// `spm_decode --input_format=piece` gives (on those pieces and on random piece sequences).
// The spm tools run as separate processes; nothing from SentencePiece is linked in.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "model/tokenizer/sentencepiece_model.h"
#include "tests/model/tokenizer/oracle_text.h"
#include "tests/model/tokenizer/spm_test_util.h"

namespace transerve::testing {
namespace {

constexpr uint64_t kLinesSeed = 20240601;
constexpr int kNumLines = 20000;
constexpr uint64_t kCorpusSeed = 7;
constexpr int kCorpusLines = 3000;
constexpr int kNumRandomPieceLines = 2000;
constexpr int kMaxReportedMismatches = 5;

// Custom rules (spm's TSV: source code points <tab> replacement code points) with shared
// prefixes, multi-character sources and targets, and spaces on both sides.
constexpr std::string_view kCustomRules =
    "61 62\t78\n"
    "61 62 63\t79 79\n"
    "65\t45\n"
    "66 66\t66 20 66\n"
    "3000\t20\n"
    "9\t20\n"
    "2581\t20 20\n"
    "41 20\t41\n"
    "20 20 20\t20 2D 20\n"
    "C5\t41 30A\n";
constexpr std::string_view kCustomDecodeRules =
    "78\t61 62\n"
    "2D\t2D 2D\n";

struct OracleConfig {
  const char* name;
  const char* flags;  // {rules} and {decode_rules} are replaced by the TSV paths
};

constexpr char kCommon[] = "--vocab_size=1500 --hard_vocab_limit=false ";

const OracleConfig kConfigs[] = {
    {"nmt_nfkc", ""},
    {"nfkc", "--normalization_rule_name=nfkc"},
    {"identity", "--normalization_rule_name=identity"},
    {"nmt_nfkc_cf", "--normalization_rule_name=nmt_nfkc_cf"},
    {"nfkc_cf", "--normalization_rule_name=nfkc_cf --split_by_whitespace=false"},
    {"nmt_nfkc_no_dummy_prefix", "--add_dummy_prefix=false"},
    {"nmt_nfkc_keep_whitespace",
     "--remove_extra_whitespaces=false --allow_whitespace_only_pieces=true"},
    {"identity_raw",
     "--normalization_rule_name=identity --add_dummy_prefix=false "
     "--remove_extra_whitespaces=false"},
    {"nfkc_no_dummy_prefix_keep_whitespace",
     "--normalization_rule_name=nfkc --add_dummy_prefix=false --remove_extra_whitespaces=false"},
    {"user_defined_symbols",
     "'--user_defined_symbols=<sep>,[MASK],@@,\xE2\x96\x81\xE2\x96\x81,<s>x,\xE2\x81\x87,"
     "\xE2\x80\x9C\xE2\x80\x9D,ab,abc' '--control_symbols=<ctrl>,</x>'"},
    {"byte_fallback", "--byte_fallback=true"},
    {"whitespace_suffix", "--treat_whitespace_as_suffix=true"},
    {"custom_rules", "--normalization_rule_tsv={rules} --denormalization_rule_tsv={decode_rules}"},
    {"full_coverage_split_digits", "--character_coverage=1.0 --split_digits=true"},
    {"bpe", "--model_type=bpe"},
    {"bpe_no_dummy_prefix_keep_whitespace",
     "--model_type=bpe --add_dummy_prefix=false --remove_extra_whitespaces=false "
     "--allow_whitespace_only_pieces=true"},
    {"bpe_user_defined_symbols",
     "--model_type=bpe '--user_defined_symbols=<sep>,[MASK],@@,ab,abc' '--control_symbols=<ctrl>'"},
    {"bpe_byte_fallback_split_digits",
     "--model_type=bpe --byte_fallback=true --character_coverage=0.98 --split_digits=true"},
};

std::string Replace(std::string s, std::string_view from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

std::string Join(const std::vector<std::string>& pieces) {
  std::string out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) out += ' ';
    out += pieces[i];
  }
  return out;
}

class SpmOracleTest : public ::testing::TestWithParam<OracleConfig> {
 protected:
  static void SetUpTestSuite() {
    missing_tools_ = new std::string(MissingSpmToolsMessage());
    if (!missing_tools_->empty()) return;
    dir_ = new ScratchDir("transerve-spm-oracle");
    lines_ = new std::vector<std::string>(GenerateOracleLines(kLinesSeed, kNumLines));
    WriteLines(dir_->File("lines.txt"), *lines_);
    WriteLines(dir_->File("corpus.txt"), GenerateTrainingCorpus(kCorpusSeed, kCorpusLines));
    WriteFileOrDie(dir_->File("rules.tsv"), kCustomRules);
    WriteFileOrDie(dir_->File("decode_rules.tsv"), kCustomDecodeRules);
  }
  static void TearDownTestSuite() {
    delete lines_;
    delete dir_;
    delete missing_tools_;
    lines_ = nullptr;
    dir_ = nullptr;
    missing_tools_ = nullptr;
  }

  static std::string* missing_tools_;
  static ScratchDir* dir_;
  static std::vector<std::string>* lines_;
};

std::string* SpmOracleTest::missing_tools_ = nullptr;
ScratchDir* SpmOracleTest::dir_ = nullptr;
std::vector<std::string>* SpmOracleTest::lines_ = nullptr;

// Random sequences of the model's pieces plus pieces it does not know, control pieces, the unk
// piece, and byte pieces (valid and not), for the decode oracle. No piece contains ' ' or '\n',
// so the piece files stay one sequence per line.
std::vector<std::string> RandomPieceLines(const SentencePieceModel& model, uint64_t seed) {
  std::vector<std::string> pool;
  for (int id = 0; id < model.piece_size(); ++id) {
    const std::string& p = model.IdToPiece(id);
    if (p.find_first_of(" \n") == std::string::npos && p != "<0x0A>") pool.push_back(p);
  }
  for (const char* extra : {"<unk>",
                            "<s>",
                            "</s>",
                            "xyz\xE2\x96\x81"
                            "abc",
                            "\xE2\x96\x81\xE2\x96\x81",
                            "\xE2\x96\x81",
                            "\xE2\x81\x87",
                            "<0x41>",
                            "<0xE3>",
                            "<0x81>",
                            "<0x82>",
                            "<0xFF>",
                            "<0x20>",
                            "<0x7a>",
                            "<0xC3>",
                            "<0xA9>",
                            "\xE2\x96\x81<0x41>",
                            "<ctrl>",
                            "<sep>",
                            "\xEF\xBF\xBD"}) {
    pool.push_back(extra);
  }
  SplitMix64 rng(seed);
  std::vector<std::string> lines;
  for (int i = 0; i < kNumRandomPieceLines; ++i) {
    std::string line;
    for (int k = 0, n = 1 + rng.Below(12); k < n; ++k) {
      if (k > 0) line += ' ';
      line += pool[rng.Below(pool.size())];
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> SplitPieces(const std::string& line) {
  std::vector<std::string> pieces;
  size_t pos = 0;
  for (;;) {
    const size_t end = line.find(' ', pos);
    pieces.push_back(line.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return pieces;
}

TEST_P(SpmOracleTest, PiecesAndDecodingMatchSpmTools) {
  ASSERT_TRUE(missing_tools_->empty()) << *missing_tools_;
  const OracleConfig& config = GetParam();
  const std::string name = config.name;
  std::string flags = std::string(kCommon) + config.flags;
  flags = Replace(flags, "{rules}", ShellQuote(dir_->File("rules.tsv")));
  flags = Replace(flags, "{decode_rules}", ShellQuote(dir_->File("decode_rules.tsv")));
  ASSERT_EQ(TrainSpmModel(dir_->path(), name, dir_->File("corpus.txt"), flags), "");
  const std::string model_path = dir_->File(name + ".model");

  // The references, from the CLI tools.
  const std::string pieces_path = dir_->File(name + ".pieces");
  const std::string decoded_path = dir_->File(name + ".decoded");
  ASSERT_EQ(RunShell("spm_encode --model=" + ShellQuote(model_path) + " --output_format=piece < " +
                     ShellQuote(dir_->File("lines.txt")) + " > " + ShellQuote(pieces_path)),
            0);
  ASSERT_EQ(RunShell("spm_decode --model=" + ShellQuote(model_path) + " --input_format=piece < " +
                     ShellQuote(pieces_path) + " > " + ShellQuote(decoded_path)),
            0);
  const std::vector<std::string> expected_pieces = SplitLines(ReadFileOrDie(pieces_path));
  const std::vector<std::string> expected_decoded = SplitLines(ReadFileOrDie(decoded_path));
  ASSERT_EQ(expected_pieces.size(), lines_->size());
  ASSERT_EQ(expected_decoded.size(), lines_->size());

  auto model = SentencePieceModel::LoadFromFile(model_path);
  ASSERT_TRUE(model.ok()) << model.status();

  int encode_matched = 0;
  int decode_matched = 0;
  int reported = 0;
  for (size_t i = 0; i < lines_->size(); ++i) {
    const std::vector<std::string> pieces = (*model)->EncodeToPieces((*lines_)[i]);
    const std::string joined = Join(pieces);
    if (joined == expected_pieces[i]) {
      ++encode_matched;
    } else if (reported++ < kMaxReportedMismatches) {
      ADD_FAILURE() << name << " line " << i << " encodes differently\n  input:    ["
                    << Escape((*lines_)[i]) << "]\n  spm:      [" << Escape(expected_pieces[i])
                    << "]\n  ours:     [" << Escape(joined) << "]";
    }
    const std::string decoded = (*model)->DecodePieces(pieces);
    if (decoded == expected_decoded[i]) {
      ++decode_matched;
    } else if (reported++ < kMaxReportedMismatches) {
      ADD_FAILURE() << name << " line " << i << " decodes differently\n  pieces:   ["
                    << Escape(joined) << "]\n  spm:      [" << Escape(expected_decoded[i])
                    << "]\n  ours:     [" << Escape(decoded) << "]";
    }
  }

  // Decoding arbitrary piece sequences, including pieces the model does not have.
  const std::vector<std::string> piece_lines = RandomPieceLines(**model, kLinesSeed + 1);
  const std::string random_path = dir_->File(name + ".random_pieces");
  const std::string random_decoded_path = dir_->File(name + ".random_decoded");
  WriteLines(random_path, piece_lines);
  ASSERT_EQ(RunShell("spm_decode --model=" + ShellQuote(model_path) + " --input_format=piece < " +
                     ShellQuote(random_path) + " > " + ShellQuote(random_decoded_path)),
            0);
  const std::vector<std::string> random_expected = SplitLines(ReadFileOrDie(random_decoded_path));
  ASSERT_EQ(random_expected.size(), piece_lines.size());
  int random_matched = 0;
  for (size_t i = 0; i < piece_lines.size(); ++i) {
    const std::string decoded = (*model)->DecodePieces(SplitPieces(piece_lines[i]));
    if (decoded == random_expected[i]) {
      ++random_matched;
    } else if (reported++ < kMaxReportedMismatches) {
      ADD_FAILURE() << name << " random pieces line " << i << " decode differently\n  pieces: ["
                    << Escape(piece_lines[i]) << "]\n  spm:    [" << Escape(random_expected[i])
                    << "]\n  ours:   [" << Escape(decoded) << "]";
    }
  }

  std::cout << "[  oracle  ] " << name << ": encode " << encode_matched << "/" << lines_->size()
            << " lines identical to spm_encode, decode " << decode_matched << "/" << lines_->size()
            << " and " << random_matched << "/" << piece_lines.size()
            << " random piece lines identical to spm_decode\n";
  RecordProperty("encode_matched", encode_matched);
  RecordProperty("decode_matched", decode_matched);
  EXPECT_EQ(encode_matched, static_cast<int>(lines_->size()));
  EXPECT_EQ(decode_matched, static_cast<int>(lines_->size()));
  EXPECT_EQ(random_matched, static_cast<int>(piece_lines.size()));
}

INSTANTIATE_TEST_SUITE_P(Normalizations, SpmOracleTest, ::testing::ValuesIn(kConfigs),
                         [](const ::testing::TestParamInfo<OracleConfig>& info) {
                           return std::string(info.param.name);
                         });

TEST(SpmOracleText, GeneratesEnoughVariedLines) {
  const std::vector<std::string> lines = GenerateOracleLines(kLinesSeed, kNumLines);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kNumLines));
  auto count_if = [&](auto pred) { return std::count_if(lines.begin(), lines.end(), pred); };
  EXPECT_GT(count_if([](const std::string& l) { return l.empty(); }), 20);
  EXPECT_GT(count_if([](const std::string& l) { return l.size() > 200; }), 200);
  EXPECT_GT(count_if([](const std::string& l) { return l.find('\t') != std::string::npos; }), 200);
  EXPECT_GT(count_if([](const std::string& l) { return l.starts_with(" "); }), 200);
  EXPECT_GT(count_if([](const std::string& l) { return l.find("\xEF\xBC") != std::string::npos; }),
            200);  // full-width forms
  EXPECT_EQ(count_if([](const std::string& l) { return l.find('\n') != std::string::npos; }), 0);
  // The same seed gives the same text.
  EXPECT_EQ(lines, GenerateOracleLines(kLinesSeed, kNumLines));
}

}  // namespace
}  // namespace transerve::testing
