// Histogram: a fixed-size, lock-free histogram of non-negative 64-bit values (request sizes in
// bytes, latencies in nanoseconds) with power-of-two buckets split into 4 linear sub-buckets,
// so percentiles are within 25% of the true value; the maximum is exact.
//
// Thread safety: Record() may run concurrently from any thread (relaxed atomics). Snapshot()
// may run concurrently with Record(); it sees each counter at some recent value.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace folio {

struct HistogramSnapshot {
  static constexpr int kBuckets = 4 * 63;  // highest bit 63 -> bucket 251
  std::array<uint64_t, kBuckets> counts{};
  uint64_t count = 0;
  uint64_t sum = 0;
  uint64_t max = 0;

  // Value at quantile q in [0, 1] (upper bound of the bucket holding it; exact max for q = 1).
  uint64_t Percentile(double q) const;
  double Mean() const { return count ? static_cast<double>(sum) / static_cast<double>(count) : 0; }
  // Non-empty buckets as (lower bound, upper bound inclusive, count).
  struct Bucket {
    uint64_t lo, hi, count;
  };
  std::vector<Bucket> NonEmpty() const;
  // Adds other's counts into this one.
  void Merge(const HistogramSnapshot& other);
};

class Histogram {
 public:
  static constexpr int kBuckets = HistogramSnapshot::kBuckets;
  static int BucketFor(uint64_t value);
  static uint64_t BucketLow(int bucket);
  static uint64_t BucketHigh(int bucket);

  void Record(uint64_t value);
  HistogramSnapshot Snapshot() const;
  void Reset();

 private:
  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> max_{0};
};

}  // namespace folio
