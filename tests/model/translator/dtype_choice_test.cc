// dtype=auto on the CPU: the rule per kernel level, the quality check's sources, auto on the
// shipped model (int8, check passed), a model whose int8 rounding destroys it (falls back and
// says why), and explicit dtypes (loaded as asked, never checked). Prints the check's figures
// for every model it loads: the calibration of docs/engine.md, "dtype=auto".
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "model/loader/safetensors.h"
#include "model/loader/safetensors_writer.h"
#include "model/ops/ops.h"
#include "model/translator/auto_dtype.h"
#include "model/translator/quality_check.h"
#include "model/translator/translator.h"
#include "tests/model/translator/fixtures.h"
#include "tests/testing/paths.h"

namespace transerve {
namespace {

namespace fs = std::filesystem;
using ops::WeightFormat;

const std::string kShippedModel = testing::SourceDir() + "/models/en-de-small";

bool StartsWith(const std::string& s, const std::string& prefix) { return s.starts_with(prefix); }
bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

absl::StatusOr<std::unique_ptr<Translator>> Load(const std::string& dir, const std::string& dtype,
                                                 bool with_tokenizer = true) {
  return Translator::Create(
      {.model_dir = dir, .device = "cpu", .dtype = dtype, .with_tokenizer = with_tokenizer});
}

// The model's name: its directory's, or its parent's for a fixture (.../tiny-marian/model).
std::string ModelName(const std::string& dir) {
  const fs::path path(dir);
  return (path.filename() == "model" ? path.parent_path().filename() : path.filename()).string();
}

// The check of `dtype` against float32 on `dir`, printed.
QualityCheck CheckOf(const std::string& dir, const std::string& dtype) {
  auto candidate = Load(dir, dtype, /*with_tokenizer=*/false);
  auto reference = Load(dir, "float32", /*with_tokenizer=*/false);
  EXPECT_TRUE(candidate.ok() && reference.ok()) << dir;
  if (!candidate.ok() || !reference.ok()) return {};
  auto check = RunQualityCheck(**candidate, **reference);
  EXPECT_TRUE(check.ok()) << check.status();
  if (!check.ok()) return {};
  std::printf("quality check %s %s at %s: %s -> %s\n", ModelName(dir).c_str(), dtype.c_str(),
              ops::CpuIsa().c_str(), check->Describe().c_str(),
              check->passed() ? "passed" : "failed");
  return *check;
}

class DtypeChoiceTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(ops::SetCpuIsa(ops::SupportedCpuIsas().back()).ok()); }
};

// int8 first at every level (the fastest at each, measured: docs/engine.md), bfloat16 as the
// fallback only where vdpbf16ps runs it, float32 last.
TEST(AutoCpuDtypes, Int8AtEveryLevelThenBfloat16WhereNativeThenFloat32) {
  using F = std::vector<WeightFormat>;
  EXPECT_EQ(AutoCpuDtypesFor("avx512_bf16").formats,
            (F{WeightFormat::kInt8, WeightFormat::kBFloat16, WeightFormat::kFloat32}));
  for (const char* level : {"avx512_vnni", "avx512", "avx2"}) {
    EXPECT_EQ(AutoCpuDtypesFor(level).formats, (F{WeightFormat::kInt8, WeightFormat::kFloat32}))
        << level;
  }
  EXPECT_EQ(AutoCpuDtypesFor("sse2").formats, (F{WeightFormat::kFloat32}));
  for (const char* level : {"avx2", "avx512", "avx512_vnni", "avx512_bf16", "sse2"}) {
    const AutoCpuDtypes plan = AutoCpuDtypesFor(level);
    EXPECT_EQ(plan.formats.back(), WeightFormat::kFloat32) << level;
    EXPECT_TRUE(StartsWith(plan.reason, level)) << plan.reason;
  }
}

