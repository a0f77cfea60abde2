// Tests for the safetensors reader and writer: exact dtype conversions against naive references,
// one test per header validation rule, and seeded corruptions that must fail cleanly.
#include "model/loader/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/loader/safetensors_writer.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Naive references, written from the IEEE definitions rather than bit tricks.

// Exact value of a binary16 pattern (double holds every half exactly). NaN is reported as NaN.
double RefHalfValue(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v;
  if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);  // 0.mant * 2^-14
  } else {
    v = std::ldexp(static_cast<double>(1024 + mant), exp - 25);  // 1.mant * 2^(exp-15)
  }
  return sign ? -v : v;
}

double RefBFloat16Value(uint16_t b) {
  const int sign = b >> 15, exp = (b >> 7) & 255, mant = b & 127;
  double v;
  if (exp == 255) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -133);  // 0.mant * 2^-126
  } else {
    v = std::ldexp(static_cast<double>(128 + mant), exp - 134);  // 1.mant * 2^(exp-127)
  }
  return sign ? -v : v;
}

// Round-to-nearest-even by searching the sorted table of every non-negative finite value of the
// format; the first infinity pattern stands for the next power of two, which is how IEEE decides
// overflow (halfway to it and beyond rounds to infinity, ties going to its even pattern).
class RefRounder {
 public:
  RefRounder(double (*value_of)(uint16_t), uint16_t inf_bits, double inf_stand_in) {
    for (uint32_t b = 0; b < inf_bits; ++b)
      table_.push_back({value_of(static_cast<uint16_t>(b)), b});
    table_.push_back({inf_stand_in, inf_bits});
  }
  uint16_t Round(float x) const {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(x));
    if (a >= table_.back().first) return sign | static_cast<uint16_t>(table_.back().second);
    auto hi = std::lower_bound(table_.begin(), table_.end(), std::make_pair(a, 0u));
    if (hi->first == a) return sign | static_cast<uint16_t>(hi->second);
    auto lo = hi - 1;
    const double dl = a - lo->first, dh = hi->first - a;
    uint32_t bits;
    if (dl < dh) {
      bits = lo->second;
    } else if (dh < dl) {
      bits = hi->second;
    } else {
      bits = (lo->second & 1) == 0 ? lo->second : hi->second;
    }
    return sign | static_cast<uint16_t>(bits);
  }

 private:
  std::vector<std::pair<double, uint32_t>> table_;
};

const RefRounder& HalfRounder() {
  static const RefRounder r(RefHalfValue, 0x7C00, 65536.0);
  return r;
}
const RefRounder& BFloat16Rounder() {
  static const RefRounder r(RefBFloat16Value, 0x7F80, std::ldexp(1.0, 128));
  return r;
}

// Expected float32 bits for a NaN half/bfloat16: same sign, payload shifted into the top bits.
uint32_t HalfNanAsFloatBits(uint16_t h) {
  return (static_cast<uint32_t>(h & 0x8000) << 16) | 0x7F800000u |
         (static_cast<uint32_t>(h & 0x3FF) << 13);
}

// ---------------------------------------------------------------------------------------------
// File helpers.

