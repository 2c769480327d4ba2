// The aging benchmark (aging.h): the served share, and one short (mode, round) per mode on
// real files: the probes ask for large folios, compaction runs only when it is on.
#include "bench/aging.h"

#include <gtest/gtest.h>

#include <atomic>

#include "bench/datafile.h"

namespace folio::bench {
namespace {

TEST(AgingTest, ServedShareCountsOrdersFromMinOrder) {
  PageCacheStats s;
  EXPECT_EQ(ServedShare(s, 1), 1.0);  // nothing asked: nothing refused
  s.orders[0].requests = 100;         // order 0 never counts
  s.orders[0].fallbacks = 0;
  s.orders[4].requests = 10;
  s.orders[4].fallbacks = 5;
  s.orders[9].requests = 10;
  s.orders[9].fallbacks = 0;
  EXPECT_DOUBLE_EQ(ServedShare(s, 1), 0.75);
  EXPECT_DOUBLE_EQ(ServedShare(s, 9), 1.0);
  EXPECT_DOUBLE_EQ(ServedShare(s, 0), 0.75);
}

TEST(AgingTest, ShortRunsMeasureBothProbes) {
  Result<std::unique_ptr<BenchDir>> dir = BenchDir::Create(::testing::TempDir());
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  AgingConfig c;
  c.cache_bytes = 32ull << 20;
  c.seconds = 0.3;
  c.rounds = 1;
  c.json = true;  // no progress line
  std::atomic<bool> stop{false};
  for (const AgingMode& mode : {AgingMode{CompactionMode::kOff, false},
                                AgingMode{CompactionMode::kMigrate, true}}) {
    Result<AgingRun> r = RunAgingOnce(c, (*dir)->path(), mode, 0, &stop);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->mode, mode);
    EXPECT_GT(r->aging_ops, 0u);
    EXPECT_GT(r->before_requests, 0u);
    EXPECT_GT(r->after_requests, 0u);
    EXPECT_GE(r->after_share, 0.0);
    EXPECT_LE(r->after_share, 1.0);
    if (mode.compaction == CompactionMode::kOff) {
      EXPECT_EQ(r->aged.compact_attempts, 0u);
      EXPECT_EQ(r->aged.compact_background_blocks, 0u);
    }
  }
}

TEST(AgingTest, ModeNames) {
  EXPECT_EQ((AgingMode{CompactionMode::kOff, false}).Name(), "off");
  EXPECT_EQ((AgingMode{CompactionMode::kMigrate, true}).Name(), "migrate");
  EXPECT_EQ((AgingMode{CompactionMode::kMigrate, false}).Name(), "migrate-direct");
  EXPECT_EQ((AgingMode{CompactionMode::kEvict, true}).Name(), "evict");
}

}  // namespace
}  // namespace folio::bench
