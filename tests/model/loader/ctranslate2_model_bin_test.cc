// Tests for the CTranslate2 model.bin reader and writer: seeded round trips over every dtype and
// binary version, the writer against a hand-built layout, one test per validation rule, every
// truncation of a small file, and seeded corruptions that must fail cleanly.
#include "model/loader/ctranslate2_model_bin.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/loader/ctranslate2_model_bin_writer.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr Ct2Dtype kEveryDtype[] = {Ct2Dtype::kFloat32, Ct2Dtype::kInt8,    Ct2Dtype::kInt16,
                                    Ct2Dtype::kInt32,   Ct2Dtype::kFloat16, Ct2Dtype::kBFloat16};

std::string RandomBytes(std::mt19937& rng, std::size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(1 + rng() % 255);  // Never zero: zeros hide bugs.
  return s;
}

// Names like the converters' ("encoder/layer_3/ffn/linear_0/weight"), random parts.
std::string RandomName(std::mt19937& rng) {
  static constexpr std::string_view kChars = "abcdefghijklmnopqrstuvwxyz0123456789_";
  std::string name;
  const int parts = 1 + static_cast<int>(rng() % 4);
  for (int p = 0; p < parts; ++p) {
    if (p > 0) name += '/';
    const int len = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < len; ++i) name += kChars[rng() % kChars.size()];
  }
  return name;
}

Ct2NamedVariable RandomVariable(std::mt19937& rng, std::string name, Ct2Dtype dtype) {
  Ct2NamedVariable v{std::move(name), dtype, {}, {}};
  const int rank = static_cast<int>(rng() % 5);
  int64_t elements = 1;
  for (int d = 0; d < rank; ++d) {
    v.shape.push_back(1 + static_cast<int64_t>(rng() % 7));
    elements *= v.shape.back();
  }
  v.bytes = RandomBytes(rng, static_cast<std::size_t>(elements) * Ct2DtypeSize(dtype));
  return v;
}

// The format written out by hand, field by field, as an independent statement of the layout:
// little-endian integers, strings as a u16 length counting a final NUL.
class Layout {
 public:
  Layout& U8(uint64_t v) { return Int(v, 1); }
  Layout& U16(uint64_t v) { return Int(v, 2); }
  Layout& U32(uint64_t v) { return Int(v, 4); }
  Layout& Str(std::string_view s) {
    U16(s.size() + 1);
    bytes_.append(s);
    bytes_.push_back('\0');
    return *this;
  }
  Layout& Raw(std::string_view s) {
    bytes_.append(s);
    return *this;
  }
  // A version 6 header: version, spec name, revision, variable count.
  Layout& Header(uint32_t variables, uint32_t version = 6) {
    U32(version);
    if (version >= 2) Str("TransformerSpec").U32(3);
    return U32(variables);
  }
  // A version 4+ record whose byte count is `num_bytes`, followed by `data`.
  Layout& Variable(std::string_view name, const std::vector<uint32_t>& shape, int dtype,
                   uint32_t num_bytes, std::string_view data) {
    Str(name).U8(shape.size());
    for (uint32_t d : shape) U32(d);
    return U8(dtype).U32(num_bytes).Raw(data);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  Layout& Int(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  std::string bytes_;
};

class Ct2ModelBinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("transerve_ct2_model_bin_", info->name(), "_", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "model.bin").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  absl::StatusOr<Ct2ModelBin> OpenBytes(std::string_view bytes) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    EXPECT_TRUE(out.good());
    return Ct2ModelBin::Open(path_);
  }

  absl::StatusOr<Ct2ModelBin> OpenContents(const Ct2ModelBinContents& contents) {
    absl::StatusOr<std::string> bytes = SerializeCt2ModelBin(contents);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    if (!bytes.ok()) return bytes.status();
    return OpenBytes(*bytes);
  }

  // The status has the code and mentions the file and every fragment.
  void ExpectError(const absl::Status& status, absl::StatusCode code,
                   std::initializer_list<std::string_view> fragments) const {
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(path_));
    for (std::string_view f : fragments) {
      EXPECT_THAT(std::string(status.message()), HasSubstr(std::string(f)));
    }
  }

  fs::path dir_;
  std::string path_;
};

