// Page cache: eviction order, writeback errors, throttling, durability across a crash, limits.
#include <gtest/gtest.h>

#include <cstring>
#include <chrono>
#include <string>
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
using cache_test::ReadOk;

TEST(CacheEvictionTest, CleanFoliosGoBeforeDirtyOnes) {
  CacheEnv env;
  PageCacheOptions o = SmallCacheOptions(4 * kMiB, "dynamic");
  o.dirty_bytes = 3 * kMiB;
  MakeEnv(&env, 32 * kMiB, o);
  std::vector<char> d = Pattern(41, 0, kMiB);
  WriteOk(env.as.get(), 0, d);
  // Stream 16M of clean data through the 4M cache.
  for (uint64_t pos = 8 * kMiB; pos < 24 * kMiB; pos += 64 * kKiB) {
    ASSERT_EQ(ReadOk(env.as.get(), pos, 64 * kKiB).size(), 64 * kKiB);
  }
  PageCacheStats s = env.cache->Stats();
  EXPECT_GT(s.evictions, 20u);
  EXPECT_EQ(s.evicted_dirty, 0u);
  EXPECT_EQ(s.dirty_bytes, kMiB);
  EXPECT_EQ(s.writeback_requests, 0u);
  EXPECT_LE(s.resident_bytes, 4 * kMiB);
  // Still only in the cache.
  std::vector<char> dev(kMiB);
  ASSERT_TRUE(env.device->Read(0, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, std::vector<char>(kMiB, 0));
  EXPECT_EQ(ReadOk(env.as.get(), 0, kMiB), d);
}

TEST(CacheEvictionTest, AllDirtyMeansWriteBackThenEvict) {
  CacheEnv env;
  PageCacheOptions o = SmallCacheOptions(4 * kMiB, "4k");
  o.dirty_bytes = 64 * kMiB;  // no throttling: reclaim has to write back
  MakeEnv(&env, 32 * kMiB, o);
  for (uint64_t pos = 0; pos < 8 * kMiB; pos += 16 * kKiB) {
    WriteOk(env.as.get(), pos, Pattern(42, pos, 16 * kKiB));
  }
  PageCacheStats s = env.cache->Stats();
  EXPECT_GT(s.evicted_dirty, 0u);
  EXPECT_GT(s.writeback_requests, 0u);
  EXPECT_LE(s.resident_bytes, 4 * kMiB);
  // Reclaim wrote runs of adjacent order-0 folios as merged requests.
  EXPECT_GT(s.writeback_request_bytes.max, 16 * kKiB);
  for (uint64_t pos = 0; pos < 8 * kMiB; pos += kMiB) {
    ASSERT_EQ(ReadOk(env.as.get(), pos, kMiB), Pattern(42, pos, kMiB)) << pos;
  }
}

TEST(CacheWritebackTest, ErrorIsStickyForOneFsyncAndDataStaysReadable) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(8 * kMiB, "dynamic"));
  env.device->FailRange(kMiB, 64 * kKiB, /*reads=*/false, /*writes=*/true);
  std::vector<char> a = Pattern(51, kMiB, 64 * kKiB), b = Pattern(52, 4 * kMiB, 64 * kKiB);
  WriteOk(env.as.get(), kMiB, a);
  WriteOk(env.as.get(), 4 * kMiB, b);
  Status s = env.as->Fsync();
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("pos 1048576"), std::string_view::npos) << s.ToString();
  EXPECT_NE(s.message().find(env.device->name()), std::string_view::npos) << s.ToString();
  EXPECT_TRUE(env.as->Fsync().ok());  // reported once
  EXPECT_EQ(env.cache->Stats().dirty_bytes, 0u);  // not redirtied
  EXPECT_EQ(ReadOk(env.as.get(), kMiB, 64 * kKiB), a);  // still up to date in memory
  // The healthy range reached the device.
  std::vector<char> dev(64 * kKiB);
  ASSERT_TRUE(env.device->Read(4 * kMiB, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, b);
  // A new error is reported again; after the fault clears writes succeed.
  WriteOk(env.as.get(), kMiB, b);
  EXPECT_TRUE(env.as->Fsync().IsIOError());
  env.device->ClearFailures();
  WriteOk(env.as.get(), kMiB, a);
  EXPECT_TRUE(env.as->Fsync().ok());
  ASSERT_TRUE(env.device->Read(kMiB, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, a);
}

TEST(CacheWritebackTest, BackgroundWritebackErrorsReachTheNextFsync) {
  CacheEnv env;
  PageCacheOptions o = SmallCacheOptions(8 * kMiB, "dynamic");
  o.writeback_threads = 1;
  o.dirty_writeback_ms = 5;
  o.dirty_expire_ms = 1;
  MakeEnv(&env, 16 * kMiB, o);
  env.device->FailRange(0, 4096, false, true);
  WriteOk(env.as.get(), 0, Pattern(53, 0, 4096));
  for (int i = 0; i < 2000 && env.cache->Stats().dirty_bytes != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(env.cache->Stats().dirty_bytes, 0u);
  EXPECT_TRUE(env.as->Fsync().IsIOError());
  EXPECT_TRUE(env.as->Fsync().ok());
}

TEST(CacheThrottleTest, DirtyBytesStayBounded) {
  CacheEnv env;
  PageCacheOptions o = SmallCacheOptions(8 * kMiB, "dynamic");
  o.writeback_threads = 1;
  o.dirty_background_bytes = 64 * kKiB;
  o.dirty_bytes = 256 * kKiB;
  MakeEnv(&env, 32 * kMiB, o);
  LatencyModel slow;
  slow.kind = LatencyModel::Kind::kFixed;
  slow.fixed_us = 100;
  env.device->SetLatency(slow);
  uint64_t max_dirty = 0;
  for (uint64_t pos = 0; pos < 8 * kMiB; pos += 16 * kKiB) {
    WriteOk(env.as.get(), pos, Pattern(61, pos, 16 * kKiB));
    max_dirty = std::max(max_dirty, env.cache->Stats().dirty_bytes);
  }
  EXPECT_LE(max_dirty, 256 * kKiB + 16 * kKiB);
  EXPECT_GT(env.cache->Stats().throttled_writes, 0u);
  ASSERT_TRUE(env.as->Fsync().ok());
  for (uint64_t pos = 0; pos < 8 * kMiB; pos += kMiB) {
    ASSERT_EQ(ReadOk(env.as.get(), pos, kMiB), Pattern(61, pos, kMiB));
  }
}

TEST(CacheDurabilityTest, TruncatedRangeIsZeroAfterCrashOnceFsynced) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(8 * kMiB, "dynamic"));
  std::vector<char> d = Pattern(71, 0, kMiB);
  WriteOk(env.as.get(), 0, d);
  ASSERT_TRUE(env.as->Fsync().ok());
  ASSERT_TRUE(env.as->Truncate(100 * kKiB + 5).ok());
  ASSERT_TRUE(env.as->Truncate(kMiB).ok());
  std::vector<char> want = d;
  std::memset(want.data() + 100 * kKiB + 5, 0, kMiB - 100 * kKiB - 5);
  EXPECT_EQ(ReadOk(env.as.get(), 0, kMiB), want);
  ASSERT_TRUE(env.as->Fsync().ok());
  // Unflushed writes after the fsync are lost by the crash; the truncation is not.
  WriteOk(env.as.get(), 2 * kMiB, Pattern(72, 2 * kMiB, 4096));
  env.device->Crash(CrashMode::kDropUnflushed, 1);
  env.as.reset();  // drops dirty data (I/O fails now anyway)
  env.device->Restart();
  AddressSpaceOptions ao;
  auto as = env.cache->Open(env.device.get(), ao);
  ASSERT_TRUE(as.ok());
  env.as = std::move(as).value();
  EXPECT_EQ(ReadOk(env.as.get(), 0, kMiB), want);
  EXPECT_EQ(ReadOk(env.as.get(), 2 * kMiB, 4096), std::vector<char>(4096, 0));
}

