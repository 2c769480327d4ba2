// Page cache behaviour through the public API over a memory device: order selection,
// readahead ramp, split / collapse, eviction order, writeback errors, throttling, truncation.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
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

uint64_t TotalAllocs(const PageCacheStats& s) {
  uint64_t n = 0;
  for (const CacheOrderStats& o : s.orders) n += o.allocs;
  return n;
}

TEST(CacheReadWriteTest, UnalignedWritesReadBack) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(8 * kMiB, "dynamic"));
  std::vector<char> ref(16 * kMiB, 0);
  const struct {
    uint64_t pos, len;
  } writes[] = {{100, 5000}, {3 * 4096 + 17, 70000}, {kMiB, 64 * kKiB}, {kMiB - 1, 2},
                {16 * kMiB - 4096, 4096}, {5 * kMiB + 3, 3 * kMiB}};
  uint64_t seed = 1;
  for (const auto& w : writes) {
    std::vector<char> d = Pattern(seed++, w.pos, w.len);
    WriteOk(env.as.get(), w.pos, d);
    std::memcpy(ref.data() + w.pos, d.data(), w.len);
  }
  for (uint64_t chunk : {uint64_t{4096}, uint64_t{12345}, uint64_t{1 * kMiB}}) {
    for (uint64_t pos = 0; pos < ref.size(); pos += chunk) {
      uint64_t len = std::min<uint64_t>(chunk, ref.size() - pos);
      ASSERT_EQ(ReadOk(env.as.get(), pos, len),
                std::vector<char>(ref.begin() + pos, ref.begin() + pos + len))
          << "pos " << pos;
    }
  }
  // Past the end: short read, then nothing.
  EXPECT_EQ(ReadOk(env.as.get(), 16 * kMiB - 10, 100).size(), 10u);
  EXPECT_EQ(ReadOk(env.as.get(), 16 * kMiB, 100).size(), 0u);
  ASSERT_TRUE(env.as->Fsync().ok());
  std::vector<char> dev(ref.size());
  ASSERT_TRUE(env.device->Read(0, dev.data(), dev.size()).ok());
  EXPECT_TRUE(dev == ref);
}

TEST(CacheOrderTest, DynamicWriteTakesTheOrderOfLengthAndAlignment) {
  CacheEnv env;
  // 64M: a write folio may take up to 1/16 of the cache, so 2M folios need 32M or more.
  MakeEnv(&env, 16 * kMiB + 8 * kKiB, SmallCacheOptions(64 * kMiB, "dynamic"));
  // 64K aligned: one order-4 folio.
  WriteOk(env.as.get(), 0, Pattern(1, 0, 64 * kKiB));
  PageCacheStats s = env.cache->Stats();
  EXPECT_EQ(s.orders[4].allocs, 1u);
  EXPECT_EQ(TotalAllocs(s), 1u);
  // 64K at 68K (4K aligned): 17 (0), 18 (1), 20 (2), 24 (3), 32 (0).
  WriteOk(env.as.get(), 68 * kKiB, Pattern(2, 68 * kKiB, 64 * kKiB));
  s = env.cache->Stats();
  EXPECT_EQ(s.orders[0].allocs, 2u);
  EXPECT_EQ(s.orders[1].allocs, 1u);
  EXPECT_EQ(s.orders[2].allocs, 1u);
  EXPECT_EQ(s.orders[3].allocs, 1u);
  // 2M aligned: one order-9 folio.
  WriteOk(env.as.get(), 2 * kMiB, Pattern(3, 2 * kMiB, 2 * kMiB));
  EXPECT_EQ(env.cache->Stats().orders[9].allocs, 1u);
  // A small cache caps the folio of a write at 1/16 of its memory.
  {
    CacheEnv small;
    MakeEnv(&small, 16 * kMiB, SmallCacheOptions(8 * kMiB, "dynamic"));
    WriteOk(small.as.get(), 2 * kMiB, Pattern(3, 2 * kMiB, 2 * kMiB));
    EXPECT_EQ(small.cache->Stats().orders[7].allocs, 4u);  // 512K each
  }
  // Unaligned start: the partial pages are order 0, the covered middle takes what it can.
  const uint64_t base = 8 * kMiB;  // page 2048
  WriteOk(env.as.get(), base + 100, Pattern(4, base + 100, 16 * kKiB));
  s = env.cache->Stats();
  EXPECT_EQ(s.orders[0].allocs, 2u + 3u);  // 2048, 2049, 2052
  EXPECT_EQ(s.orders[1].allocs, 2u);       // 2050
  // The end of the device caps it: 8K left at 16M.
  WriteOk(env.as.get(), 16 * kMiB, Pattern(5, 16 * kMiB, 8 * kKiB));
  EXPECT_EQ(env.cache->Stats().orders[1].allocs, 3u);
  EXPECT_EQ(ReadOk(env.as.get(), 0, 64 * kKiB), Pattern(1, 0, 64 * kKiB));
  EXPECT_EQ(ReadOk(env.as.get(), base + 100, 16 * kKiB), Pattern(4, base + 100, 16 * kKiB));
}

