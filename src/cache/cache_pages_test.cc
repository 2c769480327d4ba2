// Per-page state inside large folios (page_state.h): only dirty pages are written back, in runs
// merged across folios; writes into folios that are not up to date read only the pages they
// cover in part; a writer waits for writeback only when it touches a page being written.
#include <gtest/gtest.h>

#include <cstring>
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

std::vector<char> DeviceBytes(BlockDevice* dev, uint64_t pos, size_t len) {
  std::vector<char> out(len);
  EXPECT_TRUE(dev->Read(pos, out.data(), len).ok());
  return out;
}

// A 2 MiB folio (the cache must be 32M+ for a 2M write folio), written whole and fsynced.
void MakeLargeFolio(CacheEnv* env, uint64_t seed) {
  MakeEnv(env, 16 * kMiB, SmallCacheOptions(64 * kMiB, "dynamic"));
  WriteOk(env->as.get(), 0, Pattern(seed, 0, 2 * kMiB));
  ASSERT_TRUE(env->as->Fsync().ok());
  ASSERT_EQ(env->cache->Stats().orders[kMaxOrder].resident_folios, 1u);
}

TEST(CachePagesTest, SmallWritesIntoALargeFolioWriteBackOnlyTheirPages) {
  CacheEnv env;
  MakeLargeFolio(&env, 1);
  const PageCacheStats before = env.cache->Stats();
  // Three 4 KiB writes, one of them unaligned across two pages.
  WriteOk(env.as.get(), 100 * kPageBytes, Pattern(2, 100 * kPageBytes, 4096));
  WriteOk(env.as.get(), 300 * kPageBytes + 2048, Pattern(3, 300 * kPageBytes + 2048, 4096));
  WriteOk(env.as.get(), 511 * kPageBytes, Pattern(4, 511 * kPageBytes, 4096));
  EXPECT_EQ(env.cache->Stats().dirty_bytes, 4 * kPageBytes);
  ASSERT_TRUE(env.as->Fsync().ok());
  const PageCacheStats after = env.cache->Stats();
  EXPECT_EQ(after.writeback_bytes - before.writeback_bytes, 4 * kPageBytes);
  EXPECT_EQ(after.writeback_requests - before.writeback_requests, 3u);  // 1 + 2 (merged) + 1
  EXPECT_EQ(after.orders[kMaxOrder].resident_folios, 1u);  // still one 2 MiB folio
  std::vector<char> want = Pattern(1, 0, 2 * kMiB);
  std::memcpy(&want[100 * kPageBytes], Pattern(2, 100 * kPageBytes, 4096).data(), 4096);
  std::memcpy(&want[300 * kPageBytes + 2048], Pattern(3, 300 * kPageBytes + 2048, 4096).data(),
              4096);
  std::memcpy(&want[511 * kPageBytes], Pattern(4, 511 * kPageBytes, 4096).data(), 4096);
  EXPECT_EQ(DeviceBytes(env.device.get(), 0, 2 * kMiB), want);
}

TEST(CachePagesTest, DirtyRunsMergeAcrossFolios) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(64 * kMiB, "dynamic"));
  WriteOk(env.as.get(), 0, Pattern(5, 0, 4 * kMiB));  // two 2 MiB folios
  ASSERT_TRUE(env.as->Fsync().ok());
  const PageCacheStats before = env.cache->Stats();
  // The last page of the first folio and the first of the second: one request.
  WriteOk(env.as.get(), 2 * kMiB - kPageBytes, Pattern(6, 2 * kMiB - kPageBytes, 2 * kPageBytes));
  ASSERT_TRUE(env.as->Fsync().ok());
  const PageCacheStats after = env.cache->Stats();
  EXPECT_EQ(after.writeback_requests - before.writeback_requests, 1u);
  EXPECT_EQ(after.writeback_bytes - before.writeback_bytes, 2 * kPageBytes);
}

