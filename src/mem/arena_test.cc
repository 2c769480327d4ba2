// FolioArena: backing (hugetlb / THP / 4k, read back from smaps), pre-fault, frame lookup,
// thread-cache lifecycle and misuse checks. The allocator itself is model-tested in
// arena_model_test.cc.
#include "folio/arena.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "base/death_test_util.h"
#include "mem/arena_memory.h"
#include "mem/buddy.h"

namespace folio {
namespace {

std::unique_ptr<FolioArena> MakeArena(size_t capacity_bytes,
                                      ArenaBacking backing = ArenaBacking::kAuto) {
  ArenaOptions opts;
  opts.capacity_bytes = capacity_bytes;
  opts.backing = backing;
  auto arena = FolioArena::Create(opts);
  EXPECT_TRUE(arena.ok()) << arena.status().ToString();
  return arena.ok() ? std::move(arena).value() : nullptr;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

// Whether madvise(MADV_POPULATE_WRITE) succeeds here without populating anything: qemu-user
// (`make test-arm64`) accepts every madvise hint and ignores it, so the arena cannot pre-fault
// or ask for THP there. Checked with mincore on a page of its own, not with the arena's code.
// A kernel without MADV_POPULATE_WRITE (EINVAL) is not such a system: the arena touches pages.
bool MadviseIsIgnored() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  unsigned char resident = 0;
  const bool ignored = madvise(p, page, MADV_POPULATE_WRITE) == 0 &&
                       mincore(p, page, &resident) == 0 && (resident & 1) == 0;
  munmap(p, page);
  return ignored;
}

#define SKIP_IF_MADVISE_IS_IGNORED()                                                    \
  do {                                                                                  \
    if (MadviseIsIgnored()) {                                                           \
      GTEST_SKIP() << "madvise(MADV_POPULATE_WRITE) returns 0 without populating here " \
                      "(qemu-user ignores madvise hints): no pre-fault or THP to check";  \
    }                                                                                   \
  } while (0)

void PrintReport(const ArenaBackingReport& r) {
  std::printf("requested %s obtained %s: capacity %zu rss %zu anon_huge %zu hugetlb %zu "
              "collapse ok %zu failed %zu prefault %.3fs done %d note '%s'\n",
              std::string(ArenaBackingName(r.requested)).c_str(),
              std::string(ArenaBackingName(r.obtained)).c_str(), r.capacity_bytes, r.rss_bytes,
              r.anon_huge_bytes, r.hugetlb_bytes, r.collapse_ok, r.collapse_failed,
              r.prefault_seconds, r.prefault_done, r.note.c_str());
}

TEST(ArenaBackingTest, ParseAndName) {
  for (ArenaBacking b : {ArenaBacking::kAuto, ArenaBacking::kHugetlb, ArenaBacking::kThp,
                         ArenaBacking::k4k}) {
    Result<ArenaBacking> parsed = ParseArenaBacking(ArenaBackingName(b));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, b);
  }
  Result<ArenaBacking> bad = ParseArenaBacking("huge");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_NE(bad.status().message().find("'huge'"), std::string_view::npos);
}

TEST(ArenaBackingTest, CapacityRoundedUpAndZeroRejected) {
  auto arena = MakeArena(3 << 20);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->capacity_bytes(), 4u << 20);
  EXPECT_EQ(arena->frame_count(), 1024u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena->base()) % kMaxFolioBytes, 0u);
  ArenaOptions zero;
  zero.capacity_bytes = 0;
  auto r = FolioArena::Create(zero);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
}

TEST(ArenaBackingTest, FourK) {
  SKIP_IF_MADVISE_IS_IGNORED();
  auto arena = MakeArena(8 << 20, ArenaBacking::k4k);
  ASSERT_NE(arena, nullptr);
  ArenaBackingReport r = arena->backing_report();
  PrintReport(r);
  EXPECT_EQ(r.requested, ArenaBacking::k4k);
  EXPECT_EQ(r.obtained, ArenaBacking::k4k);
  EXPECT_TRUE(r.prefault_done);
  EXPECT_EQ(r.anon_huge_bytes, 0u);
  EXPECT_EQ(r.hugetlb_bytes, 0u);
  EXPECT_EQ(r.rss_bytes, arena->capacity_bytes()) << "pre-fault must populate every page";
}

