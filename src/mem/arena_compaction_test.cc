// FolioArena's compaction support: ScanBlock, TakeFreeIn and AssembleBlock on a fragmented
// arena, checked against the allocator's invariant walk after every step.
#include <gtest/gtest.h>

#include <vector>

#include "folio/arena.h"

namespace folio {
namespace {

constexpr uint32_t kBlock = static_cast<uint32_t>(OrderPages(kMaxOrder));

std::unique_ptr<FolioArena> Make4kArena(size_t capacity_bytes) {
  ArenaOptions opts;
  opts.capacity_bytes = capacity_bytes;
  opts.backing = ArenaBacking::k4k;
  auto arena = FolioArena::Create(opts);
  EXPECT_TRUE(arena.ok()) << arena.status().ToString();
  return arena.ok() ? std::move(arena).value() : nullptr;
}

// Fills a 4 MiB arena with order-0 folios and frees every other one of the first 2 MiB
// block: half of it free, no order-1 block anywhere.
struct Fragmented {
  std::unique_ptr<FolioArena> arena = Make4kArena(4 << 20);
  std::vector<Folio*> used;  // still allocated, by frame

  Fragmented() {
    std::vector<Folio*> all;
    for (uint32_t i = 0; i < 2 * kBlock; ++i) {
      Result<Folio*> f = arena->Alloc(0);
      EXPECT_TRUE(f.ok());
      all.push_back(*f);
    }
    for (Folio* f : all) {
      if (f->frame < kBlock && f->frame % 2 == 1) {
        arena->Free(f);
      } else {
        used.push_back(f);
      }
    }
    arena->DrainThreadCaches();
  }
};

TEST(ArenaCompactionTest, ScanTakeAndAssembleAFragmentedBlock) {
  Fragmented fr;
  FolioArena& a = *fr.arena;
  EXPECT_FALSE(a.Alloc(1).ok()) << "the arena should be fragmented";
  a.DrainThreadCaches();
  std::vector<Folio*> allocated;
  uint32_t free_pages = 0;
  ASSERT_TRUE(a.ScanBlock(0, kMaxOrder, &allocated, &free_pages));
  EXPECT_EQ(free_pages, kBlock / 2);
  ASSERT_EQ(allocated.size(), kBlock / 2);
  for (const Folio* f : allocated) EXPECT_EQ(f->frame % 2, 0u);

  std::vector<Folio*> pieces;
  a.TakeFreeIn(0, kMaxOrder, &pieces);
  ASSERT_EQ(pieces.size(), kBlock / 2);
  for (const Folio* p : pieces) EXPECT_EQ(p->refcount.load(), 0);
  ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString();
  // Taken pieces are gone from the free lists: nothing of order 0 is left to allocate.
  EXPECT_FALSE(a.Alloc(0).ok());

  // Without the occupants the pieces do not tile the block: nothing changes.
  std::vector<Folio*> partial = pieces;
  EXPECT_EQ(a.AssembleBlock(0, kMaxOrder, &partial), nullptr);
  EXPECT_EQ(partial.size(), pieces.size());
  ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString();

  // The occupants "moved away" (their owner gives them up): now they tile it.
  for (Folio* f : allocated) {
    f->refcount.store(0);
    pieces.push_back(f);
  }
  Folio* block = a.AssembleBlock(0, kMaxOrder, &pieces);
  ASSERT_NE(block, nullptr);
  EXPECT_TRUE(pieces.empty());
  EXPECT_EQ(block->frame, 0u);
  EXPECT_EQ(block->order, kMaxOrder);
  EXPECT_EQ(block->refcount.load(), 1);
  ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString();
  a.Free(block);
  ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString();
  Result<Folio*> big = a.Alloc(kMaxOrder);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ((*big)->frame, 0u);
  a.Free(*big);
  for (Folio* f : fr.used) {
    if (f->frame >= kBlock) a.Free(f);
  }
  a.DrainThreadCaches();
  ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString();
}

TEST(ArenaCompactionTest, PiecesGivenBackCoalesce) {
  Fragmented fr;
  FolioArena& a = *fr.arena;
  std::vector<Folio*> pieces;
  a.TakeFreeIn(0, kMaxOrder, &pieces);
  for (Folio* p : pieces) a.Free(p);
  a.DrainThreadCaches();
  ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString();
  std::vector<Folio*> allocated;
  uint32_t free_pages = 0;
  ASSERT_TRUE(a.ScanBlock(0, kMaxOrder, &allocated, &free_pages));
  EXPECT_EQ(free_pages, kBlock / 2);
  for (Folio* f : fr.used) a.Free(f);
}

TEST(ArenaCompactionTest, TakingInsideALargerFreeBlockSplitsIt) {
  auto arena = Make4kArena(4 << 20);
  FolioArena& a = *arena;
  std::vector<Folio*> allocated;
  uint32_t free_pages = 0;
  // Wholly free blocks (one buddy block holds them) are not compaction candidates.
  EXPECT_FALSE(a.ScanBlock(kBlock, kMaxOrder, &allocated, &free_pages));
  EXPECT_FALSE(a.ScanBlock(kBlock + 64, 6, &allocated, &free_pages));
  std::vector<Folio*> pieces;
  a.TakeFreeIn(kBlock + 64, 6, &pieces);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0]->frame, kBlock + 64);
  EXPECT_EQ(pieces[0]->order, 6);
  ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString();
  Folio* f = a.AssembleBlock(kBlock + 64, 6, &pieces);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->order, 6);
  a.Free(f);
  a.DrainThreadCaches();
  ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString();
  Result<Folio*> whole = a.Alloc(kMaxOrder);
  ASSERT_TRUE(whole.ok());
  // One allocated folio holding the block: nothing to scan or take.
  EXPECT_FALSE(a.ScanBlock((*whole)->frame, kMaxOrder, &allocated, &free_pages));
  EXPECT_FALSE(a.ScanBlock((*whole)->frame + 16, 4, &allocated, &free_pages));
  pieces.clear();
  a.TakeFreeIn((*whole)->frame, 4, &pieces);
  EXPECT_TRUE(pieces.empty());
  a.Free(*whole);
  ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString();
}

TEST(ArenaCompactionTest, ABlockPartlyInAThreadCacheIsNoCandidate) {
  Fragmented fr;
  FolioArena& a = *fr.arena;
  // Freed from this thread: order-0 frees go to its cache first.
  a.Free(fr.used[0]);
  std::vector<Folio*> allocated;
  uint32_t free_pages = 0;
  EXPECT_FALSE(a.ScanBlock(0, kMaxOrder, &allocated, &free_pages));
  a.DrainThreadCaches();
  EXPECT_TRUE(a.ScanBlock(0, kMaxOrder, &allocated, &free_pages));
  for (size_t i = 1; i < fr.used.size(); ++i) a.Free(fr.used[i]);
}

}  // namespace
}  // namespace folio