TEST(QualityCheckSources, SeededOrdinaryTokensOfTheStatedLengthsThenEos) {
  const int32_t pad = 718, eos = 0, start = 718;
  const auto sources = QualityCheckSources(719, pad, eos, start);
  EXPECT_EQ(sources, QualityCheckSources(719, pad, eos, start));
  ASSERT_EQ(sources.size(), static_cast<size_t>(kQualityCheckSentences));
  std::set<size_t> lengths;
  for (const auto& s : sources) {
    const size_t pieces = s.size() - 1;
    lengths.insert(pieces);
    EXPECT_GE(pieces, static_cast<size_t>(kQualityCheckMinPieces));
    EXPECT_LE(pieces, static_cast<size_t>(kQualityCheckMaxPieces));
    EXPECT_EQ(s.back(), eos);
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      EXPECT_TRUE(s[i] > 0 && s[i] < 718) << s[i];
    }
  }
  EXPECT_GT(lengths.size(), 4u) << "lengths should vary";
  EXPECT_NE(QualityCheckSources(8000, 7999, 0, 7999), sources);
}

TEST_F(DtypeChoiceTest, AutoOnTheShippedModelIsInt8WithTheCheckPassedAtEveryLevel) {
  for (const std::string& level : ops::SupportedCpuIsas()) {
    ASSERT_TRUE(ops::SetCpuIsa(level).ok());
    auto t = Load(kShippedModel, "auto");
    ASSERT_TRUE(t.ok()) << t.status();
    std::printf("%s: %s\n", level.c_str(), (*t)->dtype_choice().c_str());
    EXPECT_EQ((*t)->dtype(), "int8");
    EXPECT_TRUE(StartsWith((*t)->dtype_choice(), "auto: int8 (" + level + ": "))
        << (*t)->dtype_choice();
    EXPECT_TRUE(Contains((*t)->dtype_choice(), "; int8 check passed: top-1 agreement "))
        << (*t)->dtype_choice();
    auto replica = (*t)->CreateReplica();
    ASSERT_TRUE(replica.ok());
    EXPECT_EQ((*replica)->dtype_choice(), (*t)->dtype_choice());
    // The model auto keeps is the int8 model an explicit int8 loads, bit for bit.
    auto asked = Load(kShippedModel, "int8");
    ASSERT_TRUE(asked.ok()) << asked.status();
    const std::vector<std::string> texts = {"Open the file.", "The window cannot be closed now."};
    DecodingOptions o;
    o.beam_size = 2;
    auto a = (*t)->Translate(texts, o);
    auto b = (*asked)->Translate(texts, o);
    ASSERT_TRUE(a.ok() && b.ok());
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ((*a)[i].best.ids, (*b)[i].best.ids);
      EXPECT_EQ((*a)[i].best.score, (*b)[i].best.score);
    }
  }
}

// The shipped model with, in every FFN, a few hidden units made dead (their fc1 row and bias 0,
// so their activation is exactly 0 in every format) and given outgoing weights of 60000: float32
// and bfloat16 compute the same model as without those units, but int8's per-row scales of fc2
// become 60000/127, so every other fc2 weight rounds to 0 and the FFNs are gone.
class DegenerateModelTest : public DtypeChoiceTest {
 protected:
  static constexpr int kDeadUnits[] = {3, 100, 517, 900};
  static constexpr float kOutlier = 60000.0f;

  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("transerve-degenerate-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const auto& entry : fs::directory_iterator(kShippedModel)) {
      if (entry.path().filename() != "model.safetensors")
        fs::copy_file(entry.path(), dir_ / entry.path().filename());
    }
    auto file = SafetensorsFile::Open(std::string(kShippedModel) + "/model.safetensors");
    ASSERT_TRUE(file.ok()) << file.status();
    std::vector<NamedTensor> tensors;
    for (const std::string& name : file->Names()) {
      const SafetensorsTensorInfo& info = *file->Find(name);
      auto values = file->ReadAsFloat32(name);
      ASSERT_TRUE(values.ok()) << values.status();
      NamedTensor t{.name = name, .dtype = "F32", .shape = info.shape, .values = *values};
      const int64_t cols = info.shape.size() == 2 ? info.shape[1] : 1;
      for (int unit : kDeadUnits) {
        if (name.ends_with(".fc1.weight")) {
          std::fill_n(t.values.begin() + unit * cols, cols, 0.0f);
        } else if (name.ends_with(".fc1.bias")) {
          t.values[unit] = 0.0f;
        } else if (name.ends_with(".fc2.weight")) {
          for (int64_t row = 0; row < info.shape[0]; ++row) t.values[row * cols + unit] = kOutlier;
        }
      }
      tensors.push_back(std::move(t));
    }
    ASSERT_TRUE(
        WriteSafetensors((dir_ / "model.safetensors").string(), tensors, file->metadata()).ok());
  }
  void TearDown() override {
    fs::remove_all(dir_);
    DtypeChoiceTest::TearDown();
  }
  fs::path dir_;
};