std::string U64LE(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

// A file from hand-written header text: length prefix, header (space-padded to 8 unless told
// otherwise) and data.
std::string BuildFile(std::string_view header, std::string_view data, bool pad = true) {
  std::string h(header);
  if (pad) h.append((8 - h.size() % 8) % 8, ' ');
  return U64LE(h.size()) + h + std::string(data);
}

std::string RandomBytes(std::mt19937& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(1 + rng() % 255);  // Never zero: zeros hide bugs.
  return s;
}

// Random non-zero floats spanning many magnitudes, both signs.
std::vector<float> RandomFloats(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> mant(0.5f, 1.0f);
  std::uniform_int_distribution<int> exp(-30, 30);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(mant(rng), exp(rng)) * (rng() & 1 ? 1.0f : -1.0f);
  return v;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("transerve_safetensors_", info->name(), "_", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string PathOf(const std::string& name) const { return (dir_ / name).string(); }

  std::string WriteBytes(const std::string& name, std::string_view bytes) const {
    const std::string path = PathOf(name);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(out.good());
    return path;
  }

  // Writes `header` with `data_size` random bytes of data and opens it.
  absl::StatusOr<SafetensorsFile> OpenHeader(std::string_view header, size_t data_size) {
    std::mt19937 rng(7);
    path_ = WriteBytes("t.safetensors", BuildFile(header, RandomBytes(rng, data_size)));
    return SafetensorsFile::Open(path_);
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

// ---------------------------------------------------------------------------------------------
// Conversions.

TEST(HalfConversion, EveryPatternMatchesReference) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float got = HalfToFloat(h);
    const double want = RefHalfValue(h);
    if (std::isnan(want)) {
      EXPECT_EQ(std::bit_cast<uint32_t>(got), HalfNanAsFloatBits(h)) << std::hex << i;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << std::hex << i;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << std::hex << i;
    }
  }
}

TEST(BFloat16Conversion, EveryPatternMatchesReference) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto b = static_cast<uint16_t>(i);
    const float got = BFloat16ToFloat(b);
    const double want = RefBFloat16Value(b);
    if (std::isnan(want)) {
      EXPECT_EQ(std::bit_cast<uint32_t>(got), static_cast<uint32_t>(i) << 16) << std::hex << i;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << std::hex << i;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << std::hex << i;
    }
  }
}

// Floats that stress rounding: exact midpoints between neighbours, values next to them, the
// overflow threshold, the subnormal range, plus random bit patterns.
std::vector<float> RoundingProbes(double (*value_of)(uint16_t), uint16_t inf_bits,
                                  std::mt19937& rng) {
  std::vector<float> probes;
  for (uint32_t b = 0; b + 1 < inf_bits; b += 7) {
    const double mid =
        (value_of(static_cast<uint16_t>(b)) + value_of(static_cast<uint16_t>(b + 1))) / 2;
    const float f = static_cast<float>(mid);
    if (static_cast<double>(f) == mid) probes.push_back(f);  // Exact tie in float.
    probes.push_back(std::nextafter(f, 0.0f));
    probes.push_back(std::nextafter(f, std::numeric_limits<float>::infinity()));
    probes.push_back(static_cast<float>(value_of(static_cast<uint16_t>(b))));
  }
  for (int i = 0; i < 200000; ++i) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (!std::isnan(f)) probes.push_back(f);
  }
  probes.push_back(std::numeric_limits<float>::max());
  probes.push_back(std::numeric_limits<float>::infinity());
  probes.push_back(std::numeric_limits<float>::denorm_min());
  probes.push_back(-0.0f);
  probes.push_back(65504.0f);
  probes.push_back(65519.99f);
  probes.push_back(65520.0f);
  probes.push_back(std::ldexp(1.0f, -25));  // Tie between 0 and the smallest half subnormal.
  probes.push_back(std::ldexp(1.5f, -25));
  std::vector<float> negated;
  for (float f : probes) negated.push_back(-f);
  probes.insert(probes.end(), negated.begin(), negated.end());
  return probes;
}

TEST(HalfConversion, FloatToHalfRoundsToNearestEven) {
  std::mt19937 rng(11);
  for (float f : RoundingProbes(RefHalfValue, 0x7C00, rng)) {
    ASSERT_EQ(FloatToHalf(f), HalfRounder().Round(f))
        << f << " bits " << std::hex << std::bit_cast<uint32_t>(f);
  }
}

TEST(BFloat16Conversion, FloatToBFloat16RoundsToNearestEven) {
  std::mt19937 rng(12);
  for (float f : RoundingProbes(RefBFloat16Value, 0x7F80, rng)) {
    ASSERT_EQ(FloatToBFloat16(f), BFloat16Rounder().Round(f))
        << f << " bits " << std::hex << std::bit_cast<uint32_t>(f);
  }
}

TEST(HalfConversion, NanStaysNanWithSign) {
  for (uint32_t payload : {1u, 0x1000u, 0x400000u, 0x7FFFFFu}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const float nan = std::bit_cast<float>(sign | 0x7F800000u | payload);
      ASSERT_TRUE(std::isnan(nan));
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(nan))));
      EXPECT_EQ(std::signbit(HalfToFloat(FloatToHalf(nan))), sign != 0);
      EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(nan))));
      EXPECT_EQ(std::signbit(BFloat16ToFloat(FloatToBFloat16(nan))), sign != 0);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips through files.

