// The writeback policy (flusher.cc): the background threshold writes back only down to the
// threshold, expired data is written back whatever the amount, young data below the threshold
// stays in the cache, writers pause between freerun and the limit (not a hard stop) for what
// they made dirty (not for rewriting dirty data), and the knobs are checked.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "cache/cache_test_util.h"
#include "folio/page_cache.h"

namespace folio {
namespace {

using cache_test::CacheEnv;
using cache_test::MakeEnv;
using cache_test::Pattern;
using cache_test::SmallCacheOptions;
using cache_test::kKiB;
using cache_test::kMiB;
using cache_test::WriteOk;

constexpr uint64_t kNeverMs = 3600 * 1000;  // nothing expires while a test runs

// Polls until pred() holds (the flusher runs on its own thread); the test's timeout bounds it.
template <typename Pred>
void WaitUntil(Pred pred) {
  while (!pred()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

PageCacheOptions FlusherOptions(uint64_t memory_bytes) {
  PageCacheOptions o = SmallCacheOptions(memory_bytes, "4k");
  o.writeback_threads = 1;
  o.dirty_writeback_ms = 2;
  return o;
}

TEST(CacheFlusherTest, BackgroundWritebackStopsAtTheThresholdAndKeepsYoungData) {
  CacheEnv env;
  PageCacheOptions o = FlusherOptions(64 * kMiB);
  o.dirty_expire_ms = kNeverMs;
  o.dirty_background_bytes = 8 * kMiB;
  o.dirty_bytes = 32 * kMiB;  // freerun at 20M: these writes never pause
  MakeEnv(&env, 64 * kMiB, o);
  for (uint64_t pos = 0; pos < 12 * kMiB; pos += 64 * kKiB) {
    WriteOk(env.as.get(), pos, Pattern(1, pos, 64 * kKiB));
  }
  WaitUntil([&] { return env.cache->Stats().dirty_bytes <= 8 * kMiB; });
  const PageCacheStats s = env.cache->Stats();
  // Each background chunk writes at most max(4M, excess): at least 4M of young data stays.
  EXPECT_GE(s.dirty_bytes, 4 * kMiB);
  EXPECT_GT(s.writeback_background_chunks, 0u);
  EXPECT_EQ(s.writeback_expired_passes, 0u);
  EXPECT_EQ(s.throttled_writes, 0u);
  EXPECT_EQ(s.dirty_background_bytes, 8 * kMiB);
  EXPECT_EQ(s.dirty_limit_bytes, 32 * kMiB);
  ASSERT_TRUE(env.as->Fsync().ok());
  std::vector<char> dev(12 * kMiB);
  ASSERT_TRUE(env.device->Read(0, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, Pattern(1, 0, 12 * kMiB));
}

TEST(CacheFlusherTest, ExpiredDataIsWrittenBackBelowTheBackgroundThreshold) {
  CacheEnv env;
  PageCacheOptions o = FlusherOptions(64 * kMiB);
  o.dirty_expire_ms = 20;  // background threshold 25% = 16M, far above the 1M written
  MakeEnv(&env, 64 * kMiB, o);
  WriteOk(env.as.get(), 0, Pattern(2, 0, kMiB));
  // Counted once the requests completed (dirty bytes fall already when a pass takes pages).
  WaitUntil([&] { return env.cache->Stats().writeback_bytes >= kMiB; });
  const PageCacheStats s = env.cache->Stats();
  EXPECT_EQ(s.dirty_bytes, 0u);
  EXPECT_GT(s.writeback_expired_passes, 0u);
  EXPECT_EQ(s.writeback_background_chunks, 0u);
  std::vector<char> dev(kMiB);
  ASSERT_TRUE(env.device->Read(0, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, Pattern(2, 0, kMiB));
}

TEST(CacheFlusherTest, WritersPauseAboveFreerunInsteadOfHittingAWall) {
  auto mem = cache_test::NewFaultMem(64 * kMiB);
  cache_test::GateDevice gate(mem.get());
  PageCacheOptions o = FlusherOptions(64 * kMiB);
  o.dirty_expire_ms = kNeverMs;
  o.dirty_background_bytes = kMiB;
  o.dirty_bytes = 16 * kMiB;  // freerun at 8.5M
  auto cache = PageCache::Create(o);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  auto as = (*cache)->Open(&gate, AddressSpaceOptions{});
  ASSERT_TRUE(as.ok()) << as.status().ToString();
  // The device takes no write until the gate opens: what the flusher took (a chunk from when
  // dirty bytes crossed 1M) stays in flight, the rest stays dirty.
  gate.Close();
  uint64_t max_dirty = 0;
  for (uint64_t pos = 0; pos < 15 * kMiB; pos += 64 * kKiB) {
    WriteOk(as->get(), pos, Pattern(3, pos, 64 * kKiB));
    max_dirty = std::max(max_dirty, (*cache)->Stats().dirty_bytes);
  }
  const PageCacheStats s = (*cache)->Stats();
  // Above freerun the writes paused (in proportion), and none had to wait at the limit,
  // which a flusher that cannot write would have made a hang.
  EXPECT_GT(max_dirty, 17 * kMiB / 2);
  EXPECT_LT(max_dirty, 16 * kMiB);
  EXPECT_GT(s.throttled_writes, 0u);
  EXPECT_GT(s.throttled_ns, 0u);
  gate.Open();
  ASSERT_TRUE((*as)->Fsync().ok());
  std::vector<char> dev(15 * kMiB);
  ASSERT_TRUE(mem->Read(0, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, Pattern(3, 0, 15 * kMiB));
  as->reset();
}

TEST(CacheFlusherTest, RewritingDirtyDataIsNotThrottled) {
  // The kernel throttles a writer by the pages it makes dirty (balance_dirty_pages counts
  // nr_dirtied), so a hot set rewritten in the cache runs at memory speed however much of the
  // cache is dirty. Folio's writers pay for the bytes they dirtied, after the write.
  auto mem = cache_test::NewFaultMem(64 * kMiB);
  cache_test::GateDevice gate(mem.get());
  PageCacheOptions o = FlusherOptions(64 * kMiB);
  o.dirty_expire_ms = kNeverMs;
  o.dirty_background_bytes = kMiB;
  o.dirty_bytes = 16 * kMiB;  // freerun at 8.5M
  auto cache = PageCache::Create(o);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  auto as = (*cache)->Open(&gate, AddressSpaceOptions{});
  ASSERT_TRUE(as.ok()) << as.status().ToString();
  gate.Close();  // what the flusher takes (from offset 0) stays in flight, the rest dirty
  for (uint64_t pos = 0; pos < 15 * kMiB; pos += 64 * kKiB) {
    WriteOk(as->get(), pos, Pattern(4, pos, 64 * kKiB));
  }
  const PageCacheStats first = (*cache)->Stats();
  ASSERT_GT(first.dirty_bytes, 17 * kMiB / 2) << "the test needs dirty data above freerun";
  ASSERT_GT(first.throttled_writes, 0u) << "dirtying 15M above freerun must pause";
  // The last 4M are dirty and not under writeback (the flusher starts at offset 0): rewrite
  // them many times over, far more bytes than any pause would let through unthrottled.
  for (int round = 0; round < 16; ++round) {
    for (uint64_t pos = 11 * kMiB; pos < 15 * kMiB; pos += 64 * kKiB) {
      WriteOk(as->get(), pos, Pattern(5 + round, pos, 64 * kKiB));
    }
  }
  const PageCacheStats again = (*cache)->Stats();
  EXPECT_EQ(again.throttled_writes, first.throttled_writes);
  EXPECT_EQ(again.dirty_bytes, first.dirty_bytes);
  gate.Open();
  ASSERT_TRUE((*as)->Fsync().ok());
  std::vector<char> dev(4 * kMiB);
  ASSERT_TRUE(mem->Read(11 * kMiB, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, Pattern(20, 11 * kMiB, 4 * kMiB));
  as->reset();
}

TEST(CacheFlusherTest, KnobsAreChecked) {
  PageCacheOptions o = SmallCacheOptions(64 * kMiB, "4k");
  EXPECT_TRUE(CheckWritebackOptions(o).ok());
  o.dirty_ratio = 0;
  Status s = CheckWritebackOptions(o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("dirty_ratio 0"), std::string_view::npos) << s.ToString();
  o.dirty_ratio = 20;
  o.dirty_background_ratio = 20;
  s = CheckWritebackOptions(o);
  EXPECT_NE(s.message().find("is not below the limit"), std::string_view::npos) << s.ToString();
  EXPECT_FALSE(PageCache::Create(o).ok());
  o.dirty_background_ratio = 10;
  o.dirty_background_bytes = 32 * kMiB;  // bytes override the ratio: now above 20% of 64M
  EXPECT_FALSE(CheckWritebackOptions(o).ok());
  o.dirty_bytes = 48 * kMiB;
  EXPECT_TRUE(CheckWritebackOptions(o).ok());
  o.dirty_writeback_ms = 0;
  EXPECT_FALSE(CheckWritebackOptions(o).ok());
}

}  // namespace
}  // namespace folio
