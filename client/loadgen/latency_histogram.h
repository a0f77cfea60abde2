// A log-linear latency histogram in the manner of HdrHistogram: constant memory whatever the
// number of samples, every recorded value kept to within 0.2% (1/512 of its power of two),
// mergeable. Values are seconds, resolved in microseconds from 1 µs to about 12 days.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace transerve {

class LatencyHistogram {
 public:
  LatencyHistogram();

  void Record(double seconds);  // negative values count as 0
  void Merge(const LatencyHistogram& other);

  int64_t count() const { return count_; }
  double min() const;   // exact; 0 when empty
  double max() const;   // exact; 0 when empty
  double mean() const;  // exact; 0 when empty
  // The value at percentile p (0..100): the smallest recorded value such that p% of the
  // samples are at or below it, to the histogram's precision; 0 when empty.
  double Percentile(double p) const;

 private:
  static constexpr int kSubBucketBits = 9;  // 512 sub-buckets per power of two
  static constexpr int64_t kSubBuckets = int64_t{1} << kSubBucketBits;
  static constexpr int kOctaves = 31;  // up to 2^(9+31) µs

  static size_t Index(int64_t micros);
  static double Midpoint(size_t index);  // seconds

  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  int64_t min_micros_ = INT64_MAX;
  int64_t max_micros_ = 0;
  double sum_seconds_ = 0;
};

}  // namespace transerve
