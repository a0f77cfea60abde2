// Each dense primitive against a naive implementation on random data.
#include "model/ops/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/layers/transformer_weights.h"
#include "model/ops/cpu/vector_math.h"
#include "tests/testing/random.h"

namespace transerve {
namespace {

using testing::RandomTensor;

std::vector<float> NaiveMatmulTransB(const Tensor& a, const Tensor& b) {
  const int64_t m = a.dim(0), k = a.dim(1), n = b.dim(0);
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(a.f32()[i * k + p]) * b.f32()[j * k + p];
      c[i * n + j] = static_cast<float>(s);
    }
  }
  return c;
}

void ExpectClose(const float* got, const std::vector<float>& want, float rel, float abs) {
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], abs + rel * std::fabs(want[i])) << "element " << i;
  }
}

TEST(Gemm, MatchesNaiveWithTransposedAndPlainB) {
  std::mt19937 rng(1);
  const Tensor a = RandomTensor({7, 33}, rng);
  const Tensor bt = RandomTensor({19, 33}, rng);
  Tensor c;
  ops::Gemm(a, bt, /*trans_b=*/true, 1.0f, 0.0f, &c);
  ASSERT_EQ(c.shape(), (std::vector<int64_t>{7, 19}));
  const std::vector<float> want = NaiveMatmulTransB(a, bt);
  ExpectClose(c.f32(), want, 1e-5f, 1e-5f);

  // The same product with b stored [K, N], accumulated onto 2·c.
  Tensor b({33, 19});
  for (int64_t p = 0; p < 33; ++p)
    for (int64_t j = 0; j < 19; ++j) b.f32()[p * 19 + j] = bt.f32()[j * 33 + p];
  ops::Gemm(a, b, /*trans_b=*/false, 1.0f, 1.0f, &c);
  std::vector<float> twice(want);
  for (float& x : twice) x *= 2;
  ExpectClose(c.f32(), twice, 1e-5f, 1e-5f);
}

TEST(PackedLinear, MatchesNaiveForEveryRowBlockAndPartialPanels) {
  std::mt19937 rng(5);
  const Tensor w = RandomTensor({77, 40}, rng, 0.5f);  // 77 = two full panels and a partial one
  const Tensor bias = RandomTensor({77}, rng);
  const ops::PackedMatrix packed = ops::PackMatrix(w);
  for (int64_t m : {1, 2, 3, 5, 8, 13, 31}) {  // exercises the 8-, 4-, 2- and 1-row blocks
    const Tensor x = RandomTensor({m, 40}, rng);
    Tensor y;
    ops::Linear(x, w, bias, Activation::kSwish, &y, &packed);
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{m, 77}));
    std::vector<float> want = NaiveMatmulTransB(x, w);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < 77; ++j) {
        const double v = want[i * 77 + j] + bias.f32()[j];
        want[i * 77 + j] = static_cast<float>(v / (1 + std::exp(-v)));
      }
    ExpectClose(y.f32(), want, 2e-5f, 2e-5f);
  }
}

TEST(PackedLinear, RowResultDoesNotDependOnTheOtherRows) {
  std::mt19937 rng(6);
  const Tensor w = RandomTensor({64, 48}, rng);
  const ops::PackedMatrix packed = ops::PackMatrix(w);
  const Tensor x = RandomTensor({11, 48}, rng);
  Tensor all, one;
  ops::Linear(x, w, Tensor(), Activation::kIdentity, &all, &packed);
  for (int64_t r = 0; r < 11; ++r) {
    ops::Linear(x.Rows(r, r + 1), w, Tensor(), Activation::kIdentity, &one, &packed);
    for (int64_t j = 0; j < 64; ++j) ASSERT_EQ(one.f32()[j], all.f32()[r * 64 + j]);
  }
}