TEST(CacheOrderTest, MaxFolioCapsAndFourKIsOrderZero) {
  {
    CacheEnv env;
    MakeEnv(&env, 16 * kMiB, SmallCacheOptions(8 * kMiB, "dynamic:16K"));
    WriteOk(env.as.get(), 0, Pattern(1, 0, 64 * kKiB));
    PageCacheStats s = env.cache->Stats();
    EXPECT_EQ(s.orders[2].allocs, 4u);
    EXPECT_EQ(TotalAllocs(s), 4u);
  }
  {
    CacheEnv env;
    MakeEnv(&env, 16 * kMiB, SmallCacheOptions(8 * kMiB, "4k"));
    WriteOk(env.as.get(), 0, Pattern(1, 0, 64 * kKiB));
    PageCacheStats s = env.cache->Stats();
    EXPECT_EQ(s.orders[0].allocs, 16u);
    EXPECT_EQ(TotalAllocs(s), 16u);
    EXPECT_EQ(s.orders[0].resident_folios, 16u);
    EXPECT_EQ(ReadOk(env.as.get(), 0, 64 * kKiB), Pattern(1, 0, 64 * kKiB));
  }
}

TEST(CacheOrderTest, FixedPolicyWritesAWholeFolioWithoutReadingIt) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB + 8 * kKiB, SmallCacheOptions(8 * kMiB, "fixed:64K"));
  std::vector<char> old = Pattern(7, 0, 64 * kKiB);
  ASSERT_TRUE(env.device->Write(0, old.data(), old.size()).ok());
  env.device->ResetStats();
  std::vector<char> d = Pattern(8, 4096, 4096);
  WriteOk(env.as.get(), 4096, d);
  PageCacheStats s = env.cache->Stats();
  EXPECT_EQ(s.orders[4].allocs, 1u);
  EXPECT_EQ(TotalAllocs(s), 1u);
  // A whole page written: the folio's other 15 pages are read only when someone reads them.
  EXPECT_EQ(env.device->stats().read_requests, 0u);
  EXPECT_EQ(s.write_pages_not_read, 15u);
  std::memcpy(old.data() + 4096, d.data(), 4096);
  EXPECT_EQ(ReadOk(env.as.get(), 0, 64 * kKiB), old);
  DeviceStatsSnapshot ds = env.device->stats();
  EXPECT_EQ(ds.read_requests, 2u);  // page 0 and pages 2..15
  EXPECT_EQ(ds.read_bytes, 60 * kKiB);
  // Near the device end the fixed order is capped: 8K left.
  WriteOk(env.as.get(), 16 * kMiB, Pattern(9, 16 * kMiB, 4096));
  EXPECT_EQ(env.cache->Stats().orders[1].allocs, 1u);
  // A random read reads the whole fixed folio.
  env.device->ResetStats();
  EXPECT_EQ(ReadOk(env.as.get(), 3 * kMiB + 8192, 100).size(), 100u);
  EXPECT_EQ(env.cache->Stats().orders[4].misses, 1u);
  EXPECT_EQ(env.device->stats().read_bytes, 64 * kKiB);
}