TEST(ArenaBackingTest, Thp) {
  SKIP_IF_MADVISE_IS_IGNORED();
  std::string thp = mem::ThpEnabledMode();
  if (thp.empty() || thp == "never") {
    ArenaOptions opts;
    opts.backing = ArenaBacking::kThp;
    auto r = FolioArena::Create(opts);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kNotSupported);
    GTEST_SKIP() << "THP is '" << thp << "' here; checked only the error";
  }
  auto arena = MakeArena(16 << 20, ArenaBacking::kThp);
  ASSERT_NE(arena, nullptr);
  ArenaBackingReport r = arena->backing_report();
  PrintReport(r);
  EXPECT_EQ(r.obtained, ArenaBacking::kThp) << r.note;
  EXPECT_GT(r.anon_huge_bytes, 0u);
  EXPECT_LE(r.anon_huge_bytes, arena->capacity_bytes());
  EXPECT_GT(r.rss_bytes, 0u);
  EXPECT_LE(r.rss_bytes, arena->capacity_bytes());
  EXPECT_TRUE(r.prefault_done);
  EXPECT_EQ(r.collapse_ok + r.collapse_failed, arena->capacity_bytes() / kMaxFolioBytes);
}

TEST(ArenaBackingTest, AutoReportsWhatItGot) {
  SKIP_IF_MADVISE_IS_IGNORED();
  long free_hugepages = mem::FreeHugepages2M();  // before the arena takes them
  auto arena = MakeArena(8 << 20, ArenaBacking::kAuto);
  ASSERT_NE(arena, nullptr);
  ArenaBackingReport r = arena->backing_report();
  PrintReport(r);
  EXPECT_EQ(r.requested, ArenaBacking::kAuto);
  EXPECT_NE(r.obtained, ArenaBacking::kAuto);
  EXPECT_GT(r.rss_bytes + r.hugetlb_bytes, 0u);
  EXPECT_LE(r.anon_huge_bytes, arena->capacity_bytes());
  if (free_hugepages < 4) {
    EXPECT_NE(r.obtained, ArenaBacking::kHugetlb);
    EXPECT_NE(r.note.find("free_hugepages"), std::string::npos) << r.note;
  }
  if (free_hugepages >= 4) {
    EXPECT_EQ(r.obtained, ArenaBacking::kHugetlb) << r.note;
    EXPECT_EQ(r.hugetlb_bytes, arena->capacity_bytes());
  }
  if (r.obtained == ArenaBacking::kThp) {
    EXPECT_GT(r.anon_huge_bytes, 0u);
  }
  if (r.obtained == ArenaBacking::k4k) {
    EXPECT_EQ(r.anon_huge_bytes, 0u);
  }
}

TEST(ArenaBackingTest, HugetlbWithoutReservedPagesIsAClearError) {
  long free_pages = mem::FreeHugepages2M();
  ArenaOptions opts;
  opts.capacity_bytes = 8 << 20;
  opts.backing = ArenaBacking::kHugetlb;
  auto r = FolioArena::Create(opts);
  if (free_pages >= 4) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)->backing_report().obtained, ArenaBacking::kHugetlb);
    GTEST_SKIP() << free_pages << " hugetlb pages are reserved here; checked the success path";
  }
  ASSERT_FALSE(r.ok());
  std::printf("%s\n", r.status().ToString().c_str());
  if (free_pages < 0) {
    EXPECT_EQ(r.status().code(), StatusCode::kNotSupported);
    return;
  }
  EXPECT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
  std::string_view m = r.status().message();
  EXPECT_NE(m.find("free_hugepages is " + std::to_string(free_pages)), std::string_view::npos)
      << m;
  EXPECT_NE(m.find("/proc/sys/vm/nr_hugepages"), std::string_view::npos) << m;
  EXPECT_NE(m.find("--arena-backing auto"), std::string_view::npos) << m;
}