TEST_F(SafetensorsTest, RoundTripsF32Exactly) {
  std::mt19937 rng(1);
  std::vector<NamedTensor> tensors = {
      {"model.shared.weight", "F32", {7, 5}, RandomFloats(rng, 35), ""},
      {"final_logits_bias", "F32", {1, 7}, RandomFloats(rng, 7), ""},
      {"scalar", "F32", {}, RandomFloats(rng, 1), ""},
  };
  tensors[0].values[3] = std::numeric_limits<float>::denorm_min();
  tensors[0].values[4] = -std::numeric_limits<float>::infinity();
  const std::string path = PathOf("f32.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"note", "hello"}}).ok());

  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->path(), path);
  EXPECT_THAT(file->Names(),
              ::testing::ElementsAre("final_logits_bias", "model.shared.weight", "scalar"));
  EXPECT_EQ(file->metadata(),
            (std::map<std::string, std::string>{{"format", "pt"}, {"note", "hello"}}));
  for (const NamedTensor& t : tensors) {
    const SafetensorsTensorInfo* info = file->Find(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->name, t.name);
    EXPECT_EQ(info->dtype, "F32");
    EXPECT_EQ(info->shape, t.shape);
    EXPECT_EQ(info->end - info->begin, 4 * t.values.size());
    absl::StatusOr<std::vector<float>> values = file->ReadAsFloat32(t.name);
    ASSERT_TRUE(values.ok()) << values.status();
    ASSERT_EQ(values->size(), t.values.size());
    for (size_t i = 0; i < t.values.size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>((*values)[i]), std::bit_cast<uint32_t>(t.values[i]));
    }
  }
  EXPECT_EQ(file->Find("missing"), nullptr);
}

TEST_F(SafetensorsTest, RoundTripsF16AndBF16WithReferenceRounding) {
  std::mt19937 rng(2);
  std::vector<float> values = RandomFloats(rng, 4000);
  // Include the subnormal, overflow and special ranges of both formats.
  values.insert(values.end(), {std::ldexp(1.0f, -24), std::ldexp(3.0f, -26), 70000.0f, -65520.0f,
                               std::numeric_limits<float>::infinity(), 1e-40f, -3e38f});
  const std::vector<NamedTensor> tensors = {
      {"half", "F16", {4007}, values, ""},
      {"brain", "BF16", {4007}, values, ""},
  };
  const std::string path = PathOf("half.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, tensors, {}).ok());
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();

  struct Case {
    const char* name;
    const RefRounder& rounder;
    double (*value_of)(uint16_t);
  };
  for (const Case& c : {Case{"half", HalfRounder(), RefHalfValue},
                        Case{"brain", BFloat16Rounder(), RefBFloat16Value}}) {
    const SafetensorsTensorInfo* info = file->Find(c.name);
    ASSERT_NE(info, nullptr);
    const std::span<const uint8_t> raw = file->RawBytes(*info);
    ASSERT_EQ(raw.size(), 2 * values.size());
    absl::StatusOr<std::vector<float>> read = file->ReadAsFloat32(c.name);
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(read->size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t stored = static_cast<uint16_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
      const uint16_t want = c.rounder.Round(values[i]);
      ASSERT_EQ(stored, want) << c.name << " value " << values[i];
      ASSERT_EQ(static_cast<double>((*read)[i]), c.value_of(want)) << c.name << " " << i;
    }
  }
}

TEST_F(SafetensorsTest, EveryF16AndBF16PatternReadsExactly) {
  std::string data;
  for (uint32_t i = 0; i < 65536; ++i)
    data += {static_cast<char>(i & 0xFF), static_cast<char>(i >> 8)};
  const std::string both = data + data;
  path_ = WriteBytes(
      "all.safetensors",
      BuildFile(R"({"h":{"dtype":"F16","shape":[65536],"data_offsets":[0,131072]},)"
                R"("b":{"dtype":"BF16","shape":[256,256],"data_offsets":[131072,262144]}})",
                both));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path_);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<std::vector<float>> h = file->ReadAsFloat32("h");
  absl::StatusOr<std::vector<float>> b = file->ReadAsFloat32("b");
  ASSERT_TRUE(h.ok() && b.ok());
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto bits = static_cast<uint16_t>(i);
    if (std::isnan(RefHalfValue(bits))) {
      EXPECT_EQ(std::bit_cast<uint32_t>((*h)[i]), HalfNanAsFloatBits(bits));
    } else {
      EXPECT_EQ(static_cast<double>((*h)[i]), RefHalfValue(bits));
      EXPECT_EQ(std::signbit((*h)[i]), (i & 0x8000) != 0);
    }
    EXPECT_EQ(std::bit_cast<uint32_t>((*b)[i]), i << 16);
  }
}