void FillDevice(FaultDevice* dev, uint64_t bytes, uint64_t seed) {
  for (uint64_t pos = 0; pos < bytes; pos += kMiB) {
    std::vector<char> d = Pattern(seed, pos, kMiB);
    ASSERT_TRUE(dev->Write(pos, d.data(), d.size()).ok());
  }
}

TEST(CacheReadaheadTest, SequentialReadRampsTheOrder) {
  CacheEnv env;
  MakeEnv(&env, 32 * kMiB, SmallCacheOptions(64 * kMiB, "dynamic"));
  FillDevice(env.device.get(), 32 * kMiB, 11);
  for (uint64_t pos = 0; pos < 16 * kMiB; pos += 4096) {
    ASSERT_EQ(ReadOk(env.as.get(), pos, 4096), Pattern(11, pos, 4096)) << pos;
  }
  PageCacheStats s = env.cache->Stats();
  for (int o : {0, 2, 4, 6, 8}) EXPECT_GT(s.orders[o].misses, 0u) << "order " << o;
  EXPECT_GT(s.orders[9].misses, 0u);
  EXPECT_GT(s.readahead_async, 4u);
  EXPECT_GT(s.readahead_windows, s.readahead_async);
  EXPECT_GT(s.readahead_hit_pages, 3000u);
  // Mostly hits on large folios.
  EXPECT_GT(s.orders[9].hits, 3000u);
}

// A reader that reaches the marked folio of a window still being read issues the next window
// before it waits, as the kernel's filemap_get_pages does, and the next window goes out even
// while the async reader is inside the device's Submit with the first (a device that executes
// requests there: Folio FS's InodeDevice runs a window's store gets in it). A sequential stream
// then keeps two windows in flight while it waits for the first. Before, the mark was acted on
// only once the folio was up to date, and the one async-read thread sat in the first window's
// Submit, so a reader that caught up with its readahead had one window in flight at a time: on
// RADOS, one window per round trip.
TEST(CacheReadaheadTest, AReaderWaitingOnAMarkedFolioHasTheNextWindowInFlight) {
  auto mem = cache_test::NewFaultMem(32 * kMiB);
  FillDevice(mem.get(), 32 * kMiB, 14);
  // Reads from 8 MiB on block in Submit. With 2 MiB windows (the default max) read 1 MiB at a
  // time from 0, the windows are [0,2M) [2M,4M) ... each marked on its first folio, so 8 MiB is
  // a window start: the reader waits on the marked folio of [8M,10M).
  cache_test::ReadGateDevice gate(mem.get(), 8 * kMiB);
  auto cache = PageCache::Create(SmallCacheOptions(64 * kMiB, "dynamic"));
  ASSERT_TRUE(cache.ok());
  ASSERT_EQ((*cache)->options().readahead_max_bytes, 2 * kMiB);
  auto as = (*cache)->Open(&gate, AddressSpaceOptions{});
  ASSERT_TRUE(as.ok());
  AddressSpace* a = as->get();
  std::vector<char> got(16 * kMiB);
  std::thread reader([&] {
    for (uint64_t pos = 0; pos < got.size(); pos += kMiB) {
      Result<size_t> n = a->Read(pos, std::span<char>(got.data() + pos, kMiB));
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      ASSERT_EQ(*n, kMiB);
    }
  });
  // [8M,10M) and the next window, [10M,12M), both held.
  const bool two_windows = gate.WaitForHeldBytes(4 * kMiB, std::chrono::seconds(10));
  const uint64_t held = gate.held_bytes();
  gate.MoveGate(~uint64_t{0});
  reader.join();
  EXPECT_TRUE(two_windows) << "held " << held << " bytes of reads while the reader waited";
  EXPECT_TRUE(got == Pattern(14, 0, got.size()));
}