// A shortlist's rows, gathered from the packed bytes, give the same products bit for bit.
TEST(GatherRows, GivesTheSameColumnsBitForBitInEveryFormat) {
  std::mt19937 rng(7);
  for (ops::WeightFormat format :
       {ops::WeightFormat::kFloat32, ops::WeightFormat::kBFloat16, ops::WeightFormat::kInt8}) {
    const Tensor w = RandomTensor({150, 44}, rng, 0.5f);  // a partial last panel
    const ops::PackedMatrix packed = ops::PackMatrix(w, format);
    std::vector<int32_t> rows;
    for (int i = std::uniform_int_distribution<int>(1, 70)(rng); i > 0; --i) {
      rows.push_back(std::uniform_int_distribution<int32_t>(0, 149)(rng));
    }
    const ops::PackedMatrix gathered = ops::GatherRows(packed, rows);
    ASSERT_EQ(gathered.rows, static_cast<int64_t>(rows.size()));
    std::vector<float> a(44), b(44);
    for (size_t j = 0; j < rows.size(); ++j) {
      ops::UnpackRow(gathered, static_cast<int64_t>(j), a.data());
      ops::UnpackRow(packed, rows[j], b.data());
      ASSERT_EQ(a, b) << "row " << j;
    }
    for (int64_t m : {1, 3, 9}) {
      const Tensor x = RandomTensor({m, 44}, rng);
      Tensor all, some;
      ops::Linear(x, Tensor(), Tensor(), Activation::kIdentity, &all, &packed);
      ops::Linear(x, Tensor(), Tensor(), Activation::kIdentity, &some, &gathered);
      for (int64_t r = 0; r < m; ++r) {
        for (size_t j = 0; j < rows.size(); ++j) {
          ASSERT_EQ(some.f32()[r * static_cast<int64_t>(rows.size()) + j],
                    all.f32()[r * 150 + rows[j]])
              << "format " << static_cast<int>(format) << " row " << r << " column " << j;
        }
      }
    }
  }
  const ops::PackedMatrix packed = ops::PackMatrix(RandomTensor({8, 4}, rng));
  EXPECT_THROW(ops::GatherRows(packed, std::vector<int32_t>{8}), std::invalid_argument);
}