TEST(CachePagesTest, AWriteIntoANewFixedFolioReadsOnlyWhatItCoversInPart) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(16 * kMiB, "fixed:64K"));
  std::vector<char> old = Pattern(7, 0, kMiB);
  ASSERT_TRUE(env.device->Write(0, old.data(), old.size()).ok());
  env.device->ResetStats();
  // A whole, aligned page: nothing to read; the other 15 pages of the 64K folio stay unread.
  WriteOk(env.as.get(), 4 * kPageBytes, Pattern(8, 4 * kPageBytes, kPageBytes));
  EXPECT_EQ(env.device->stats().read_requests, 0u);
  EXPECT_EQ(env.cache->Stats().write_pages_not_read, 15u);
  // A part of one page of another folio: exactly that page is read.
  WriteOk(env.as.get(), 64 * kKiB + 100, Pattern(9, 64 * kKiB + 100, 1000));
  EXPECT_EQ(env.device->stats().read_requests, 1u);
  EXPECT_EQ(env.device->stats().read_bytes, kPageBytes);
  // Reading the folios back reads their missing pages, once, and returns the right bytes.
  std::vector<char> want = old;
  std::memcpy(&want[4 * kPageBytes], Pattern(8, 4 * kPageBytes, kPageBytes).data(), kPageBytes);
  std::memcpy(&want[64 * kKiB + 100], Pattern(9, 64 * kKiB + 100, 1000).data(), 1000);
  EXPECT_EQ(ReadOk(env.as.get(), 0, 128 * kKiB), std::vector<char>(want.begin(), want.begin() + 128 * kKiB));
  EXPECT_GT(env.cache->Stats().partial_read_fills, 0u);
  const uint64_t reads = env.device->stats().read_requests;
  EXPECT_EQ(ReadOk(env.as.get(), 0, 128 * kKiB), std::vector<char>(want.begin(), want.begin() + 128 * kKiB));
  EXPECT_EQ(env.device->stats().read_requests, reads);  // all up to date now
  // Only the written pages were dirty.
  const PageCacheStats before = env.cache->Stats();
  ASSERT_TRUE(env.as->Fsync().ok());
  EXPECT_EQ(env.cache->Stats().writeback_bytes - before.writeback_bytes, 2 * kPageBytes);
  EXPECT_EQ(DeviceBytes(env.device.get(), 0, kMiB), want);
}

// A stream of 64 KiB writes (each starting where the last ended) over old data: the dynamic
// policy makes each new folio of the stream the largest empty aligned block holding the write,
// so the folios double like a readahead window (128K, 256K, 512K, 1M) and then are 2 MiB, and
// the stream's next writes land in them. Nothing is read; only the written pages are dirty.
TEST(CachePagesTest, ASequentialWriteStreamFillsTwoMiBFolios) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(64 * kMiB, "dynamic"));
  std::vector<char> old = Pattern(20, 0, 16 * kMiB);
  ASSERT_TRUE(env.device->Write(0, old.data(), old.size()).ok());
  env.device->ResetStats();
  const uint64_t total = 4 * kMiB + 128 * kKiB;
  for (uint64_t pos = 0; pos < total; pos += 64 * kKiB) {
    WriteOk(env.as.get(), pos, Pattern(21, pos, 64 * kKiB));
  }
  const PageCacheStats s = env.cache->Stats();
  // Two 64 KiB folios (the first write is no stream; the second's block holds the first), then
  // one folio per order up to 1 MiB, and a 2 MiB folio at 2 MiB and at 4 MiB.
  EXPECT_EQ(s.orders[4].resident_folios, 2u);
  for (int o = 5; o < kMaxOrder; ++o) EXPECT_EQ(s.orders[o].resident_folios, 1u) << o;
  EXPECT_EQ(s.orders[kMaxOrder].resident_folios, 2u);
  EXPECT_EQ(s.write_stream_folios, 6u);
  // Each made by one 64 KiB write: the rest of it unread.
  EXPECT_EQ(s.write_pages_not_read, 16u + 48u + 112u + 240u + 496u + 496u);
  EXPECT_EQ(env.device->stats().read_requests, 0u);
  EXPECT_EQ(s.dirty_bytes, total);
  std::vector<char> want = old;
  std::memcpy(want.data(), Pattern(21, 0, total).data(), total);
  EXPECT_EQ(ReadOk(env.as.get(), 0, 8 * kMiB),
            std::vector<char>(want.begin(), want.begin() + 8 * kMiB));
  ASSERT_TRUE(env.as->Fsync().ok());
  EXPECT_EQ(env.cache->Stats().writeback_bytes - s.writeback_bytes, total);
  EXPECT_EQ(DeviceBytes(env.device.get(), 0, 16 * kMiB), want);
}