TEST(ArenaBackingTest, BackgroundPrefaultWithConcurrentAlloc) {
  ArenaOptions opts;
  opts.capacity_bytes = 64 << 20;
  opts.prefault_in_background = true;
  auto arena_or = FolioArena::Create(opts);
  ASSERT_TRUE(arena_or.ok()) << arena_or.status().ToString();
  FolioArena* arena = arena_or->get();
  // Allocate and write while the pre-fault thread runs; the writes must survive it.
  std::vector<Folio*> folios;
  for (int i = 0; i < 24; ++i) {
    Result<Folio*> f = arena->Alloc(i % 2 ? 9 : 4);
    ASSERT_TRUE(f.ok());
    std::memset(arena->Data(*f), 0x40 + i, (*f)->bytes());
    folios.push_back(*f);
  }
  arena->WaitPrefault();
  arena->WaitPrefault();  // idempotent
  ArenaBackingReport r = arena->backing_report();
  EXPECT_TRUE(r.prefault_done);
  EXPECT_GT(r.prefault_seconds, 0.0);
  EXPECT_GT(r.rss_bytes + r.hugetlb_bytes, 0u);
  for (size_t i = 0; i < folios.size(); ++i) {
    const char* d = arena->Data(folios[i]);
    for (size_t b = 0; b < folios[i]->bytes(); b += 511) {
      ASSERT_EQ(d[b], static_cast<char>(0x40 + i)) << "folio " << i << " byte " << b;
    }
    arena->Free(folios[i]);
  }
  EXPECT_TRUE(arena->CheckInvariants().ok());
}

TEST(ArenaBackingTest, DestroyDuringBackgroundPrefault) {
  ArenaOptions opts;
  opts.capacity_bytes = 256 << 20;
  opts.prefault_in_background = true;
  auto arena = FolioArena::Create(opts);
  ASSERT_TRUE(arena.ok());
  arena->reset();  // must stop and join the pre-fault before unmapping
}

TEST(ArenaFrameTest, FrameOfAnyByteFindsItsFrame) {
  auto arena = MakeArena(4 << 20);
  ASSERT_NE(arena, nullptr);
  Result<Folio*> f = arena->Alloc(3);
  ASSERT_TRUE(f.ok());
  char* data = arena->Data(*f);
  EXPECT_EQ(arena->FrameOf(data), *f);
  for (size_t x : {size_t{1}, kPageBytes - 1, kPageBytes, 5 * kPageBytes + 17,
                   OrderBytes(3) - 1}) {
    Folio* frame = arena->FrameOf(data + x);
    EXPECT_EQ(frame->frame, (*f)->frame + x / kPageBytes) << "offset " << x;
    EXPECT_EQ(frame, arena->Frame(frame->frame));
  }
  EXPECT_EQ(arena->FrameOf(arena->base()), arena->Frame(0));
  EXPECT_EQ(arena->FrameOf(arena->base() + arena->capacity_bytes() - 1),
            arena->Frame(arena->frame_count() - 1));
  EXPECT_TRUE(arena->Contains(data));
  EXPECT_FALSE(arena->Contains(arena->base() + arena->capacity_bytes()));
  arena->Free(*f);
}

TEST(ArenaCacheTest, StrandedInAnotherThreadsCacheIsFound) {
  auto arena = MakeArena(2 << 20);  // a single order-9 block
  ASSERT_NE(arena, nullptr);
  std::atomic<int> stage{0};
  std::thread other([&] {
    Result<Folio*> f = arena->Alloc(0);  // refill splits the only order-9 block
    ASSERT_TRUE(f.ok());
    arena->Free(*f);  // parked in this thread's cache
    stage = 1;
    while (stage.load() != 2) std::this_thread::yield();
  });
  while (stage.load() != 1) std::this_thread::yield();
  EXPECT_EQ(arena->Stats().free_bytes, arena->capacity_bytes());
  Result<Folio*> big = arena->Alloc(9);
  stage = 2;
  other.join();
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(arena->Stats().orders[9].failures, 0u);
  arena->Free(*big);
  EXPECT_TRUE(arena->CheckInvariants().ok());
}

// FreeShared puts a cached order on the shared free lists (where every thread's Alloc looks
// first), where Free would park it in this thread's cache; both coalesce in the end.
TEST(ArenaCacheTest, FreeSharedBypassesTheThreadCache) {
  auto arena = MakeArena(2 << 20);
  ASSERT_NE(arena, nullptr);
  for (int order = 1; order <= FolioArena::kCachedOrderMax; ++order) {
    Folio* cached = *arena->Alloc(order);
    Folio* shared = *arena->Alloc(order);
    arena->Free(cached);
    arena->FreeShared(shared);
    EXPECT_EQ(mem::LoadState(cached), mem::kStateCached) << "order " << order;
    // On a free list: a free head, or a tail when it merged with a free buddy.
    const uint8_t state = mem::LoadState(shared);
    EXPECT_TRUE(state == mem::kStateFree || state == mem::kStateTail)
        << "order " << order << " state " << static_cast<int>(state);
  }
  Folio* big = *arena->Alloc(kMaxOrder);
  EXPECT_EQ(mem::LoadState(big), mem::kStateAllocated);
  arena->FreeShared(big);
  arena->DrainThreadCaches();
  EXPECT_EQ(arena->Stats().orders[kMaxOrder].free_folios, 1u);
  EXPECT_TRUE(arena->CheckInvariants().ok());
}