TEST(CacheReadaheadTest, FourKPolicyReadsAheadInOrderZeroFolios) {
  CacheEnv env;
  MakeEnv(&env, 32 * kMiB, SmallCacheOptions(64 * kMiB, "4k"));
  FillDevice(env.device.get(), 8 * kMiB, 12);
  env.device->ResetStats();
  for (uint64_t pos = 0; pos < 8 * kMiB; pos += 4096) {
    ASSERT_EQ(ReadOk(env.as.get(), pos, 4096), Pattern(12, pos, 4096)) << pos;
  }
  PageCacheStats s = env.cache->Stats();
  for (int o = 1; o < kNumOrders; ++o) EXPECT_EQ(s.orders[o].misses, 0u) << o;
  EXPECT_GE(s.orders[0].misses, 2048u);  // and the last windows beyond what was read
  EXPECT_EQ(s.orders[0].misses, s.orders[0].resident_folios);
  EXPECT_GT(s.readahead_async, 4u);
  // The device saw merged requests, not 2048 4K reads.
  EXPECT_LT(env.device->stats().read_requests, 100u);
}

TEST(CacheReadaheadTest, RandomReadsAreOrderZeroWithoutWindows) {
  CacheEnv env;
  MakeEnv(&env, 64 * kMiB, SmallCacheOptions(64 * kMiB, "dynamic"));
  FillDevice(env.device.get(), 64 * kMiB, 13);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    uint64_t pos = (rng() % (16 * 1024)) * 4096 + 4096;  // never page 0
    if (i % 2) pos += 7;
    std::vector<char> got = ReadOk(env.as.get(), pos, 100);
    ASSERT_EQ(got, Pattern(13, pos, 100));
  }
  PageCacheStats s = env.cache->Stats();
  for (int o = 1; o < kNumOrders; ++o) EXPECT_EQ(s.orders[o].misses, 0u) << o;
  EXPECT_LE(s.readahead_windows, 2u);  // two adjacent random picks may start a stream
}

// Reclaim's sparse rule (page_state.h kSparseShare): a sequential read of 16 MiB (its readahead
// ramps up to 2 MiB folios: the four of [8M, 16M) are), then a random reader of [32M, 128M)
// under memory pressure (a 32 MiB cache) that reads `hot_pages` pages of each of the four every
// 64 reads: the same pages each time, or (`fresh`) pages not read before. Returns the stats at
// the end and how many folios a last re-read of the hot pages had to read in; checks every byte
// read.
struct Pressured {
  PageCacheStats stats;
  uint64_t hot_misses = 0;
};
Pressured ReReadUnderPressure(uint32_t hot_pages, bool fresh = false) {
  CacheEnv env;
  MakeEnv(&env, 128 * kMiB, SmallCacheOptions(32 * kMiB, "dynamic"));
  FillDevice(env.device.get(), 128 * kMiB, 21);
  for (uint64_t pos = 0; pos < 16 * kMiB; pos += 64 * kKiB) {
    EXPECT_EQ(ReadOk(env.as.get(), pos, 64 * kKiB), Pattern(21, pos, 64 * kKiB)) << pos;
  }
  EXPECT_GE(env.cache->Stats().orders[9].resident_folios, 4u);
  uint32_t round = 0;
  auto read_hot = [&] {
    const uint32_t shift = fresh ? round++ : 0;
    for (uint64_t folio = 0; folio < 4; ++folio) {
      for (uint32_t p = 0; p < hot_pages; ++p) {
        const uint64_t pos =
            8 * kMiB + folio * 2 * kMiB + (37 + shift + p * 512 / hot_pages) % 512 * 4096;
        EXPECT_EQ(ReadOk(env.as.get(), pos, 4096), Pattern(21, pos, 4096)) << pos;
      }
    }
  };
  std::mt19937_64 rng(9);
  for (int i = 0; i < 16384; ++i) {
    if (i % 64 == 0) read_hot();
    const uint64_t pos = 32 * kMiB + rng() % (96 * kMiB / 4096) * 4096;
    EXPECT_EQ(ReadOk(env.as.get(), pos, 4096), Pattern(21, pos, 4096)) << pos;
    if (::testing::Test::HasFailure()) break;
  }
  auto misses = [&] {
    uint64_t n = 0;
    for (const CacheOrderStats& o : env.cache->Stats().orders) n += o.misses;
    return n;
  };
  const uint64_t before = misses();
  read_hot();
  return {env.cache->Stats(), misses() - before};
}

