// The packed products in every weight format at every instruction-set level this CPU has:
// against a reference written here from the formats' definitions (ops.h), bit for bit the same
// across levels, and independent of the other rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/ops/ops.h"
#include "tests/testing/random.h"

namespace transerve {
namespace {

using ops::WeightFormat;
using testing::RandomTensor;

constexpr WeightFormat kFormats[] = {WeightFormat::kFloat32, WeightFormat::kBFloat16,
                                     WeightFormat::kInt8};

// Restores the highest level when a test ends.
class LowPrecisionTest : public ::testing::TestWithParam<WeightFormat> {
 protected:
  void TearDown() override { ASSERT_TRUE(ops::SetCpuIsa(ops::SupportedCpuIsas().back()).ok()); }
};

float Bf16(float v) {  // nearest bfloat16, ties to even (the test's own rounding)
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  return std::bit_cast<float>(rounded);
}

struct Quantized {
  std::vector<int> q;
  double scale;
};
Quantized QuantizeRow(const float* v, int64_t n) {
  float max_abs = 0;
  for (int64_t i = 0; i < n; ++i) max_abs = std::max(max_abs, std::fabs(v[i]));
  Quantized out{std::vector<int>(n), max_abs / 127.0};
  for (int64_t i = 0; i < n; ++i)
    out.q[i] = static_cast<int>(std::nearbyint(v[i] * (127.0f / max_abs)));
  return out;
}

// y[r][c] as the format defines it, in double (int8: exact integer sums, then the scales).
std::vector<double> Reference(WeightFormat format, const Tensor& x, const Tensor& w,
                              const Tensor& bias) {
  const int64_t m = x.dim(0), k = x.dim(1), n = w.dim(0);
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r) {
    const float* xr = x.f32() + r * k;
    const Quantized qx = QuantizeRow(xr, k);
    for (int64_t c = 0; c < n; ++c) {
      const float* wc = w.f32() + c * k;
      double s = 0;
      if (format == WeightFormat::kInt8) {
        const Quantized qw = QuantizeRow(wc, k);
        int64_t sum = 0;
        for (int64_t i = 0; i < k; ++i) sum += int64_t{qx.q[i]} * qw.q[i];
        s = static_cast<double>(sum) * qx.scale * qw.scale;
      } else {
        for (int64_t i = 0; i < k; ++i) {
          s += format == WeightFormat::kBFloat16 ? double(Bf16(xr[i])) * Bf16(wc[i])
                                                 : double(xr[i]) * wc[i];
        }
      }
      y[r * n + c] = s + bias.f32()[c];
    }
  }
  return y;
}

// |error| allowed for y[r][c]: a float sum of K terms in sequence is within K * 2^-24 of the
// sum of their magnitudes (the int8 sums are exact; their float epilogue rounds twice).
double Slack(const Tensor& x, const Tensor& w, int64_t r, int64_t c) {
  const int64_t k = x.dim(1);
  double magnitude = 0;
  for (int64_t i = 0; i < k; ++i)
    magnitude += std::fabs(double(x.f32()[r * k + i]) * w.f32()[c * k + i]);
  return (static_cast<double>(k) + 2) * 0x1p-24 * magnitude + 1e-6;
}

TEST_P(LowPrecisionTest, MatchesTheFormatsDefinitionAtEveryLevel) {
  std::mt19937 rng(20);
  // 77 outputs: two whole panels and a partial one; K = 37 needs padding in every low format.
  for (int64_t k : {37, 64}) {
    const Tensor w = RandomTensor({77, k}, rng, 0.5f);
    const Tensor bias = RandomTensor({77}, rng);
    const ops::PackedMatrix packed = ops::PackMatrix(w, GetParam());
    for (const std::string& level : ops::SupportedCpuIsas()) {
      ASSERT_TRUE(ops::SetCpuIsa(level).ok());
      for (int64_t m : {1, 2, 3, 5, 6, 7, 12, 13, 31}) {  // every row block of every kernel
        const Tensor x = RandomTensor({m, k}, rng);
        Tensor y;
        ops::Linear(x, Tensor(), bias, Activation::kIdentity, &y, &packed);
        ASSERT_EQ(y.shape(), (std::vector<int64_t>{m, 77}));
        const std::vector<double> want = Reference(GetParam(), x, w, bias);
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t c = 0; c < 77; ++c) {
            ASSERT_NEAR(y.f32()[r * 77 + c], want[r * 77 + c], Slack(x, w, r, c))
                << level << " k " << k << " m " << m << " row " << r << " output " << c;
          }
        }
      }
    }
  }
}

TEST_P(LowPrecisionTest, EveryLevelGivesTheSameBitsAndRowsDoNotDependOnEachOther) {
  std::mt19937 rng(21);
  const Tensor w = RandomTensor({100, 520}, rng, 0.1f);
  const Tensor bias = RandomTensor({100}, rng);
  const ops::PackedMatrix packed = ops::PackMatrix(w, GetParam());
  const Tensor x = RandomTensor({29, 520}, rng, 3.0f);
  Tensor first;
  ops::Linear(x, Tensor(), bias, Activation::kSwish, &first, &packed);
  for (const std::string& level : ops::SupportedCpuIsas()) {
    ASSERT_TRUE(ops::SetCpuIsa(level).ok());
    Tensor all, one;
    ops::Linear(x, Tensor(), bias, Activation::kSwish, &all, &packed);
    ASSERT_EQ(std::memcmp(all.f32(), first.f32(), 29 * 100 * sizeof(float)), 0) << level;
    for (int64_t r = 0; r < 29; ++r) {
      ops::Linear(x.Rows(r, r + 1), Tensor(), bias, Activation::kSwish, &one, &packed);
      ASSERT_EQ(std::memcmp(one.f32(), all.f32() + r * 100, 100 * sizeof(float)), 0)
          << level << " row " << r;
    }
  }
}

TEST_P(LowPrecisionTest, UnpackedRowsAreTheStoredWeights) {
  std::mt19937 rng(22);
  const Tensor w = RandomTensor({45, 30}, rng);
  const ops::PackedMatrix packed = ops::PackMatrix(w, GetParam());
  std::vector<float> row(30);
  for (int64_t n = 0; n < 45; ++n) {
    ops::UnpackRow(packed, n, row.data());
    const Quantized q = QuantizeRow(w.f32() + n * 30, 30);
    for (int64_t i = 0; i < 30; ++i) {
      const float v = w.f32()[n * 30 + i];
      const double want = GetParam() == WeightFormat::kFloat32    ? v
                          : GetParam() == WeightFormat::kBFloat16 ? Bf16(v)
                                                                  : q.q[i] * q.scale;
      ASSERT_NEAR(row[i], want, 1e-6 * std::fabs(want)) << n << "," << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, LowPrecisionTest, ::testing::ValuesIn(kFormats),
                         [](const ::testing::TestParamInfo<WeightFormat>& info) {
                           return std::string(ops::WeightFormatName(info.param));
                         });

TEST(CpuIsa, NamesOnlyTheLevelsThisCpuHasAndRefusesOthers) {
  const std::vector<std::string> levels = ops::SupportedCpuIsas();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), "avx2");
  EXPECT_FALSE(ops::SetCpuIsa("sse2").ok());
  EXPECT_FALSE(ops::SetCpuIsa("").ok());
  for (const std::string& level : levels) {
    ASSERT_TRUE(ops::SetCpuIsa(level).ok());
    EXPECT_NE(ops::CpuKernelDescription().find("CPU kernels " + level + ":"), std::string::npos);
  }
}

}  // namespace
}  // namespace transerve