std::string AsString(std::span<const std::byte> data) {
  return std::string(reinterpret_cast<const char*>(data.data()), data.size());
}

// Every variable of `model` is the written one: same order, name, dtype, shape and bytes.
void ExpectVariables(const Ct2ModelBin& model, const std::vector<Ct2NamedVariable>& written) {
  ASSERT_EQ(model.variables().size(), written.size());
  for (std::size_t i = 0; i < written.size(); ++i) {
    const Ct2Variable& v = model.variables()[i];
    SCOPED_TRACE(written[i].name);
    EXPECT_EQ(v.name, written[i].name);
    EXPECT_EQ(v.dtype, written[i].dtype);
    EXPECT_EQ(v.shape, written[i].shape);
    EXPECT_EQ(AsString(v.data), written[i].bytes);
    EXPECT_EQ(model.Find(v.name), &v);
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips.

TEST_F(Ct2ModelBinTest, RoundTripsRandomVariablesOfEveryDtype) {
  std::mt19937 rng(20261204);
  for (uint32_t version : {4u, 5u, 6u}) {
    SCOPED_TRACE(version);
    Ct2ModelBinContents contents;
    contents.binary_version = version;
    contents.spec_name = RandomName(rng);
    contents.spec_revision = 1 + rng() % 1000;
    std::set<std::string> names;
    for (int i = 0; i < 60; ++i) {
      std::string name = RandomName(rng);
      if (!names.insert(name).second) continue;
      contents.variables.push_back(RandomVariable(rng, name, kEveryDtype[i % 6]));
    }
    // Aliases straight to variables and one through another alias.
    for (int i = 0; i < 5; ++i) {
      const std::string& target = contents.variables[rng() % contents.variables.size()].name;
      contents.aliases.emplace_back(absl::StrCat("alias_", i, "/", RandomName(rng)), target);
    }
    contents.aliases.emplace_back("chained", contents.aliases[2].first);

    absl::StatusOr<Ct2ModelBin> model = OpenContents(contents);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->binary_version(), version);
    EXPECT_EQ(model->spec_name(), contents.spec_name);
    EXPECT_EQ(model->spec_revision(), contents.spec_revision);
    ExpectVariables(*model, contents.variables);
    ASSERT_EQ(model->aliases().size(), 6u);
    for (int i = 0; i < 5; ++i) {
      const auto& [alias, target] = contents.aliases[i];
      EXPECT_EQ(model->aliases().at(alias), target);
      EXPECT_EQ(model->Find(alias), model->Find(target));
    }
    EXPECT_EQ(model->aliases().at("chained"), contents.aliases[2].second);
    EXPECT_EQ(model->Find("chained"), model->Find(contents.aliases[2].second));
    EXPECT_EQ(model->Find("no/such/variable"), nullptr);
  }
}

TEST_F(Ct2ModelBinTest, OlderVersionsStoreItemSizes) {
  std::mt19937 rng(31);
  for (uint32_t version : {1u, 2u, 3u}) {
    SCOPED_TRACE(version);
    Ct2ModelBinContents contents;
    contents.binary_version = version;
    if (version >= 2) {
      contents.spec_name = "TransformerSpec";
      contents.spec_revision = 7;
    }
    contents.variables = {RandomVariable(rng, "a/weight", Ct2Dtype::kFloat32),
                          RandomVariable(rng, "b/weight", Ct2Dtype::kInt16),
                          RandomVariable(rng, "c/weight", Ct2Dtype::kInt8)};
    if (version >= 3) contents.aliases = {{"d/weight", "c/weight"}};
    absl::StatusOr<Ct2ModelBin> model = OpenContents(contents);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->binary_version(), version);
    EXPECT_EQ(model->spec_name(), contents.spec_name);
    EXPECT_EQ(model->spec_revision(), version >= 2 ? 7u : 1u);
    ExpectVariables(*model, contents.variables);
    EXPECT_EQ(model->aliases().size(), version >= 3 ? 1u : 0u);
  }
}

TEST_F(Ct2ModelBinTest, ScalarsAndEmptyVariables) {
  std::mt19937 rng(5);
  Ct2ModelBinContents contents;
  contents.variables = {{"scalar", Ct2Dtype::kFloat32, {}, RandomBytes(rng, 4)},
                        {"empty", Ct2Dtype::kInt32, {0, 5}, ""},
                        {"text", Ct2Dtype::kInt8, {3}, "pre"}};  // How spec strings are stored.
  absl::StatusOr<Ct2ModelBin> model = OpenContents(contents);
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectVariables(*model, contents.variables);
}

