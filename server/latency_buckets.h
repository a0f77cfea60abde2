// The buckets of every request-duration histogram (gRPC and HTTP alike): 1 ms to 30 s.
#pragma once

#include <prometheus/histogram.h>

namespace transerve {

inline prometheus::Histogram::BucketBoundaries SecondsBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

}  // namespace transerve