float NaiveActivation(Activation act, float x) {
  const double v = x;
  switch (act) {
    case Activation::kIdentity:
      return x;
    case Activation::kSwish:
      return static_cast<float>(v / (1 + std::exp(-v)));
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kGelu:
      return static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    case Activation::kGeluTanh:
      return static_cast<float>(0.5 * v *
                                (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  return x;
}

class LinearTest : public ::testing::TestWithParam<Activation> {};

TEST_P(LinearTest, MatchesNaiveBiasAndActivation) {
  std::mt19937 rng(2);
  const Tensor x = RandomTensor({5, 24}, rng);
  const Tensor w = RandomTensor({40, 24}, rng, 0.5f);
  const Tensor bias = RandomTensor({40}, rng);
  Tensor y;
  ops::Linear(x, w, bias, GetParam(), &y);
  std::vector<float> want = NaiveMatmulTransB(x, w);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 40; ++j)
      want[i * 40 + j] = NaiveActivation(GetParam(), want[i * 40 + j] + bias.f32()[j]);
  ExpectClose(y.f32(), want, 2e-5f, 2e-5f);
}

INSTANTIATE_TEST_SUITE_P(AllActivations, LinearTest,
                         ::testing::Values(Activation::kIdentity, Activation::kSwish,
                                           Activation::kRelu, Activation::kGelu,
                                           Activation::kGeluTanh));

TEST(FastExp, RelativeErrorBelowTwoUlpsOverTheUsefulRange) {
  for (float x = -87.0f; x <= 88.25f; x += 0.0137f) {
    const double want = std::exp(static_cast<double>(x));
    ASSERT_NEAR(ops::cpu::FastExp(x), want, 3e-7 * want) << x;
  }
  for (float x = -87.0f; x <= 88.25f; x += 0.0137f * 16) {
    const ops::cpu::Floats16 v = ops::cpu::FastExp16(
        ops::cpu::Splat(x) + ops::cpu::Floats16{0, 1e-3f, 2e-3f, 3e-3f, 4e-3f, 5e-3f, 6e-3f, 7e-3f,
                                                8e-3f, 9e-3f, 1e-2f, 0.011f, 0.012f, 0.013f, 0.014f,
                                                0.015f});
    for (int j = 0; j < ops::cpu::kLanes; ++j) {
      const double want = std::exp(static_cast<double>(x + 1e-3f * j));
      ASSERT_NEAR(v[j], want, 3e-7 * want) << x << " lane " << j;
    }
  }
  EXPECT_EQ(ops::cpu::FastExp16(ops::cpu::Splat(-1e30f))[0], 0.0f);
  EXPECT_EQ(ops::cpu::FastExp(-1e30f), 0.0f);
  EXPECT_EQ(ops::cpu::FastExp(-INFINITY), 0.0f);
  EXPECT_TRUE(std::isinf(ops::cpu::FastExp(100.0f)));
}

TEST(VectorMath, MaxAndSumOfExpOverRaggedLengths) {
  std::mt19937 rng(7);
  for (int64_t n : {1, 15, 16, 17, 255, 1000}) {
    const auto x = testing::RandomFloats(static_cast<size_t>(n), rng, 20.0f);
    double max_value = -INFINITY, sum = 0;
    for (float v : x) max_value = std::max<double>(max_value, v);
    for (float v : x) sum += std::exp(v - max_value);
    EXPECT_EQ(ops::cpu::MaxOf(x.data(), n), static_cast<float>(max_value));
    EXPECT_NEAR(ops::cpu::SumExp(x.data(), n, static_cast<float>(max_value)), sum, 1e-5 * sum);
  }
}

TEST(VectorMath, ExpOfNonPositiveScoresGivesTheGeneralFormsBits) {
  std::mt19937 rng(8);
  // A softmax's shifted scores, down past the clamp.
  const auto shifted = testing::RandomFloats(4096, rng, 100.0f);
  for (size_t i = 0; i < shifted.size(); i += ops::cpu::kLanes) {
    ops::cpu::Floats16 x = ops::cpu::LoadFloats16(shifted.data() + i);
    x = x > 0.0f ? -x : x;
    const ops::cpu::Floats16 want = ops::cpu::FastExp16(x);
    const ops::cpu::Floats16 got = ops::cpu::FastExpNonPositive16(x);
    for (int j = 0; j < ops::cpu::kLanes; ++j) ASSERT_EQ(got[j], want[j]) << x[j];
  }
  EXPECT_EQ(ops::cpu::FastExpNonPositive16(ops::cpu::Splat(-INFINITY))[0], 0.0f);
  EXPECT_EQ(ops::cpu::FastExpNonPositive16(ops::cpu::Splat(0.0f))[0], 1.0f);
}

// Rows of LayerNorm(x (+ r)) * g + b in double, for the norm ops' tests.
std::vector<float> NaiveLayerNorm(const Tensor& x, const Tensor* r, const Tensor& g,
                                  const Tensor& b, float eps) {
  const int64_t d = x.dim(-1), rows = x.numel() / d;
  std::vector<float> want(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < rows; ++i) {
    auto at = [&](int64_t j) {
      return static_cast<double>(x.f32()[i * d + j]) + (r ? r->f32()[i * d + j] : 0.0);
    };
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += at(j);
    mean /= static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) var += (at(j) - mean) * (at(j) - mean);
    var /= static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) {
      want[i * d + j] =
          static_cast<float>((at(j) - mean) / std::sqrt(var + eps) * g.f32()[j] + b.f32()[j]);
    }
  }
  return want;
}

TEST(AddLayerNorm, MatchesNaiveAndMayWriteInPlace) {
  std::mt19937 rng(3);
  const Tensor x = RandomTensor({6, 48}, rng, 3.0f);
  const Tensor r = RandomTensor({6, 48}, rng);
  const Tensor g = RandomTensor({48}, rng);
  const Tensor b = RandomTensor({48}, rng);
  const std::vector<float> want = NaiveLayerNorm(x, &r, g, b, 1e-5f);
  Tensor out;
  ops::AddLayerNorm(x, r, g, b, 1e-5f, &out);
  ExpectClose(out.f32(), want, 1e-5f, 1e-5f);
  Tensor in_place = Tensor::FromFloats(x.shape(), x.ToFloatVector());
  ops::AddLayerNorm(in_place, r, g, b, 1e-5f, &in_place);
  ExpectClose(in_place.f32(), want, 1e-5f, 1e-5f);
}