TEST(CacheEvictionTest, ASparselyReadLargeFolioIsEvictedAndItsHotPagesComeBackSmall) {
  // One hot 4 KiB page in each 2 MiB folio: without the rule the four folios (8 MiB of a 32
  // MiB cache) stayed resident for their one page each.
  const Pressured r = ReReadUnderPressure(1);
  EXPECT_GE(r.stats.sparse_evictions, 3u);
  EXPECT_LE(r.stats.orders[9].resident_folios, 1u);
  EXPECT_EQ(r.hot_misses, 0u) << "the hot pages are not resident";
}

TEST(CacheEvictionTest, ALargeFolioReadAPageAtATimeNeverAgainKeepsItsSecondChance) {
  // A new page of each folio every time (fio's random map, a slow scan): its unread pages are
  // what comes next, so it stays (the seed's 4k-randread-twice lost a third without this).
  const Pressured r = ReReadUnderPressure(1, /*fresh=*/true);
  EXPECT_EQ(r.stats.sparse_evictions, 0u);
  EXPECT_EQ(r.stats.orders[9].resident_folios, 4u);
}

TEST(CacheEvictionTest, ADenselyReadLargeFolioKeepsItsSecondChance) {
  // Every 4th page of each 2 MiB folio read again: 1 in 4, dense enough (kSparseShare 8).
  const Pressured r = ReReadUnderPressure(128);
  EXPECT_EQ(r.stats.sparse_evictions, 0u);
  EXPECT_EQ(r.stats.orders[9].resident_folios, 4u);
  EXPECT_EQ(r.hot_misses, 0u);
}

TEST(CacheSplitTest, InvalidateInsideALargeFolioSplitsIt) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(8 * kMiB, "dynamic"));
  std::vector<char> d = Pattern(21, 0, 64 * kKiB);
  WriteOk(env.as.get(), 0, d);
  ASSERT_TRUE(env.as->Fsync().ok());
  ASSERT_TRUE(env.as->Invalidate(20 * kKiB, 4 * kKiB).ok());  // page 5
  PageCacheStats s = env.cache->Stats();
  for (int o = 1; o <= 4; ++o) EXPECT_EQ(s.orders[o].splits, 1u) << o;
  EXPECT_EQ(s.orders[3].resident_folios, 1u);  // 8..15
  EXPECT_EQ(s.orders[2].resident_folios, 1u);  // 0..3
  EXPECT_EQ(s.orders[1].resident_folios, 1u);  // 6..7
  EXPECT_EQ(s.orders[0].resident_folios, 1u);  // 4
  EXPECT_EQ(s.orders[4].resident_folios, 0u);
  EXPECT_EQ(ReadOk(env.as.get(), 0, 64 * kKiB), d);
  EXPECT_EQ(env.cache->Stats().orders[0].misses, 1u);  // only page 5 came from the device
}

TEST(CacheSplitTest, InvalidateWritesBackADirtyFolioStartingBeforeTheRange) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(8 * kMiB, "dynamic"));
  std::vector<char> d = Pattern(23, 0, 64 * kKiB);
  WriteOk(env.as.get(), 0, d);  // one dirty order-4 folio, its dirty mark at page 0
  ASSERT_TRUE(env.as->Invalidate(20 * kKiB, 4 * kKiB).ok());
  // Written back (the device has it) and page 5 dropped: nothing dirty is left behind.
  std::vector<char> on_device(64 * kKiB);
  ASSERT_TRUE(env.device->Read(0, on_device.data(), on_device.size()).ok());
  EXPECT_EQ(on_device, d);
  EXPECT_EQ(env.cache->Stats().dirty_bytes, 0u);
  EXPECT_EQ(ReadOk(env.as.get(), 0, 64 * kKiB), d);
  EXPECT_EQ(env.cache->Stats().orders[0].misses, 1u);  // page 5 came back from the device
}