// Writes that are not a stream keep their own size; a stream of odd lengths grows too and reads
// only the pages it covers in part; a stream appending at the end of file keeps the write's size
// (a larger folio would have to zero the pages above the end).
TEST(CachePagesTest, OnlySequentialWritesBelowTheEndGrowFolios) {
  CacheEnv env;
  MakeEnv(&env, 16 * kMiB, SmallCacheOptions(64 * kMiB, "dynamic"));
  std::vector<char> old = Pattern(22, 0, 16 * kMiB);
  ASSERT_TRUE(env.device->Write(0, old.data(), old.size()).ok());
  std::vector<char> want = old;
  auto write = [&](uint64_t pos, uint64_t len, uint64_t seed) {
    std::vector<char> d = Pattern(seed, pos, len);
    WriteOk(env.as.get(), pos, d);
    std::memcpy(&want[pos], d.data(), len);
  };
  // Backwards 64 KiB writes from 8 MiB down: never a stream.
  for (uint64_t pos = 8 * kMiB; pos > 6 * kMiB; pos -= 64 * kKiB) write(pos - 64 * kKiB, 64 * kKiB, 23);
  EXPECT_EQ(env.cache->Stats().write_stream_folios, 0u);
  EXPECT_EQ(env.cache->Stats().orders[kMaxOrder].resident_folios, 0u);
  // 10000-byte writes across the 2 MiB boundary at 12 MiB. The second write's last folio is the
  // 8 KiB block [3070, 3072) (pages; 3069 follows the first write's 3068), and the first new folio
  // at 12 MiB is the whole block [12M, 14M).
  env.device->ResetStats();
  uint64_t pos = 12 * kMiB - 25000;
  for (int i = 0; i < 50; ++i, pos += 10000) write(pos, 10000, 24);
  EXPECT_EQ(env.cache->Stats().write_stream_folios, 2u);
  EXPECT_EQ(env.cache->Stats().orders[kMaxOrder].resident_folios, 1u);
  // Read: only pages a write covers in part (about one per write), never the rest of the block.
  EXPECT_LE(env.device->stats().read_bytes, 51 * kPageBytes);
  EXPECT_EQ(ReadOk(env.as.get(), 0, 16 * kMiB), want);
  ASSERT_TRUE(env.as->Fsync().ok());
  EXPECT_EQ(DeviceBytes(env.device.get(), 0, 16 * kMiB), want);

  // Appending from an empty file: folios of the write's size, nothing zeroed beyond them.
  CacheEnv app;
  MakeEnv(&app, 16 * kMiB, SmallCacheOptions(64 * kMiB, "dynamic"));
  ASSERT_TRUE(app.as->Truncate(0).ok());
  for (uint64_t p = 0; p < 4 * kMiB; p += 64 * kKiB) {
    WriteOk(app.as.get(), p, Pattern(25, p, 64 * kKiB));
  }
  EXPECT_EQ(app.cache->Stats().write_stream_folios, 0u);
  EXPECT_EQ(app.cache->Stats().orders[4].resident_folios, 64u);
  EXPECT_EQ(ReadOk(app.as.get(), 0, 4 * kMiB), Pattern(25, 0, 4 * kMiB));
}

TEST(CachePagesTest, AWriterWaitsForWritebackOnlyOnThePagesBeingWritten) {
  auto mem = cache_test::NewFaultMem(16 * kMiB);
  cache_test::GateDevice gate(mem.get());
  auto cache = PageCache::Create(SmallCacheOptions(64 * kMiB, "dynamic"));
  ASSERT_TRUE(cache.ok());
  auto as = (*cache)->Open(&gate, AddressSpaceOptions{});
  ASSERT_TRUE(as.ok());
  AddressSpace* a = as->get();
  WriteOk(a, 0, Pattern(10, 0, 2 * kMiB));
  ASSERT_TRUE(a->Fsync().ok());
  WriteOk(a, 0, Pattern(11, 0, kPageBytes));  // page 0 dirty in the 2 MiB folio
  gate.Close();
  std::thread fsync([&] { EXPECT_TRUE(a->Fsync().ok()); });
  gate.WaitForBlockedWrite();  // page 0 is under writeback now, and stays so
  // Another page of the same folio: no wait (the gate is closed: waiting would hang here).
  WriteOk(a, 7 * kPageBytes, Pattern(12, 7 * kPageBytes, kPageBytes));
  EXPECT_EQ((*cache)->Stats().writeback_waits, 0u);
  // Page 0 itself: the writer waits for that write.
  std::thread writer([&] { WriteOk(a, 0, Pattern(13, 0, kPageBytes)); });
  while ((*cache)->Stats().writeback_waits == 0) std::this_thread::yield();
  gate.Open();
  fsync.join();
  writer.join();
  ASSERT_TRUE(a->Fsync().ok());
  EXPECT_EQ(DeviceBytes(mem.get(), 0, kPageBytes), Pattern(13, 0, kPageBytes));
  EXPECT_EQ(DeviceBytes(mem.get(), 7 * kPageBytes, kPageBytes), Pattern(12, 7 * kPageBytes, kPageBytes));
  as->reset();
}

}  // namespace
}  // namespace folio