TEST(LayerNorm, MatchesNaiveAndMayWriteInPlace) {
  std::mt19937 rng(31);
  const Tensor x = RandomTensor({5, 40}, rng, 3.0f);
  const Tensor g = RandomTensor({40}, rng);
  const Tensor b = RandomTensor({40}, rng);
  const std::vector<float> want = NaiveLayerNorm(x, nullptr, g, b, 1e-6f);
  Tensor out;
  ops::LayerNorm(x, g, b, 1e-6f, &out);
  ExpectClose(out.f32(), want, 1e-5f, 1e-5f);
  Tensor in_place = Tensor::FromFloats(x.shape(), x.ToFloatVector());
  ops::LayerNorm(in_place, g, b, 1e-6f, &in_place);
  ExpectClose(in_place.f32(), want, 1e-5f, 1e-5f);
}

TEST(AddToLayerNorm, KeepsTheSumAndNormalisesItElsewhereOrInPlace) {
  std::mt19937 rng(32);
  const Tensor x = RandomTensor({7, 24}, rng, 2.0f);
  const Tensor r = RandomTensor({7, 24}, rng);
  const Tensor g = RandomTensor({24}, rng);
  const Tensor b = RandomTensor({24}, rng);
  const std::vector<float> want = NaiveLayerNorm(x, &r, g, b, 1e-5f);
  Tensor stream = Tensor::FromFloats(x.shape(), x.ToFloatVector());
  Tensor normed;
  ops::AddToLayerNorm(&stream, r, g, b, 1e-5f, &normed);
  ExpectClose(normed.f32(), want, 1e-5f, 1e-5f);
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(stream.f32()[i], x.f32()[i] + r.f32()[i]) << i;
  }
  Tensor in_place = Tensor::FromFloats(x.shape(), x.ToFloatVector());
  ops::AddToLayerNorm(&in_place, r, g, b, 1e-5f, &in_place);
  ExpectClose(in_place.f32(), want, 1e-5f, 1e-5f);
  const Tensor wrong = RandomTensor({7, 23}, rng);
  EXPECT_THROW(ops::AddToLayerNorm(&stream, wrong, g, b, 1e-5f, &normed), std::invalid_argument);
}

TEST(EmbedTokens, GathersScalesAndAddsPositions) {
  std::mt19937 rng(4);
  const Tensor table = RandomTensor({50, 16}, rng);
  const Tensor positions = RandomTensor({10, 16}, rng);
  const std::vector<int32_t> ids{7, 49, 0, 7};
  const std::vector<int32_t> pos{0, 1, 9, 3};
  Tensor out;
  ops::EmbedTokens(table, ids, pos, 4.0f, positions, &out);
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{4, 16}));
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 16; ++j)
      ASSERT_FLOAT_EQ(out.f32()[r * 16 + j],
                      table.f32()[ids[r] * 16 + j] * 4.0f + positions.f32()[pos[r] * 16 + j]);
  const std::vector<int32_t> bad{50};
  const std::vector<int32_t> zero{0};
  EXPECT_THROW(ops::EmbedTokens(table, bad, zero, 1.0f, positions, &out), std::out_of_range);
}

TEST(SinusoidalPositions, SinesThenCosinesComputedInDouble) {
  const Tensor t = SinusoidalPositions(40, 10);
  for (int pos = 0; pos < 40; ++pos) {
    for (int k = 0; k < 5; ++k) {
      const double angle = pos / std::pow(10000.0, 2.0 * k / 10);
      EXPECT_EQ(t.f32()[pos * 10 + k], static_cast<float>(std::sin(angle)));
      EXPECT_EQ(t.f32()[pos * 10 + 5 + k], static_cast<float>(std::cos(angle)));
    }
  }
  // Odd widths give the sine half the extra column.
  const Tensor odd = SinusoidalPositions(3, 5);
  EXPECT_EQ(odd.f32()[5 + 2], static_cast<float>(std::sin(1.0 / std::pow(10000.0, 4.0 / 5))));
  EXPECT_EQ(odd.f32()[5 + 3], static_cast<float>(std::cos(1.0)));
}

}  // namespace
}  // namespace transerve
