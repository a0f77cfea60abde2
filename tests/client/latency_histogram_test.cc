// The load generator's histogram against exact order statistics of random samples.
#include "client/loadgen/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace transerve {
namespace {

double Exact(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(p / 100 * v.size())));
  return v[rank - 1];
}

TEST(LatencyHistogram, PercentilesWithinTheResolutionOfExactOrderStatistics) {
  std::mt19937 rng(5);
  std::lognormal_distribution<double> seconds(std::log(0.05), 1.2);  // 50 ms median, long tail
  std::vector<double> values;
  LatencyHistogram h;
  for (int i = 0; i < 200000; ++i) {
    values.push_back(seconds(rng));
    h.Record(values.back());
  }
  EXPECT_EQ(h.count(), 200000);
  EXPECT_NEAR(h.min(), *std::min_element(values.begin(), values.end()), 1e-6);
  EXPECT_NEAR(h.max(), *std::max_element(values.begin(), values.end()), 1e-6);
  double sum = 0;
  for (double v : values) sum += v;
  EXPECT_NEAR(h.mean(), sum / values.size(), 1e-9 * sum);
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99}) {
    const double want = Exact(values, p);
    // 512 sub-buckets per power of two: within 0.2%, plus the 1 µs quantum.
    EXPECT_NEAR(h.Percentile(p), want, want * 0.002 + 1e-6) << "p" << p;
  }
  EXPECT_EQ(h.Percentile(100), h.max());
  EXPECT_EQ(h.Percentile(0), h.Percentile(1e-9));
}

TEST(LatencyHistogram, SmallValuesAreExactToTheMicrosecond) {
  LatencyHistogram h;
  std::mt19937 rng(6);
  std::uniform_int_distribution<int> micros(0, 1023);
  std::vector<double> values;
  for (int i = 0; i < 5000; ++i) {
    values.push_back(micros(rng) * 1e-6);
    h.Record(values.back());
  }
  for (double p : {5.0, 50.0, 95.0}) EXPECT_NEAR(h.Percentile(p), Exact(values, p), 1e-9);
}

TEST(LatencyHistogram, MergeEqualsRecordingEverythingInOne) {
  std::mt19937 rng(7);
  std::exponential_distribution<double> seconds(20.0);
  LatencyHistogram a, b, all;
  for (int i = 0; i < 30000; ++i) {
    const double v = seconds(rng);
    (i % 3 == 0 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  for (double p : {50.0, 90.0, 99.0}) EXPECT_EQ(a.Percentile(p), all.Percentile(p));
}

TEST(LatencyHistogram, EmptyReportsZeros) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.Percentile(50), 0.0);
  EXPECT_EQ(h.max(), 0.0);
  EXPECT_EQ(h.min(), 0.0);
}

}  // namespace
}  // namespace transerve