TEST(CacheLimitsTest, WritesPastTheDeviceAreNoSpace) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(4 * kMiB, "dynamic"));
  Result<size_t> n = env.as->Write(16 * kMiB - 10, std::vector<char>(20, 'x'));
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(n.status().IsNoSpace()) << n.status().ToString();
  EXPECT_NE(n.status().message().find(env.device->name()), std::string_view::npos);
  EXPECT_TRUE(env.as->Truncate(16 * kMiB + 1).IsNoSpace());
  EXPECT_TRUE(env.as->Write(16 * kMiB - 10, std::vector<char>(10, 'x')).ok());
}

TEST(CacheReadErrorTest, ReadErrorNamesDeviceAndPosAndIsNotCached) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(4 * kMiB, "dynamic"));
  env.device->FailRange(2 * kMiB, 4096, /*reads=*/true, /*writes=*/false);
  std::vector<char> out(4096);
  Result<size_t> n = env.as->Read(2 * kMiB, out);
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(n.status().IsIOError());
  EXPECT_NE(n.status().message().find("pos 2097152"), std::string_view::npos)
      << n.status().ToString();
  EXPECT_NE(n.status().message().find(env.device->name()), std::string_view::npos);
  EXPECT_TRUE(env.as->Read(3 * kMiB, out).ok());
  env.device->ClearFailures();
  n = env.as->Read(2 * kMiB, out);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 4096u);
}

}  // namespace
}  // namespace folio