TEST(ArenaCacheTest, ThreadExitReturnsItsCache) {
  auto arena = MakeArena(8 << 20);
  ASSERT_NE(arena, nullptr);
  std::thread t([&] {
    std::vector<Folio*> v;
    for (int i = 0; i < 200; ++i) {
      Result<Folio*> f = arena->Alloc(i % (FolioArena::kCachedOrderMax + 1));
      ASSERT_TRUE(f.ok());
      v.push_back(*f);
    }
    for (Folio* f : v) arena->Free(f);
    EXPECT_GT(arena->Stats().orders[0].free_folios, 0u);  // some are parked in this cache
  });
  t.join();
  // No DrainThreadCaches: the thread's exit must have returned and coalesced everything.
  ArenaStats s = arena->Stats();
  EXPECT_EQ(s.orders[kMaxOrder].free_folios, 4u);
  EXPECT_EQ(s.orders[0].allocs, 40u);
  EXPECT_EQ(s.orders[0].frees, 40u);
  EXPECT_TRUE(arena->CheckInvariants().ok());
}

TEST(ArenaCacheTest, ArenaDestroyedBeforeThreadExit) {
  auto arena = MakeArena(4 << 20);
  ASSERT_NE(arena, nullptr);
  std::atomic<int> stage{0};
  std::thread t([&] {
    Result<Folio*> f = arena->Alloc(1);
    ASSERT_TRUE(f.ok());
    arena->Free(*f);
    stage = 1;
    while (stage.load() != 2) std::this_thread::yield();
    // The old arena is gone; a new one must get a fresh cache in this thread.
    auto second = MakeArena(2 << 20);
    ASSERT_NE(second, nullptr);
    Result<Folio*> g = second->Alloc(1);
    ASSERT_TRUE(g.ok());
    second->Free(*g);
    EXPECT_TRUE(second->CheckInvariants().ok());
  });
  while (stage.load() != 1) std::this_thread::yield();
  arena.reset();
  stage = 2;
  t.join();  // its thread-exit hook must not touch the destroyed arena (ASan checks)
}

TEST(ArenaCacheTest, ManyArenasInOneThread) {
  auto keep = MakeArena(2 << 20);
  ASSERT_NE(keep, nullptr);
  for (int i = 0; i < 64; ++i) {
    auto a = MakeArena(2 << 20);
    ASSERT_NE(a, nullptr);
    Result<Folio*> fa = a->Alloc(i % 5);
    Result<Folio*> fk = keep->Alloc(i % 5);
    ASSERT_TRUE(fa.ok() && fk.ok());
    EXPECT_TRUE(a->Contains(a->Data(*fa)));
    EXPECT_TRUE(keep->Contains(keep->Data(*fk)));
    a->Free(*fa);
    keep->Free(*fk);
    EXPECT_TRUE(a->CheckInvariants().ok());
  }
  EXPECT_TRUE(keep->CheckInvariants().ok());
  ArenaStats s = keep->Stats();
  EXPECT_EQ(s.free_bytes, keep->capacity_bytes());
}

TEST(ArenaStatsTest, FallbacksAndFailuresAreCounted) {
  auto arena = MakeArena(2 << 20);
  ASSERT_NE(arena, nullptr);
  Result<Folio*> a = arena->Alloc(9);
  ASSERT_TRUE(a.ok());
  Result<Folio*> b = arena->Alloc(5);
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().IsNoSpace());
  EXPECT_NE(b.status().message().find("order 5 (128K)"), std::string_view::npos)
      << b.status().message();
  arena->NoteFallback(5);
  arena->NoteFallback(5);
  ArenaStats s = arena->Stats();
  EXPECT_EQ(s.orders[5].failures, 1u);
  EXPECT_EQ(s.orders[5].fallbacks, 2u);
  EXPECT_EQ(s.orders[9].allocs, 1u);
  EXPECT_EQ(s.free_bytes, 0u);
  arena->Free(*a);
}