TEST_F(Ct2ModelBinTest, WriterMatchesTheHandBuiltLayout) {
  std::mt19937 rng(8);
  const std::string w = RandomBytes(rng, 2 * 3 * 2);
  const std::string b = RandomBytes(rng, 3);
  Ct2ModelBinContents contents;
  contents.spec_name = "TransformerSpec";
  contents.spec_revision = 3;
  contents.variables = {{"enc/w", Ct2Dtype::kFloat16, {2, 3}, w},
                        {"enc/b", Ct2Dtype::kInt8, {3}, b}};
  contents.aliases = {{"dec/w", "enc/w"}};
  Layout expected;
  expected.Header(2)
      .Variable("enc/w", {2, 3}, 4, 12, w)
      .Variable("enc/b", {3}, 1, 3, b)
      .U32(1)
      .Str("dec/w")
      .Str("enc/w");
  EXPECT_EQ(SerializeCt2ModelBin(contents).value(), expected.bytes());

  // Version 3: item size and element count instead of the dtype id and byte count.
  contents.binary_version = 3;
  contents.variables = {{"enc/w", Ct2Dtype::kInt16, {2, 3}, w}};
  Layout old;
  old.Header(1, 3).Str("enc/w").U8(2).U32(2).U32(3).U8(2).U32(6).Raw(w);
  old.U32(1).Str("dec/w").Str("enc/w");
  EXPECT_EQ(SerializeCt2ModelBin(contents).value(), old.bytes());
}

TEST_F(Ct2ModelBinTest, DataPointsIntoTheMappingAndSurvivesAMove) {
  std::mt19937 rng(11);
  Ct2ModelBinContents contents;
  contents.variables = {RandomVariable(rng, "x", Ct2Dtype::kFloat32),
                        RandomVariable(rng, "y", Ct2Dtype::kBFloat16)};
  const std::string bytes = SerializeCt2ModelBin(contents).value();
  absl::StatusOr<Ct2ModelBin> opened = OpenBytes(bytes);
  ASSERT_TRUE(opened.ok()) << opened.status();
  const std::byte* before = opened->variables()[1].data.data();
  Ct2ModelBin model = *std::move(opened);
  for (const Ct2Variable& v : model.variables()) {
    EXPECT_EQ(AsString(v.data), bytes.substr(v.file_offset, v.data.size()));
  }
  EXPECT_EQ(model.variables()[1].data.data(), before);  // No copy was made.
  ExpectVariables(model, contents.variables);
}