TEST_F(SafetensorsTest, ReadsUnalignedData) {
  // Header of odd length, unpadded, and a 2-byte tensor first: the F32 data sits at an odd file
  // offset that is not a multiple of 4.
  const float values[3] = {1.5f, -2.25f, 3.0e-3f};
  std::string f32(reinterpret_cast<const char*>(values), sizeof(values));
  std::string data = std::string("\x00\x3c", 2) + f32;  // F16 1.0, then the floats.
  std::string header = R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},)"
                       R"("b":{"dtype":"F32","shape":[3],"data_offsets":[2,14]}})";
  if (header.size() % 2 == 0) header += ' ';
  ASSERT_NE((8 + header.size() + 2) % 4, 0u);
  path_ = WriteBytes("unaligned.safetensors", BuildFile(header, data, /*pad=*/false));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path_);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(*file->ReadAsFloat32("a"), ::testing::ElementsAre(1.0f));
  EXPECT_THAT(*file->ReadAsFloat32("b"), ::testing::ElementsAre(1.5f, -2.25f, 3.0e-3f));
}

TEST_F(SafetensorsTest, ScalarsAndEmptyTensors) {
  // Zero-size tensors may share an offset; a scalar has shape [] and one element.
  absl::StatusOr<SafetensorsFile> file =
      OpenHeader(R"({"e1":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},)"
                 R"("e2":{"dtype":"F16","shape":[4,0],"data_offsets":[0,0]},)"
                 R"("s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                 R"("e3":{"dtype":"BF16","shape":[0],"data_offsets":[4,4]}})",
                 4);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->num_tensors(), 4u);
  EXPECT_TRUE(file->ReadAsFloat32("e1")->empty());
  EXPECT_TRUE(file->ReadAsFloat32("e2")->empty());
  EXPECT_TRUE(file->ReadAsFloat32("e3")->empty());
  EXPECT_EQ(file->ReadAsFloat32("s")->size(), 1u);
  EXPECT_TRUE(file->Find("s")->shape.empty());
}

TEST_F(SafetensorsTest, EmptyHeaderAndNoData) {
  absl::StatusOr<SafetensorsFile> file = OpenHeader("{}", 0);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(file->Names().empty());
  EXPECT_TRUE(file->metadata().empty());
}

TEST_F(SafetensorsTest, AcceptsAnyKeyOrderAndIgnoresUnknownEntryFields) {
  absl::StatusOr<SafetensorsFile> file = OpenHeader(
      R"({"z":{"data_offsets":[8,12],"shape":[1],"dtype":"F32","extra":[1,{"x":2}]},)"
      R"("__metadata__":{"format":"pt"},"a":{"shape":[2],"dtype":"F32","data_offsets":[0,8]}})",
      12);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(file->Names(), ::testing::ElementsAre("a", "z"));
}

TEST_F(SafetensorsTest, NullMetadataIsAbsent) {
  absl::StatusOr<SafetensorsFile> file = OpenHeader(R"({"__metadata__":null})", 0);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(file->metadata().empty());
}

