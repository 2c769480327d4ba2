// Compaction (compaction.cc): a fragmented cache serves a large folio by migrating or evicting
// the folios of one aligned block; block selection skips blocks it cannot empty; data (clean,
// dirty, partly up to date) survives the move; the counters say what happened; the background
// compactor builds the next blocks ahead of the requests.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "cache/cache_test_util.h"
#include "folio/page_cache.h"

namespace folio {
namespace {

using cache_test::kKiB;
using cache_test::kMiB;
using cache_test::Pattern;
using cache_test::ReadOk;
using cache_test::SmallCacheOptions;
using cache_test::WriteOk;

TEST(CompactionModeTest, ParseAndName) {
  for (CompactionMode m : {CompactionMode::kOff, CompactionMode::kEvict, CompactionMode::kMigrate}) {
    Result<CompactionMode> parsed = ParseCompactionMode(CompactionModeName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
  }
  Result<CompactionMode> bad = ParseCompactionMode("on");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'on'"), std::string_view::npos);
}

// A 2M cache holding a 4k-policy file of exactly 2M, written in order (folio frames follow
// page order), every page but each 16th then read (referenced): reclaim evicts scattered
// frames, so no free 64K block appears by itself. `dirty_every`: pages i with
// i % dirty_every == 1 are rewritten (dirty) after the fsync; 0 = none.
enum class Compactor { kDirectOnly, kWithBackground };
struct Fragmented {
  std::unique_ptr<FaultDevice> small_dev = cache_test::NewFaultMem(2 * kMiB);
  std::unique_ptr<FaultDevice> big_dev = cache_test::NewFaultMem(16 * kMiB);
  std::unique_ptr<PageCache> cache;
  std::unique_ptr<AddressSpace> a, b;
  std::vector<char> a_ref = Pattern(80, 0, 2 * kMiB);

  Fragmented(CompactionMode mode, uint64_t dirty_every,
             Compactor compactor = Compactor::kDirectOnly) {
    PageCacheOptions o = SmallCacheOptions(2 * kMiB, "dynamic");
    o.compaction = mode;
    o.compaction_background = compactor == Compactor::kWithBackground;
    o.compaction_background_interval_ms = 1;
    cache = std::move(PageCache::Create(o).value());
    AddressSpaceOptions ao;
    ao.override_policy = true;
    ao.policy = *FolioPolicy::Parse("4k");
    a = std::move(cache->Open(small_dev.get(), ao).value());
    WriteOk(a.get(), 0, a_ref);
    EXPECT_TRUE(a->Fsync().ok());
    for (uint64_t p = 0; p < 2 * kMiB; p += 4096) {
      const uint64_t page = p / 4096;
      if (dirty_every != 0 && page % dirty_every == 1) {
        std::vector<char> d = Pattern(82, p, 4096);
        WriteOk(a.get(), p, d);
        std::copy(d.begin(), d.end(), a_ref.begin() + static_cast<ptrdiff_t>(p));
      } else if (page % 16 != 0) {
        EXPECT_EQ(ReadOk(a.get(), p, 4096).size(), 4096u);
      }
    }
    b = std::move(cache->Open(big_dev.get(), AddressSpaceOptions{}).value());
  }
  ~Fragmented() {
    b.reset();
    a.reset();
  }
};

TEST(CompactionTest, MigrateServesTheLargeFolioAndKeepsTheData) {
  Fragmented fr(CompactionMode::kMigrate, 0);
  const PageCacheStats before = fr.cache->Stats();
  std::vector<char> d = Pattern(81, 0, 64 * kKiB);
  WriteOk(fr.b.get(), 0, d);
  const PageCacheStats s = fr.cache->Stats();
  EXPECT_EQ(s.orders[4].fallbacks, 0u);
  EXPECT_EQ(s.orders[4].allocs, 1u);
  EXPECT_EQ(s.orders[4].requests, 1u);
  EXPECT_EQ(s.orders[4].compacted, 1u);
  EXPECT_EQ(s.compact_attempts, 1u);
  EXPECT_EQ(s.compact_successes, 1u);
  EXPECT_GT(s.compact_blocks_scanned, 0u);
  // One free frame of the block (reclaim's) stays, the other 15 move.
  EXPECT_GE(s.compact_migrated_folios, 8u);
  EXPECT_EQ(s.compact_migrated_bytes, s.compact_migrated_folios * 4096);
  EXPECT_EQ(s.compact_evicted_folios, 0u);
  // Migration copies instead of evicting: only reclaim's 16 scattered pages went.
  EXPECT_EQ(s.evictions - before.evictions, 16u);
  EXPECT_TRUE(fr.cache->arena()->CheckInvariants().ok());
  EXPECT_EQ(ReadOk(fr.b.get(), 0, 64 * kKiB), d);
  EXPECT_EQ(ReadOk(fr.a.get(), 0, 2 * kMiB), fr.a_ref);
}

enum class FreeMemory { kScattered, kNone };

// The 64K write that had to compact wakes the background compactor, which builds two more free
// 64K blocks; the next two 64K writes find them free and compact nothing themselves. With
// FreeMemory::kScattered (page 4 of every 8 of file a dropped first: 256K free in 4K pieces)
// it gathers that memory and reclaims nothing; with kNone the cache is full, so it first
// reclaims a block's worth of clean folios from the cold end of the LRU, then gathers.
void BackgroundCompactorBuildsTheNextBlocksAhead(FreeMemory free_memory) {
  Fragmented fr(CompactionMode::kMigrate, 0, Compactor::kWithBackground);
  if (free_memory == FreeMemory::kScattered) {
    for (uint64_t p = 4 * 4096; p < 2 * kMiB; p += 8 * 4096) {
      ASSERT_TRUE(fr.a->Invalidate(p, 4096).ok());
    }
  }
  std::vector<char> d = Pattern(81, 0, 64 * kKiB);
  WriteOk(fr.b.get(), 0, d);
  PageCacheStats s = fr.cache->Stats();
  EXPECT_EQ(s.compact_attempts, 1u);
  EXPECT_EQ(s.orders[4].compacted, 1u);
  // Bounded wait (not a timing assertion): the compactor runs on its own thread.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto free_64k = [&] {
    const ArenaStats a = fr.cache->arena()->Stats();
    uint64_t n = 0;
    for (int o = 4; o < kNumOrders; ++o) n += a.orders[o].free_folios;
    return n;
  };
  while (free_64k() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s = fr.cache->Stats();
  ASSERT_GE(free_64k(), 2u) << "background attempts " << s.compact_background_attempts
                            << ", blocks " << s.compact_background_blocks << ", reclaimed "
                            << s.compact_background_reclaimed_bytes;
  EXPECT_GE(s.compact_background_blocks, 2u);
  EXPECT_GE(s.compact_background_attempts, s.compact_background_blocks);
  if (free_memory == FreeMemory::kScattered) {
    EXPECT_EQ(s.compact_background_reclaimed_bytes, 0u);
  } else {
    EXPECT_GE(s.compact_background_reclaimed_bytes, 64 * kKiB);
  }
  for (int i = 2; i >= 1; --i) {  // backwards: no write stream, so 64K folios (not 128K)
    WriteOk(fr.b.get(), i * 64 * kKiB, d);
  }
  s = fr.cache->Stats();
  EXPECT_EQ(s.orders[4].requests, 3u);
  EXPECT_EQ(s.orders[4].fallbacks, 0u);
  EXPECT_EQ(s.compact_attempts, 1u) << "the later writes compacted in their own thread";
  EXPECT_EQ(s.orders[4].compacted, 1u);
  for (int i = 0; i <= 2; ++i) EXPECT_EQ(ReadOk(fr.b.get(), i * 64 * kKiB, 64 * kKiB), d);
  EXPECT_EQ(ReadOk(fr.a.get(), 0, 2 * kMiB), fr.a_ref);
  EXPECT_TRUE(fr.cache->arena()->CheckInvariants().ok());
}

TEST(CompactionTest, BackgroundCompactorGathersScatteredFreeMemory) {
  BackgroundCompactorBuildsTheNextBlocksAhead(FreeMemory::kScattered);
}

TEST(CompactionTest, BackgroundCompactorReclaimsWhatAFullCacheLacks) {
  BackgroundCompactorBuildsTheNextBlocksAhead(FreeMemory::kNone);
}

TEST(CompactionTest, EvictDropsTheBlocksCleanFolios) {
  Fragmented fr(CompactionMode::kEvict, 0);
  std::vector<char> d = Pattern(81, 0, 64 * kKiB);
  WriteOk(fr.b.get(), 0, d);
  const PageCacheStats s = fr.cache->Stats();
  EXPECT_EQ(s.orders[4].fallbacks, 0u);
  EXPECT_EQ(s.orders[4].compacted, 1u);
  EXPECT_EQ(s.compact_successes, 1u);
  EXPECT_EQ(s.compact_migrated_folios, 0u);
  EXPECT_GE(s.compact_evicted_folios, 8u);
  EXPECT_EQ(s.compact_evicted_bytes, s.compact_evicted_folios * 4096);
  EXPECT_TRUE(fr.cache->arena()->CheckInvariants().ok());
  EXPECT_EQ(ReadOk(fr.b.get(), 0, 64 * kKiB), d);
  EXPECT_EQ(ReadOk(fr.a.get(), 0, 2 * kMiB), fr.a_ref);
}

TEST(CompactionTest, MigrateMovesDirtyFoliosAndTheyStillReachTheDevice) {
  // Every 64K block holds a dirty page (page 1 of each 16).
  Fragmented fr(CompactionMode::kMigrate, 16);
  const uint64_t dirty = fr.cache->Stats().dirty_bytes;
  ASSERT_EQ(dirty, 32 * 4096u);
  std::vector<char> d = Pattern(81, 0, 64 * kKiB);
  WriteOk(fr.b.get(), 0, d);
  PageCacheStats s = fr.cache->Stats();
  EXPECT_EQ(s.orders[4].compacted, 1u);
  EXPECT_EQ(s.orders[4].fallbacks, 0u);
  // The moved dirty page is still dirty, counted once.
  EXPECT_EQ(s.dirty_bytes, dirty + 64 * kKiB);
  ASSERT_TRUE(fr.a->Fsync().ok());
  EXPECT_EQ(fr.cache->Stats().dirty_bytes, 64 * kKiB);
  std::vector<char> dev(2 * kMiB);
  ASSERT_TRUE(fr.small_dev->Read(0, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, fr.a_ref);
  EXPECT_EQ(ReadOk(fr.a.get(), 0, 2 * kMiB), fr.a_ref);
  EXPECT_TRUE(fr.cache->arena()->CheckInvariants().ok());
}

TEST(CompactionTest, EvictSkipsBlocksWithDirtyFolios) {
  // Every 64K block holds a dirty page, so no order-4 block can be emptied by eviction; the
  // write falls back, and the 32K halves of the blocks (clean) can be compacted for it.
  Fragmented fr(CompactionMode::kEvict, 16);
  std::vector<char> d = Pattern(81, 0, 64 * kKiB);
  WriteOk(fr.b.get(), 0, d);
  const PageCacheStats s = fr.cache->Stats();
  EXPECT_EQ(s.orders[4].requests, 1u);
  EXPECT_EQ(s.orders[4].fallbacks, 1u);
  EXPECT_EQ(s.orders[4].compacted, 0u);
  EXPECT_GE(s.compact_attempts, 1u);
  // The order-4 attempt looked at every block of the arena (32 of 64K) and found none.
  EXPECT_GE(s.compact_blocks_scanned, 2 * kMiB / (64 * kKiB));
  EXPECT_EQ(s.compact_migrated_folios, 0u);
  EXPECT_EQ(s.compact_successes, s.orders[3].compacted + s.orders[2].compacted +
                                     s.orders[1].compacted);
  EXPECT_EQ(ReadOk(fr.b.get(), 0, 64 * kKiB), d);
  ASSERT_TRUE(fr.a->Fsync().ok());
  std::vector<char> dev(2 * kMiB);
  ASSERT_TRUE(fr.small_dev->Read(0, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, fr.a_ref);
  EXPECT_TRUE(fr.cache->arena()->CheckInvariants().ok());
}

}  // namespace
}  // namespace folio