TEST(CacheSplitTest, TruncateSplitsKeepsDirtyHalfAndZeroesTheRest) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(64 * kMiB, "dynamic"));
  std::vector<char> d = Pattern(22, 0, 2 * kMiB);
  WriteOk(env.as.get(), 0, d);  // one dirty order-9 folio
  ASSERT_TRUE(env.as->Truncate(kMiB + 100).ok());
  EXPECT_EQ(env.as->size(), kMiB + 100);
  PageCacheStats s = env.cache->Stats();
  EXPECT_GE(s.orders[9].splits, 1u);
  EXPECT_EQ(s.dirty_bytes, kMiB + 4096);  // the first 1M + the zeroed partial page
  ASSERT_TRUE(env.as->Truncate(2 * kMiB).ok());
  std::vector<char> want = d;
  std::memset(want.data() + kMiB + 100, 0, kMiB - 100);
  EXPECT_EQ(ReadOk(env.as.get(), 0, 2 * kMiB), want);
  ASSERT_TRUE(env.as->Fsync().ok());
  want.resize(16 * kMiB, 0);
  std::vector<char> dev(16 * kMiB);
  ASSERT_TRUE(env.device->Read(0, dev.data(), dev.size()).ok());
  EXPECT_TRUE(dev == want);
}

TEST(CacheCollapseTest, AdviseCollapseBuildsALargeFolioFromCleanSmallOnes) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(8 * kMiB, "dynamic"));
  std::vector<char> d = Pattern(31, 0, 64 * kKiB);
  // Backwards, so no write stream grows a folio: 16 of 4 KiB.
  for (uint64_t p = 64 * kKiB; p > 0; p -= 4096) {
    WriteOk(env.as.get(), p - 4096, std::vector<char>(d.begin() + p - 4096, d.begin() + p));
  }
  EXPECT_EQ(env.cache->Stats().orders[0].resident_folios, 16u);
  // Dirty folios are not collapsed.
  ASSERT_TRUE(env.as->Advise(0, 64 * kKiB, Advice::kCollapse).ok());
  EXPECT_EQ(env.cache->Stats().orders[4].collapses, 0u);
  ASSERT_TRUE(env.as->Fsync().ok());
  ASSERT_TRUE(env.as->Advise(0, 64 * kKiB, Advice::kCollapse).ok());
  PageCacheStats s = env.cache->Stats();
  EXPECT_EQ(s.orders[4].collapses, 1u);
  EXPECT_EQ(s.orders[4].resident_folios, 1u);
  EXPECT_EQ(s.orders[0].resident_folios, 0u);
  EXPECT_EQ(ReadOk(env.as.get(), 0, 64 * kKiB), d);
  EXPECT_EQ(env.cache->Stats().orders[4].hits, 1u);
  // The scanner does the same on its own; an odd run of 3 pages becomes 2 + 1.
  for (uint64_t p = kMiB + 3 * 4096; p > kMiB; p -= 4096) {
    WriteOk(env.as.get(), p - 4096, Pattern(32, p - 4096, 4096));
  }
  ASSERT_TRUE(env.as->Fsync().ok());
  EXPECT_EQ(env.cache->ScanCollapseOnce(), 1u);
  EXPECT_EQ(env.cache->Stats().orders[1].collapses, 1u);
}