TEST_F(SafetensorsTest, SubByteDtypesValidateInBits) {
  // F4 packs two elements a byte: 4 elements = 2 bytes is fine, 3 is not a whole byte.
  EXPECT_TRUE(OpenHeader(R"({"q":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}})", 2).ok());
  ExpectError(OpenHeader(R"({"q":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2).status(),
              absl::StatusCode::kInvalidArgument, {"\"q\"", "whole number of bytes"});
}

TEST_F(SafetensorsTest, MovedFileStaysUsable) {
  std::mt19937 rng(3);
  const std::vector<float> v = RandomFloats(rng, 6);
  const std::string path = PathOf("m.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {{"w", "F32", {2, 3}, v, ""}}, {}).ok());
  absl::StatusOr<SafetensorsFile> opened = SafetensorsFile::Open(path);
  ASSERT_TRUE(opened.ok());
  const SafetensorsTensorInfo* info = opened->Find("w");
  SafetensorsFile moved(std::move(*opened));
  EXPECT_EQ(moved.Find("w"), info);  // Map nodes travel with the move.
  EXPECT_EQ(*moved.ReadAsFloat32("w"), v);
  SafetensorsFile assigned = *SafetensorsFile::Open(path);
  assigned = std::move(moved);  // Unmaps the old mapping, takes the new one.
  EXPECT_EQ(*assigned.ReadAsFloat32("w"), v);
  std::vector<SafetensorsFile> many;
  for (int i = 0; i < 5; ++i) many.push_back(*SafetensorsFile::Open(path));  // Reallocation moves.
  for (const SafetensorsFile& f : many) EXPECT_EQ(*f.ReadAsFloat32("w"), v);
}

TEST_F(SafetensorsTest, NonFloatDtypeCannotBeReadAsFloat) {
  const std::string path = PathOf("ints.safetensors");
  path_ = path;
  ASSERT_TRUE(WriteSafetensors(path, {{"ids", "I64", {2}, {}, std::string(16, '\x01')}}, {}).ok());
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->Find("ids")->dtype, "I64");
  ExpectError(file->ReadAsFloat32("ids").status(), absl::StatusCode::kInvalidArgument,
              {"\"ids\"", "I64"});
  ExpectError(file->ReadAsFloat32("nope").status(), absl::StatusCode::kNotFound, {"\"nope\""});
}

// ---------------------------------------------------------------------------------------------
// File-level errors.

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  path_ = PathOf("absent.safetensors");
  ExpectError(SafetensorsFile::Open(path_).status(), absl::StatusCode::kNotFound, {});
}

TEST_F(SafetensorsTest, DirectoryIsRejected) {
  path_ = dir_.string();
  ExpectError(SafetensorsFile::Open(path_).status(), absl::StatusCode::kInvalidArgument,
              {"regular file"});
}

TEST_F(SafetensorsTest, FilesShorterThanTheLengthPrefixAreDataLoss) {
  for (size_t n : {0, 1, 7}) {
    path_ = WriteBytes("short.safetensors", std::string(n, '\x02'));
    ExpectError(SafetensorsFile::Open(path_).status(), absl::StatusCode::kDataLoss, {"too short"});
  }
}

TEST_F(SafetensorsTest, HeaderLengthOverLimit) {
  for (uint64_t n : {uint64_t{100'000'001}, std::numeric_limits<uint64_t>::max()}) {
    path_ = WriteBytes("big.safetensors", U64LE(n) + "{}      ");
    ExpectError(SafetensorsFile::Open(path_).status(), absl::StatusCode::kInvalidArgument,
                {"header length", "limit"});
  }
}

TEST_F(SafetensorsTest, HeaderLengthLargerThanFile) {
  for (uint64_t n : {uint64_t{9}, uint64_t{100'000'000}}) {
    path_ = WriteBytes("long.safetensors", U64LE(n) + "{}      ");
    ExpectError(SafetensorsFile::Open(path_).status(), absl::StatusCode::kDataLoss,
                {"runs past the end"});
  }
}

