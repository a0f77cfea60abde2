#include "client/loadgen/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace transerve {

// Values below 2·kSubBuckets µs are counted exactly (one bucket per µs). Above, each power of
// two [2^e, 2^(e+1)) is split into kSubBuckets equal buckets of width 2^(e - kSubBucketBits).
LatencyHistogram::LatencyHistogram()
    : counts_(static_cast<size_t>(2 * kSubBuckets + kOctaves * kSubBuckets), 0) {}

size_t LatencyHistogram::Index(int64_t micros) {
  const uint64_t v = static_cast<uint64_t>(std::max<int64_t>(0, micros));
  if (v < static_cast<uint64_t>(2 * kSubBuckets)) return static_cast<size_t>(v);
  const int exponent = std::bit_width(v) - 1;   // v in [2^exponent, 2^(exponent+1))
  const int shift = exponent - kSubBucketBits;  // >= 1
  const uint64_t sub = (v >> shift) - static_cast<uint64_t>(kSubBuckets);  // 0..kSubBuckets-1
  return static_cast<size_t>(2 * kSubBuckets + (shift - 1) * kSubBuckets + sub);
}

double LatencyHistogram::Midpoint(size_t index) {
  if (index < static_cast<size_t>(2 * kSubBuckets)) return static_cast<double>(index) * 1e-6;
  const size_t rest = index - static_cast<size_t>(2 * kSubBuckets);
  const int shift = static_cast<int>(rest / kSubBuckets) + 1;
  const int64_t sub = static_cast<int64_t>(rest % kSubBuckets);
  const int64_t lower = (kSubBuckets + sub) << shift;
  const int64_t width = int64_t{1} << shift;
  return (static_cast<double>(lower) + static_cast<double>(width - 1) / 2.0) * 1e-6;
}

void LatencyHistogram::Record(double seconds) {
  const int64_t micros = seconds > 0 ? std::llround(seconds * 1e6) : 0;
  const size_t index = std::min(Index(micros), counts_.size() - 1);
  ++counts_[index];
  ++count_;
  min_micros_ = std::min(min_micros_, micros);
  max_micros_ = std::max(max_micros_, micros);
  sum_seconds_ += std::max(0.0, seconds);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  min_micros_ = std::min(min_micros_, other.min_micros_);
  max_micros_ = std::max(max_micros_, other.max_micros_);
  sum_seconds_ += other.sum_seconds_;
}

double LatencyHistogram::min() const { return count_ > 0 ? min_micros_ * 1e-6 : 0.0; }
double LatencyHistogram::max() const { return count_ > 0 ? max_micros_ * 1e-6 : 0.0; }
double LatencyHistogram::mean() const {
  return count_ > 0 ? sum_seconds_ / static_cast<double>(count_) : 0.0;
}

double LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0.0;
  const double clamped = std::clamp(p, 0.0, 100.0);
  const int64_t rank = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(clamped / 100.0 * static_cast<double>(count_))));
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(Midpoint(i), min(), max());
  }
  return max();
}

}  // namespace transerve