TEST_F(DegenerateModelTest, Int8FailsTheCheckWhileFloat32AndBfloat16StayTheModel) {
  // The copy in float32 is still the shipped model to the check's eye (4 of 1024 units gone).
  auto copy = Load(dir_.string(), "float32");
  auto shipped = Load(kShippedModel, "float32");
  ASSERT_TRUE(copy.ok() && shipped.ok());
  auto same = RunQualityCheck(**copy, **shipped);
  ASSERT_TRUE(same.ok()) << same.status();
  std::printf("degenerate float32 against the shipped float32: %s\n", same->Describe().c_str());
  EXPECT_TRUE(same->passed()) << same->Describe();
  EXPECT_TRUE(CheckOf(dir_.string(), "bfloat16").passed());
  EXPECT_FALSE(CheckOf(dir_.string(), "int8").passed());
}

// bfloat16 where avx512_bf16 runs it, float32 at every other level.
TEST_F(DegenerateModelTest, AutoFallsBackAndSaysWhy) {
  for (const std::string& level : ops::SupportedCpuIsas()) {
    ASSERT_TRUE(ops::SetCpuIsa(level).ok());
    auto t = Load(dir_.string(), "auto");
    ASSERT_TRUE(t.ok()) << t.status();
    const std::string& choice = (*t)->dtype_choice();
    std::printf("%s: %s\n", level.c_str(), choice.c_str());
    EXPECT_TRUE(Contains(choice, "; int8 check failed: top-1 agreement ")) << choice;
    if (level == "avx512_bf16") {
      EXPECT_EQ((*t)->dtype(), "bfloat16");
      EXPECT_TRUE(StartsWith(choice, "auto: bfloat16 (avx512_bf16: ")) << choice;
      EXPECT_TRUE(Contains(choice, "; bfloat16 check passed: ")) << choice;
    } else {
      EXPECT_EQ((*t)->dtype(), "float32");
      EXPECT_TRUE(StartsWith(choice, "auto: float32 (" + level + ": ")) << choice;
      EXPECT_FALSE(Contains(choice, "bfloat16 check")) << choice;
    }
  }
}

TEST_F(DegenerateModelTest, AnExplicitDtypeIsLoadedAsAskedWithoutACheck) {
  for (const std::string dtype : {"int8", "bfloat16", "float32"}) {
    auto t = Load(dir_.string(), dtype);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ((*t)->dtype(), dtype);
    EXPECT_EQ((*t)->dtype_choice(), dtype + " (asked)");
  }
}

// The calibration figures of docs/engine.md: the shipped model must pass in int8 and bfloat16;
// the random fixtures' figures are printed whatever they are, as are those of the models in
// TRANSERVE_QUALITY_CHECK_MODELS (colon-separated directories, e.g. the opus-mt-en-de shape).
TEST_F(DtypeChoiceTest, ShippedModelPassesInEveryLowPrecisionFormat) {
  // float32 against itself: every position agrees, exactly.
  const QualityCheck self = CheckOf(kShippedModel, "float32");
  EXPECT_EQ(self.agreements, self.positions);
  EXPECT_EQ(self.mean_abs_log_prob_difference, 0.0);
  EXPECT_TRUE(CheckOf(kShippedModel, "int8").passed());
  EXPECT_TRUE(CheckOf(kShippedModel, "bfloat16").passed());
  std::vector<std::string> others;
  for (const char* name : testing::kFixtureNames) others.push_back(testing::FixtureModelDir(name));
  if (const char* extra = std::getenv("TRANSERVE_QUALITY_CHECK_MODELS")) {
    for (auto dir : absl::StrSplit(extra, ':', absl::SkipEmpty())) others.emplace_back(dir);
  }
  for (const std::string& dir : others) {
    for (const char* dtype : {"int8", "bfloat16"}) CheckOf(dir, dtype);
  }
}

}  // namespace
}  // namespace transerve