// Split (used by the page cache to drop part of a large folio): the halves are independent
// allocated folios; freeing them in any order coalesces back into the original block.
TEST(ArenaSplitTest, SplitPiecesFreeIndependentlyAndCoalesce) {
  auto arena = MakeArena(4 << 20, ArenaBacking::k4k);
  ASSERT_NE(arena, nullptr);
  Folio* big = *arena->Alloc(9);
  std::memset(arena->Data(big), 0x5a, OrderBytes(9));
  // Split the order-9 folio down to one order-0 piece at each level: 9 -> 8+8 -> 8+7+7 ...
  std::vector<Folio*> pieces;
  Folio* f = big;
  for (int k = 9; k >= 1; --k) {
    Folio* upper = arena->Split(f);
    EXPECT_EQ(f->order, k - 1);
    EXPECT_EQ(upper->order, k - 1);
    EXPECT_EQ(upper->frame, f->frame + OrderPages(k - 1));
    EXPECT_EQ(upper->refcount.load(), 0);
    EXPECT_EQ(upper->owner.load(), nullptr);
    EXPECT_EQ(arena->Data(upper), arena->Data(f) + OrderBytes(k - 1));
    pieces.push_back(upper);
    ASSERT_TRUE(arena->CheckInvariants().ok()) << arena->CheckInvariants().ToString();
  }
  pieces.push_back(f);
  // Data is untouched by the relabelling.
  EXPECT_EQ(arena->Data(pieces[0])[0], 0x5a);
  ArenaStats s = arena->Stats();
  for (int k = 1; k <= 9; ++k) EXPECT_GE(s.orders[k].splits, 1u) << k;
  // Free in an interleaved order; invariants hold after each free.
  for (size_t i = 0; i < pieces.size(); i += 2) {
    pieces[i]->refcount.store(1);
    arena->Free(pieces[i]);
    ASSERT_TRUE(arena->CheckInvariants().ok()) << arena->CheckInvariants().ToString();
  }
  for (size_t i = 1; i < pieces.size(); i += 2) {
    arena->Free(pieces[i]);
    ASSERT_TRUE(arena->CheckInvariants().ok()) << arena->CheckInvariants().ToString();
  }
  arena->DrainThreadCaches();
  EXPECT_EQ(arena->Stats().free_bytes, arena->capacity_bytes());
  // Everything coalesced: two order-9 blocks can be had again.
  Folio* a = *arena->Alloc(9);
  Folio* b = *arena->Alloc(9);
  arena->Free(a);
  arena->Free(b);
}

using ArenaDeathTest = ::testing::Test;

TEST(ArenaDeathTest, SplitOfOrderZeroOrFreeCrashes) {
  UseThreadsafeDeathTests();
  auto arena = MakeArena(2 << 20);
  ASSERT_NE(arena, nullptr);
  Folio* f = *arena->Alloc(0);
  EXPECT_DEATH(arena->Split(f), "Split");
  Folio* g = *arena->Alloc(3);
  arena->Free(g);
  arena->DrainThreadCaches();
  EXPECT_DEATH(arena->Split(g), "Split");
  arena->Free(f);
}

TEST(ArenaDeathTest, DoubleFreeCrashes) {
  UseThreadsafeDeathTests();
  auto arena = MakeArena(2 << 20);
  ASSERT_NE(arena, nullptr);
  Folio* f = *arena->Alloc(2);
  arena->Free(f);
  EXPECT_DEATH(arena->Free(f), "double free");
  EXPECT_DEATH(arena->FreeShared(f), "double free");
  Folio* big = *arena->Alloc(7);
  EXPECT_DEATH(arena->Free(arena->Frame(big->frame + 1)), "not the head");
  big->Get();
  EXPECT_DEATH(arena->Free(big), "still has references");
  (void)big->Put();
  arena->Free(big);
  auto other = MakeArena(2 << 20);
  Folio* g = *other->Alloc(0);
  EXPECT_DEATH(arena->Free(g), "does not belong");
  other->Free(g);
}

}  // namespace
}  // namespace folio