TEST(CacheFallbackTest, FragmentedArenaFallsBackToSmallerOrders) {
  // A 2M cache filled by a 4k-policy file of exactly 2M, written in order (so folio frames
  // follow page order); every page but each 16th is then read (referenced), so reclaim
  // evicts scattered frames and no free 64K block appears: with compaction off (with it on,
  // cache_compaction_test.cc) a 64K write falls back.
  auto small_dev = cache_test::NewFaultMem(2 * kMiB);
  auto big_dev = cache_test::NewFaultMem(16 * kMiB);
  PageCacheOptions o = SmallCacheOptions(2 * kMiB, "dynamic");
  o.compaction = CompactionMode::kOff;
  auto cache = std::move(PageCache::Create(o).value());
  AddressSpaceOptions ao;
  ao.override_policy = true;
  ao.policy = *FolioPolicy::Parse("4k");
  auto a = std::move(cache->Open(small_dev.get(), ao).value());
  WriteOk(a.get(), 0, Pattern(80, 0, 2 * kMiB));
  ASSERT_TRUE(a->Fsync().ok());
  ASSERT_EQ(cache->Stats().resident_bytes, 2 * kMiB);
  for (uint64_t p = 0; p < 2 * kMiB; p += 4096) {
    if ((p / 4096) % 16 != 0) {
      ASSERT_EQ(ReadOk(a.get(), p, 4096).size(), 4096u);
    }
  }
  auto b = std::move(cache->Open(big_dev.get(), AddressSpaceOptions{}).value());
  std::vector<char> d = Pattern(81, 0, 64 * kKiB);
  WriteOk(b.get(), 0, d);
  PageCacheStats s = cache->Stats();
  EXPECT_GE(s.orders[4].fallbacks, 1u);
  EXPECT_EQ(s.orders[4].allocs, 0u);
  EXPECT_GE(cache->arena()->Stats().orders[4].fallbacks, 1u);
  EXPECT_EQ(s.compact_attempts, 0u);
  EXPECT_EQ(ReadOk(b.get(), 0, 64 * kKiB), d);
  EXPECT_EQ(ReadOk(a.get(), 0, 2 * kMiB), Pattern(80, 0, 2 * kMiB));
  b.reset();
  a.reset();
}

TEST(CacheAdviseTest, RandomWillNeedDontNeed) {
  CacheEnv env;
  MakeEnv(&env, 32 * kMiB, SmallCacheOptions(16 * kMiB, "dynamic"));
  FillDevice(env.device.get(), 8 * kMiB, 91);
  // Random: sequential reads do not read ahead.
  ASSERT_TRUE(env.as->Advise(0, 0, Advice::kRandom).ok());
  for (uint64_t p = 0; p < 256 * kKiB; p += 4096) ReadOk(env.as.get(), p, 4096);
  EXPECT_EQ(env.cache->Stats().readahead_windows, 0u);
  EXPECT_EQ(env.cache->Stats().orders[0].misses, 64u);
  ASSERT_TRUE(env.as->Advise(0, 0, Advice::kNormal).ok());
  // WillNeed: the range arrives asynchronously, in large folios; reads then hit.
  ASSERT_TRUE(env.as->Advise(2 * kMiB, 2 * kMiB, Advice::kWillNeed).ok());
  for (int i = 0; i < 5000 && env.cache->Stats().resident_bytes < 2 * kMiB + 256 * kKiB; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const uint64_t misses_before = env.cache->Stats().orders[0].misses;
  for (uint64_t p = 2 * kMiB; p < 4 * kMiB; p += 64 * kKiB) {
    ASSERT_EQ(ReadOk(env.as.get(), p, 64 * kKiB), Pattern(91, p, 64 * kKiB));
  }
  PageCacheStats s = env.cache->Stats();
  EXPECT_EQ(s.orders[0].misses, misses_before);
  EXPECT_EQ(s.orders[9].misses, 1u);  // 2M aligned, 2M long: one folio
  // DontNeed: written back and dropped.
  WriteOk(env.as.get(), 2 * kMiB, Pattern(92, 2 * kMiB, 4096));
  ASSERT_TRUE(env.as->Advise(2 * kMiB, 2 * kMiB, Advice::kDontNeed).ok());
  s = env.cache->Stats();
  EXPECT_EQ(s.dirty_bytes, 0u);
  EXPECT_EQ(s.resident_bytes, 256 * kKiB);
  std::vector<char> dev(4096);
  ASSERT_TRUE(env.device->Read(2 * kMiB, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, Pattern(92, 2 * kMiB, 4096));
}

}  // namespace
}  // namespace folio