TEST_F(SafetensorsTest, TruncatedFileIsDataLoss) {
  std::mt19937 rng(4);
  const std::string path = PathOf("full.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {{"w", "F32", {16}, RandomFloats(rng, 16), ""}}, {}).ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  path_ = WriteBytes("cut.safetensors", bytes.substr(0, bytes.size() - 5));
  ExpectError(SafetensorsFile::Open(path_).status(), absl::StatusCode::kDataLoss,
              {"cover 64 bytes", "truncated"});
  path_ = WriteBytes("extra.safetensors", bytes + "xyz");
  ExpectError(SafetensorsFile::Open(path_).status(), absl::StatusCode::kDataLoss, {"trailing"});
}

// ---------------------------------------------------------------------------------------------
// Header rules, one violation at a time.

TEST_F(SafetensorsTest, HeaderMustBeUtf8) {
  for (std::string bad :
       {std::string("\xff"), std::string("\xc0\xaf"),                 // invalid, overlong
        std::string("\xed\xa0\x80"),                                  // surrogate
        std::string("\xf4\x90\x80\x80"), std::string("\xe2\x82")}) {  // >U+10FFFF, cut
    ExpectError(OpenHeader(R"({"__metadata__":{"k":")" + bad + R"("}})", 0).status(),
                absl::StatusCode::kInvalidArgument, {"UTF-8"});
  }
  // Valid multi-byte names pass.
  EXPECT_TRUE(
      OpenHeader("{\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\":{\"dtype\":\"U8\",\"shape\":[1],"
                 "\"data_offsets\":[0,1]}}",
                 1)
          .ok());
}

TEST_F(SafetensorsTest, HeaderMustStartWithBrace) {
  for (std::string_view h : {R"( {"a":1})", "[]", "\"x\"", ""}) {
    ExpectError(OpenHeader(h, 0).status(), absl::StatusCode::kInvalidArgument,
                {"does not start with '{'"});
  }
}

TEST_F(SafetensorsTest, TrailingWhitespaceIsAllowedButNotTrailingText) {
  EXPECT_TRUE(OpenHeader("{}        \n", 0).ok());
  ExpectError(OpenHeader("{} x", 0).status(), absl::StatusCode::kInvalidArgument,
              {"invalid JSON", "line 1, column 4"});
}

TEST_F(SafetensorsTest, BadJsonNamesThePosition) {
  ExpectError(OpenHeader("{\"a\":\n {\"dtype\": }}", 0).status(),
              absl::StatusCode::kInvalidArgument, {"header", "invalid JSON at line 2, column 12"});
  ExpectError(OpenHeader("{\"a\":", 0).status(), absl::StatusCode::kInvalidArgument,
              {"invalid JSON"});
}

TEST_F(SafetensorsTest, EntryMustBeAnObject) {
  ExpectError(OpenHeader(R"({"w":[1,2]})", 0).status(), absl::StatusCode::kInvalidArgument,
              {"\"w\"", "must be an object"});
}

TEST_F(SafetensorsTest, EachFieldIsRequired) {
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    nlohmann::json entry = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}};
    entry.erase(field);
    const nlohmann::json header = {{"weight.x", entry}};
    ExpectError(OpenHeader(header.dump(), 4).status(), absl::StatusCode::kInvalidArgument,
                {"\"weight.x\"", absl::StrCat("missing \"", field, "\"")});
  }
}

TEST_F(SafetensorsTest, UnknownOrMistypedDtype) {
  for (const char* dtype : {"F31", "f32", "FLOAT", ""}) {
    const nlohmann::json header = {
        {"w", {{"dtype", dtype}, {"shape", {1}}, {"data_offsets", {0, 4}}}}};
    ExpectError(OpenHeader(header.dump(), 4).status(), absl::StatusCode::kInvalidArgument,
                {"\"w\"", "unknown dtype", absl::StrCat("\"", dtype, "\"")});
  }
  ExpectError(OpenHeader(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", 4).status(),
              absl::StatusCode::kInvalidArgument, {"\"w\"", "dtype must be a string"});
}

TEST_F(SafetensorsTest, ShapeMustBeNonNegativeIntegers) {
  for (const char* shape :
       {"5", "[-1]", "[2.5]", "[\"2\"]", "[null]", "[1e2]", "[18446744073709551616]"}) {
    ExpectError(
        OpenHeader(
            absl::StrCat(R"({"w":{"dtype":"F32","shape":)", shape, R"(,"data_offsets":[0,4]}})"), 4)
            .status(),
        absl::StatusCode::kInvalidArgument, {"\"w\"", "shape"});
  }
}

TEST_F(SafetensorsTest, DataOffsetsMustBeTwoNonNegativeIntegers) {
  for (const char* offsets : {"[0]", "[0,4,8]", "[-1,4]", "[0,4.0]", "{}", "[\"0\",4]"}) {
    ExpectError(
        OpenHeader(
            absl::StrCat(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":)", offsets, "}}"), 4)
            .status(),
        absl::StatusCode::kInvalidArgument, {"\"w\"", "data_offsets must be"});
  }
}

TEST_F(SafetensorsTest, EndBeforeBegin) {
  ExpectError(OpenHeader(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", 4).status(),
              absl::StatusCode::kInvalidArgument, {"\"w\"", "end before they begin"});
}

TEST_F(SafetensorsTest, SizeMustMatchShapeTimesDtype) {
  ExpectError(
      OpenHeader(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20).status(),
      absl::StatusCode::kInvalidArgument, {"\"w\"", "span 20 bytes", "[2, 3]", "needs 24"});
  // Same byte count, wrong dtype size.
  ExpectError(OpenHeader(R"({"w":{"dtype":"F16","shape":[6],"data_offsets":[0,24]}})", 24).status(),
              absl::StatusCode::kInvalidArgument, {"\"w\"", "needs 12"});
}

TEST_F(SafetensorsTest, SizeArithmeticOverflowIsAnError) {
  ExpectError(OpenHeader(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,2],)"
                         R"("data_offsets":[0,4]}})",
                         4)
                  .status(),
              absl::StatusCode::kInvalidArgument, {"\"w\"", "overflow"});
  // The element count fits; times 64 bits does not.
  ExpectError(OpenHeader(R"({"w":{"dtype":"F64","shape":[2305843009213693952],)"
                         R"("data_offsets":[0,8]}})",
                         8)
                  .status(),
              absl::StatusCode::kInvalidArgument, {"\"w\"", "overflow"});
}

