#include "folio/histogram.h"

#include <algorithm>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace folio {
namespace {

TEST(HistogramTest, BucketsPartitionTheRange) {
  for (int b = 0; b + 1 < Histogram::kBuckets; ++b) {
    EXPECT_EQ(Histogram::BucketHigh(b) + 1, Histogram::BucketLow(b + 1)) << "bucket " << b;
  }
  for (uint64_t v : {0ull, 1ull, 3ull, 4ull, 5ull, 4095ull, 4096ull, 1ull << 40, ~0ull}) {
    int b = Histogram::BucketFor(v);
    EXPECT_LE(Histogram::BucketLow(b), v);
    EXPECT_GE(Histogram::BucketHigh(b), v);
  }
}

TEST(HistogramTest, PercentilesWithinABucketOfTheTruth) {
  uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Histogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 10000; ++i) {
    uint64_t v = rng() % 1000000;
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.count, values.size());
  EXPECT_EQ(s.max, values.back());
  for (double q : {0.5, 0.9, 0.99}) {
    uint64_t truth = values[static_cast<size_t>(q * values.size())];
    uint64_t est = s.Percentile(q);
    EXPECT_GE(est, truth);
    EXPECT_LE(est, truth + truth / 4 + 1);
  }
  EXPECT_EQ(s.Percentile(1.0), values.back());
}

TEST(HistogramTest, MergeAndReset) {
  Histogram a, b;
  a.Record(4096);
  b.Record(65536);
  b.Record(65536);
  HistogramSnapshot s = a.Snapshot();
  s.Merge(b.Snapshot());
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.max, 65536u);
  auto buckets = s.NonEmpty();
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].lo, 4096u);
  EXPECT_EQ(buckets[1].count, 2u);
  a.Reset();
  EXPECT_EQ(a.Snapshot().count, 0u);
}

}  // namespace
}  // namespace folio