TEST_F(Ct2ModelBinTest, AliasesStandForTheTargetsScaleAndZero) {
  std::mt19937 rng(12);
  Ct2ModelBinContents contents;
  contents.variables = {RandomVariable(rng, "enc/w", Ct2Dtype::kInt8),
                        RandomVariable(rng, "enc/w_scale", Ct2Dtype::kFloat32),
                        RandomVariable(rng, "own/w_scale", Ct2Dtype::kFloat32)};
  contents.aliases = {{"dec/w", "enc/w"}, {"own/w", "enc/w"}};
  absl::StatusOr<Ct2ModelBin> model = OpenContents(contents);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->Find("dec/w"), model->Find("enc/w"));
  EXPECT_EQ(model->Find("dec/w_scale"), model->Find("enc/w_scale"));
  EXPECT_EQ(model->Find("dec/w_zero"), nullptr);  // The target has none.
  // A variable of the companion's name wins over the implied alias, as in CTranslate2.
  EXPECT_EQ(model->Find("own/w_scale")->name, "own/w_scale");
  EXPECT_EQ(model->aliases().size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// The writer refuses what the reader would, or what the version cannot store.

TEST_F(Ct2ModelBinTest, WriterRefusesWhatTheFormatCannotHold) {
  std::mt19937 rng(13);
  const Ct2NamedVariable f32 = RandomVariable(rng, "w", Ct2Dtype::kFloat32);
  auto refused = [](Ct2ModelBinContents c, std::string_view fragment) {
    absl::StatusOr<std::string> out = SerializeCt2ModelBin(c);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << fragment;
    EXPECT_THAT(std::string(out.status().message()), HasSubstr(std::string(fragment)));
  };
  refused({7, "", 1, {f32}, {}}, "binary version 7");
  refused({1, "Spec", 1, {f32}, {}}, "no spec name");
  refused({2, "", 1, {f32}, {{"a", "w"}}}, "no aliases");
  refused({3, "", 1, {{"h", Ct2Dtype::kFloat16, {1}, "xy"}}, {}}, "only float32, int16 and int8");
  refused({6, "", 1, {f32, f32}, {}}, "appears twice");
  refused({6, "", 1, {{"", Ct2Dtype::kInt8, {1}, "x"}}, {}}, "empty name");
  refused({6, "", 1, {{std::string("a\0b", 3), Ct2Dtype::kInt8, {1}, "x"}}, {}}, "NUL");
  refused({6, "", 1, {{std::string(70000, 'n'), Ct2Dtype::kInt8, {1}, "x"}}, {}}, "u16 length");
  refused({6, "", 1, {{"w", Ct2Dtype::kInt8, {2}, "x"}}, {}}, "got 1 bytes");
  refused({6, "", 1, {{"w", Ct2Dtype::kInt8, {-1}, ""}}, {}}, "bad shape dimension -1");
  refused({6, "", 1, {{"w", Ct2Dtype::kInt8, std::vector<int64_t>(9, 1), "x"}}, {}}, "rank 9");
  refused({6, "", 1, {{"w", static_cast<Ct2Dtype>(6), {1}, "x"}}, {}}, "unknown dtype id 6");
  refused({6, "", 1, {f32}, {{"w", "w"}}}, "taken");
  refused({6, "", 1, {f32}, {{"a", "missing"}}}, "does not resolve");
  refused({6, "", 1, {f32}, {{"a", "b"}, {"b", "a"}}}, "does not resolve");
}

// ---------------------------------------------------------------------------------------------
// Hostile files, one violation at a time.

TEST_F(Ct2ModelBinTest, MissingAndEmptyFiles) {
  EXPECT_EQ(Ct2ModelBin::Open((dir_ / "absent.bin").string()).status().code(),
            absl::StatusCode::kNotFound);
  ExpectError(OpenBytes("").status(), absl::StatusCode::kDataLoss,
              {"truncated at byte 0", "binary version"});
}

TEST_F(Ct2ModelBinTest, UnknownVersionsAreRefusedByNumber) {
  for (uint32_t version : {0u, 7u, 42u, 0xFFFFFFFFu}) {
    Layout file;
    file.Header(0, version);
    ExpectError(OpenBytes(file.bytes()).status(), absl::StatusCode::kInvalidArgument,
                {absl::StrCat("version ", version, " is not supported"), "1 to 6"});
  }
}

TEST_F(Ct2ModelBinTest, EveryTruncationIsRefused) {
  std::mt19937 rng(14);
  Ct2ModelBinContents contents;
  contents.spec_name = "TransformerSpec";
  contents.variables = {{"s", Ct2Dtype::kFloat32, {}, RandomBytes(rng, 4)},
                        {"enc/w", Ct2Dtype::kInt8, {2, 3}, RandomBytes(rng, 6)},
                        {"enc/w_scale", Ct2Dtype::kFloat16, {2}, RandomBytes(rng, 4)}};
  contents.aliases = {{"dec/w", "enc/w"}, {"dec/v", "dec/w"}};
  const std::string bytes = SerializeCt2ModelBin(contents).value();
  ASSERT_TRUE(OpenBytes(bytes).ok());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    SCOPED_TRACE(n);
    ExpectError(OpenBytes(bytes.substr(0, n)).status(), absl::StatusCode::kDataLoss, {});
  }
  ExpectError(OpenBytes(bytes + "x").status(), absl::StatusCode::kDataLoss,
              {absl::StrCat("byte ", bytes.size()), "1 bytes follow the last record"});
}

