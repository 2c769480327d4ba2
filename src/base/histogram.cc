#include "folio/histogram.h"

#include <bit>

namespace folio {

// Values 0..3 get buckets 0..3. A value v >= 4 with highest bit h (h >= 2) falls in group h,
// sub-bucket given by the two bits below the highest: bucket = 4 * (h - 1) + sub.
int Histogram::BucketFor(uint64_t value) {
  if (value < 4) return static_cast<int>(value);
  int h = 63 - std::countl_zero(value);
  int sub = static_cast<int>((value >> (h - 2)) & 3);
  return 4 * (h - 1) + sub;
}

uint64_t Histogram::BucketLow(int bucket) {
  if (bucket < 4) return static_cast<uint64_t>(bucket);
  int h = bucket / 4 + 1;
  uint64_t sub = static_cast<uint64_t>(bucket % 4);
  return (uint64_t{1} << h) | (sub << (h - 2));
}

uint64_t Histogram::BucketHigh(int bucket) {
  if (bucket < 4) return static_cast<uint64_t>(bucket);
  int h = bucket / 4 + 1;
  return BucketLow(bucket) + (uint64_t{1} << (h - 2)) - 1;
}

void Histogram::Record(uint64_t value) {
  counts_[BucketFor(value)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  uint64_t prev = max_.load(std::memory_order_relaxed);
  while (value > prev && !max_.compare_exchange_weak(prev, value, std::memory_order_relaxed)) {
  }
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot s;
  for (int i = 0; i < kBuckets; ++i) {
    s.counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.count += s.counts[i];
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  s.max = max_.load(std::memory_order_relaxed);
  return s;
}

void Histogram::Reset() {
  for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  max_.store(0, std::memory_order_relaxed);
}

uint64_t HistogramSnapshot::Percentile(double q) const {
  if (count == 0) return 0;
  if (q >= 1.0) return max;
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count));
  if (rank >= count) rank = count - 1;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts[i];
    if (seen > rank) {
      uint64_t hi = Histogram::BucketHigh(i);
      return hi < max ? hi : max;
    }
  }
  return max;
}

std::vector<HistogramSnapshot::Bucket> HistogramSnapshot::NonEmpty() const {
  std::vector<Bucket> out;
  for (int i = 0; i < kBuckets; ++i) {
    if (counts[i]) out.push_back({Histogram::BucketLow(i), Histogram::BucketHigh(i), counts[i]});
  }
  return out;
}

void HistogramSnapshot::Merge(const HistogramSnapshot& other) {
  for (int i = 0; i < kBuckets; ++i) counts[i] += other.counts[i];
  count += other.count;
  sum += other.sum;
  if (other.max > max) max = other.max;
}

}  // namespace folio