TEST_F(SafetensorsTest, GapAtStartOrBetweenTensors) {
  ExpectError(OpenHeader(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8).status(),
              absl::StatusCode::kInvalidArgument, {"\"w\"", "gap", "[0, 4)"});
  ExpectError(OpenHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[6,10]}})",
                         10)
                  .status(),
              absl::StatusCode::kInvalidArgument, {"\"b\"", "gap", "[4, 6)"});
}

TEST_F(SafetensorsTest, OverlappingTensors) {
  ExpectError(OpenHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         8)
                  .status(),
              absl::StatusCode::kInvalidArgument, {"\"b\"", "overlap", "\"a\""});
  // Two tensors over the same bytes.
  ExpectError(OpenHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                         4)
                  .status(),
              absl::StatusCode::kInvalidArgument, {"overlap"});
}

TEST_F(SafetensorsTest, LastEndMustReachEndOfFile) {
  ExpectError(OpenHeader(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 3).status(),
              absl::StatusCode::kDataLoss, {"cover 4 bytes", "holds 3"});
  ExpectError(OpenHeader(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 5).status(),
              absl::StatusCode::kDataLoss, {"cover 4 bytes", "holds 5"});
}

TEST_F(SafetensorsTest, MetadataMustMapStringsToStrings) {
  ExpectError(OpenHeader(R"({"__metadata__":"pt"})", 0).status(),
              absl::StatusCode::kInvalidArgument, {"__metadata__ must be an object"});
  ExpectError(OpenHeader(R"({"__metadata__":{"format":"pt","n":1}})", 0).status(),
              absl::StatusCode::kInvalidArgument, {"__metadata__ entry \"n\"", "string"});
  ExpectError(OpenHeader(R"({"__metadata__":{"nested":{}}})", 0).status(),
              absl::StatusCode::kInvalidArgument, {"\"nested\""});
}

TEST_F(SafetensorsTest, DuplicateKeysAreRejected) {
  // Tensor names.
  ExpectError(OpenHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         8)
                  .status(),
              absl::StatusCode::kInvalidArgument, {"duplicate key \"a\""});
  // A field inside one entry.
  ExpectError(
      OpenHeader(R"({"w":{"dtype":"F32","shape":[1],"dtype":"F16","data_offsets":[0,4]}})", 4)
          .status(),
      absl::StatusCode::kInvalidArgument, {"duplicate key \"dtype\"", "/w"});
  // Metadata keys, and __metadata__ itself.
  ExpectError(OpenHeader(R"({"__metadata__":{"format":"pt","format":"tf"}})", 0).status(),
              absl::StatusCode::kInvalidArgument, {"duplicate key \"format\"", "/__metadata__"});
  ExpectError(OpenHeader(R"({"__metadata__":{},"__metadata__":{}})", 0).status(),
              absl::StatusCode::kInvalidArgument, {"duplicate key \"__metadata__\""});
  // Escapes that decode to the same name are the same key.
  ExpectError(OpenHeader(R"({"__metadata__":{"a":"1","\u0061":"2"}})", 0).status(),
              absl::StatusCode::kInvalidArgument, {"duplicate key \"a\""});
}