TEST_F(Ct2ModelBinTest, ByteCountMustMatchTheShape) {
  std::mt19937 rng(15);
  const std::string data = RandomBytes(rng, 8);
  Layout lying;
  lying.Header(1).Variable("enc/w", {3}, 0, 8, data).U32(0);
  ExpectError(OpenBytes(lying.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"variable 0 \"enc/w\"", "holds 8 bytes but shape [3] of float32 needs 12"});
  // A count that matches the shape but not the file.
  Layout beyond;
  beyond.Header(1).Variable("enc/w", {1000, 1000}, 0, 4000000, data);
  ExpectError(OpenBytes(beyond.bytes()).status(), absl::StatusCode::kDataLoss,
              {"\"enc/w\" data needs 4000000 bytes"});
  // Version 3 counts elements: a count that disagrees with the shape.
  Layout old;
  old.Header(1, 3).Str("w").U8(1).U32(4).U8(2).U32(3).Raw(RandomBytes(rng, 6)).U32(0);
  ExpectError(OpenBytes(old.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"holds 6 bytes but shape [4] of int16 needs 8"});
}

TEST_F(Ct2ModelBinTest, UnknownDtypesAreRefused) {
  for (int id : {6, 7, 255}) {
    Layout file;
    file.Header(1).Variable("w", {1}, id, 4, "abcd").U32(0);
    ExpectError(OpenBytes(file.bytes()).status(), absl::StatusCode::kInvalidArgument,
                {absl::StrCat("unknown dtype id ", id)});
  }
  for (int size : {0, 3, 8}) {
    Layout file;
    file.Header(1, 3).Str("w").U8(1).U32(1).U8(size).U32(1).Raw("abcdefgh").U32(0);
    ExpectError(OpenBytes(file.bytes()).status(), absl::StatusCode::kInvalidArgument,
                {absl::StrCat("unknown item size ", size)});
  }
}

TEST_F(Ct2ModelBinTest, AbsurdRankIsRefused) {
  Layout file;
  file.Header(1).Str("w").U8(100);
  for (int d = 0; d < 100; ++d) file.U32(1);
  file.U8(0).U32(4).Raw("abcd").U32(0);
  ExpectError(OpenBytes(file.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"\"w\"", "rank 100 exceeds the limit of 8"});
}

TEST_F(Ct2ModelBinTest, HugeShapesAreRefused) {
  // 8 dimensions of 2^32 - 1 overflow 64 bits.
  Layout overflow;
  overflow.Header(1).Variable("w", std::vector<uint32_t>(8, 0xFFFFFFFFu), 0, 4, "abcd").U32(0);
  ExpectError(OpenBytes(overflow.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"overflows 64-bit size arithmetic"});
  // 16 GiB fits 64 bits but not the 32-bit byte count.
  Layout big;
  big.Header(1).Variable("w", {65536, 65536}, 0, 0xFFFFFFFFu, "abcd").U32(0);
  ExpectError(OpenBytes(big.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"holds 4294967295 bytes but shape [65536, 65536] of float32 needs 17179869184"});
}

TEST_F(Ct2ModelBinTest, CountsBeyondTheFileAreRefusedBeforeReserving) {
  Layout variables;
  variables.Header(0xFFFFFFFFu);
  ExpectError(OpenBytes(variables.bytes()).status(), absl::StatusCode::kDataLoss,
              {"variable count 4294967295 cannot fit"});
  Layout aliases;
  aliases.Header(0).U32(0xFFFFFFFFu);
  ExpectError(OpenBytes(aliases.bytes()).status(), absl::StatusCode::kDataLoss,
              {"alias count 4294967295 cannot fit"});
}

TEST_F(Ct2ModelBinTest, StringsMustBeWithinTheFileAndNulTerminated) {
  Layout beyond;
  beyond.Header(1).U16(65535).Raw("a name cut short");
  ExpectError(OpenBytes(beyond.bytes()).status(), absl::StatusCode::kDataLoss,
              {"variable 0 name needs 65535 bytes"});
  Layout zero;
  zero.Header(1).U16(0).Raw("padding so the count fits");
  ExpectError(OpenBytes(zero.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"string length 0"});
  Layout unterminated;
  unterminated.U32(6).U16(4).Raw("Spec").U32(1).U32(0).U32(0);
  ExpectError(OpenBytes(unterminated.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"spec name", "does not end in NUL"});
  Layout inner;
  inner.Header(1).U16(4).Raw(std::string("a\0b\0", 4)).Raw("padding so the count fits");
  ExpectError(OpenBytes(inner.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"holds a NUL at position 1"});
  Layout empty;
  empty.Header(1).Variable("", {1}, 1, 1, "x").U32(0);
  ExpectError(OpenBytes(empty.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"empty name"});
}