TEST_F(SafetensorsTest, DeepNestingIsRejectedWithoutCrashing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  ExpectError(OpenHeader(absl::StrCat(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],)"
                                      R"("x":)",
                                      deep, "}}"),
                         4)
                  .status(),
              absl::StatusCode::kInvalidArgument, {"nesting"});
}

// ---------------------------------------------------------------------------------------------
// Robustness: seeded corruptions must give an error or a file whose tensors all read, never a
// crash or an out-of-bounds read (run under -fsanitize=address to make the latter visible).

TEST_F(SafetensorsTest, RandomCorruptionsNeverCrash) {
  std::mt19937 rng(20240607);
  const std::vector<NamedTensor> tensors = {
      {"model.shared.weight", "F32", {6, 4}, RandomFloats(rng, 24), ""},
      {"model.encoder.layers.0.fc1.weight", "F16", {4, 3}, RandomFloats(rng, 12), ""},
      {"model.encoder.layers.0.fc1.bias", "BF16", {3}, RandomFloats(rng, 3), ""},
      {"scalar", "F32", {}, RandomFloats(rng, 1), ""},
      {"ids", "I32", {2}, {}, RandomBytes(rng, 8)},
  };
  absl::StatusOr<std::string> good = SerializeSafetensors(tensors, {{"source", "test"}});
  ASSERT_TRUE(good.ok()) << good.status();
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>((*good)[i]);
  const std::string json_chars = "{}[]\":,-0123456789.eE \\u";

  int opened = 0;
  for (int iter = 0; iter < 600; ++iter) {
    std::string bytes = *good;
    const int kind = iter % 6;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      switch (kind) {
        case 0:  // Flip bits anywhere.
          bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
          break;
        case 1:  // JSON-significant characters inside the header.
          bytes[8 + rng() % header_len] = json_chars[rng() % json_chars.size()];  // Size unchanged.
          break;
        case 2:  // Truncate.
          bytes.resize(rng() % bytes.size());
          break;
        case 3:  // Insert or delete bytes.
          if (rng() & 1) {
            bytes.insert(rng() % (bytes.size() + 1), 1 + rng() % 5, static_cast<char>(rng()));
          } else {
            bytes.erase(rng() % bytes.size(), 1 + rng() % 5);
          }
          break;
        case 4:  // Rewrite the length prefix.
          if (bytes.size() >= 8) {
            const uint64_t n = (rng() & 1) ? header_len + (rng() % 17) - 8
                                           : (static_cast<uint64_t>(rng()) << 32) | rng();
            bytes.replace(0, 8, U64LE(n));
          }
          break;
        case 5: {  // Corrupt digits: offsets and shapes become inconsistent.
          bytes[8 + rng() % header_len] = static_cast<char>('0' + rng() % 10);  // Size unchanged.
          break;
        }
      }
    }
    path_ = WriteBytes("fuzz.safetensors", bytes);
    absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path_);
    if (!file.ok()) {
      const absl::StatusCode code = file.status().code();
      EXPECT_TRUE(code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kDataLoss)
          << file.status();
      EXPECT_THAT(std::string(file.status().message()), HasSubstr(path_));
      continue;
    }
    ++opened;
    uint64_t total = 0;
    for (const std::string& name : file->Names()) {
      const SafetensorsTensorInfo* info = file->Find(name);
      ASSERT_NE(info, nullptr);
      // Touch every byte the reader claims is valid.
      for (uint8_t b : file->RawBytes(*info)) total += b;
      absl::StatusOr<std::vector<float>> values = file->ReadAsFloat32(name);
      if (values.ok()) {
        const uint64_t bits = SafetensorsDtypeBits(info->dtype);
        EXPECT_EQ(values->size() * bits / 8, info->end - info->begin);
      } else {
        EXPECT_EQ(values.status().code(), absl::StatusCode::kInvalidArgument);
      }
    }
    (void)total;
  }
  // Sanity: some mutations (e.g. flips inside tensor data) leave a valid file.
  EXPECT_GT(opened, 0);
}

}  // namespace
}  // namespace transerve