TEST_F(Ct2ModelBinTest, DuplicateVariableNamesAreRefused) {
  Layout file;
  file.Header(2).Variable("w", {1}, 1, 1, "x").Variable("w", {1}, 1, 1, "y").U32(0);
  ExpectError(OpenBytes(file.bytes()).status(), absl::StatusCode::kInvalidArgument,
              {"variable 1 \"w\"", "already variable 0's"});
}

TEST_F(Ct2ModelBinTest, AliasesMustResolveToAVariable) {
  auto with_aliases = [](std::initializer_list<std::pair<std::string, std::string>> aliases) {
    Layout file;
    file.Header(1).Variable("w", {1}, 1, 1, "x").U32(aliases.size());
    for (const auto& [alias, target] : aliases) file.Str(alias).Str(target);
    return file.bytes();
  };
  ExpectError(OpenBytes(with_aliases({{"a", "missing"}})).status(),
              absl::StatusCode::kInvalidArgument,
              {"alias 0 \"a\"", "target \"missing\" is neither a variable nor an alias"});
  ExpectError(OpenBytes(with_aliases({{"a", "b"}, {"b", "c"}, {"c", "a"}})).status(),
              absl::StatusCode::kInvalidArgument, {"cycle: a -> b -> c -> a"});
  ExpectError(OpenBytes(with_aliases({{"a", "a"}})).status(), absl::StatusCode::kInvalidArgument,
              {"cycle: a -> a"});
  ExpectError(OpenBytes(with_aliases({{"w", "w"}})).status(), absl::StatusCode::kInvalidArgument,
              {"the name is a variable's"});
  ExpectError(OpenBytes(with_aliases({{"a", "w"}, {"a", "w"}})).status(),
              absl::StatusCode::kInvalidArgument, {"alias 1 \"a\"", "already alias 0's"});
  ExpectError(OpenBytes(with_aliases({{"", "w"}})).status(), absl::StatusCode::kInvalidArgument,
              {"empty name"});
  // Out of order and chained is fine: every alias ends at "w".
  absl::StatusOr<Ct2ModelBin> model = OpenBytes(with_aliases({{"a", "b"}, {"b", "c"}, {"c", "w"}}));
  ASSERT_TRUE(model.ok()) << model.status();
  for (const char* alias : {"a", "b", "c"}) EXPECT_EQ(model->aliases().at(alias), "w");
}

// ---------------------------------------------------------------------------------------------
// Robustness: seeded corruptions must give an error or a file whose variables all lie inside it
// with the size their shape says, never a crash or an out-of-bounds read (run under
// -fsanitize=address to make the latter visible).

TEST_F(Ct2ModelBinTest, RandomCorruptionsNeverCrash) {
  std::mt19937 rng(20261205);
  Ct2ModelBinContents contents;
  contents.spec_name = "TransformerSpec";
  for (int i = 0; i < 6; ++i) {
    contents.variables.push_back(RandomVariable(rng, absl::StrCat("v", i), kEveryDtype[i]));
  }
  contents.aliases = {{"a0", "v0"}, {"a1", "a0"}};
  const std::string bytes = SerializeCt2ModelBin(contents).value();
  int accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string corrupt = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) corrupt[rng() % corrupt.size()] = static_cast<char>(rng());
    absl::StatusOr<Ct2ModelBin> model = OpenBytes(corrupt);
    if (!model.ok()) continue;
    ++accepted;
    for (const Ct2Variable& v : model->variables()) {
      uint64_t elements = 1;
      for (int64_t d : v.shape) elements *= static_cast<uint64_t>(d);
      EXPECT_EQ(v.data.size(), elements * Ct2DtypeSize(v.dtype));
      EXPECT_LE(v.file_offset + v.data.size(), corrupt.size());
      EXPECT_EQ(AsString(v.data), corrupt.substr(v.file_offset, v.data.size()));
    }
    for (const auto& [alias, target] : model->aliases()) EXPECT_NE(model->Find(alias), nullptr);
  }
  // Flipping data bytes keeps the file valid, so some corruptions must be accepted.
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace transerve
