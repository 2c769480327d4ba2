// FolioIndex (folio_index.h): every slot of a folio's range finds it, whatever its order, and
// a segment filled by one 2 MiB folio answers from its whole-segment pointer until any smaller
// store or a clear in that segment; a segment's slots past its first 64 KiB exist only once a
// store reached them, and until then read as empty everywhere.
#include "cache/folio_index.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace folio::cache {
namespace {

constexpr uint64_t kSeg = FolioIndex::kSegmentPages;

TEST(FolioIndexTest, WholeSegmentFolioAndItsReplacements) {
  FolioIndex index(4 * kSeg);
  std::vector<Folio> f(4);
  EXPECT_EQ(index.Load(kSeg + 7), nullptr);
  index.Store(kSeg, kMaxOrder, &f[0]);
  for (uint64_t i = kSeg; i < 2 * kSeg; i += 37) EXPECT_EQ(index.Load(i), &f[0]) << i;
  EXPECT_EQ(index.Load(2 * kSeg - 1), &f[0]);
  EXPECT_EQ(index.Load(kSeg - 1), nullptr);
  EXPECT_EQ(index.Load(2 * kSeg), nullptr);
  EXPECT_FALSE(index.RangeEmpty(kSeg, kMaxOrder));
  EXPECT_EQ(index.NextPresent(0, 4 * kSeg), kSeg);

  // A split: the 2 MiB folio's slots are cleared and its halves stored.
  index.Clear(kSeg, kMaxOrder);
  EXPECT_EQ(index.Load(kSeg + 3), nullptr);
  EXPECT_TRUE(index.RangeEmpty(kSeg, kMaxOrder));
  index.Store(kSeg, kMaxOrder - 1, &f[1]);
  index.Store(kSeg + kSeg / 2, kMaxOrder - 1, &f[2]);
  EXPECT_EQ(index.Load(kSeg), &f[1]);
  EXPECT_EQ(index.Load(kSeg + kSeg / 2 - 1), &f[1]);
  EXPECT_EQ(index.Load(kSeg + kSeg / 2), &f[2]);

  // A collapse back into one 2 MiB folio, then a smaller store in the segment (the index's
  // owner removes the big folio first; the whole-segment pointer must not outlive it either
  // way) and the 4 KiB folio is found, not the old 2 MiB one.
  index.Clear(kSeg, kMaxOrder - 1);
  index.Clear(kSeg + kSeg / 2, kMaxOrder - 1);
  index.Store(kSeg, kMaxOrder, &f[3]);
  EXPECT_EQ(index.Load(kSeg + 100), &f[3]);
  index.Store(kSeg + 100, 0, &f[0]);
  EXPECT_EQ(index.Load(kSeg + 100), &f[0]);
  EXPECT_EQ(index.Load(kSeg + 101), &f[3]) << "the other slots still name the old folio";
}

// The first 16 slots of a segment live in it, the rest in an array the first store beyond them
// allocates. Every query treats the missing array as empty slots, and folios across the
// boundary (an order-5 folio covers slots 0-31) are found from both sides.
TEST(FolioIndexTest, SlotsPastTheFirst64KiBComeWithTheirFirstStore) {
  FolioIndex index(2 * kSeg);
  std::vector<Folio> f(4);
  index.Store(kSeg + 8, 3, &f[0]);  // slots 8-15 of segment 1: inline only
  EXPECT_EQ(index.Load(kSeg + 15), &f[0]);
  EXPECT_EQ(index.Load(kSeg + 16), nullptr);
  EXPECT_EQ(index.Load(2 * kSeg - 1), nullptr);
  EXPECT_TRUE(index.RangeEmpty(kSeg + 16, 4));
  EXPECT_FALSE(index.RangeEmpty(kSeg, 4));
  EXPECT_EQ(index.NextPresent(kSeg + 16, 2 * kSeg), FolioIndex::kNone);
  EXPECT_EQ(index.NextPresent(0, 2 * kSeg), kSeg + 8);
  index.Clear(kSeg + 16, 4);  // slots never stored to: empty already, nothing allocated
  EXPECT_EQ(index.Load(kSeg + 15), &f[0]);

  index.Clear(kSeg + 8, 3);
  index.Store(kSeg, 5, &f[1]);  // slots 0-31: both parts
  for (uint64_t i = 0; i < 32; ++i) EXPECT_EQ(index.Load(kSeg + i), &f[1]) << i;
  EXPECT_EQ(index.Load(kSeg + 32), nullptr);
  EXPECT_EQ(index.NextPresent(kSeg + 20, 2 * kSeg), kSeg + 20);
  EXPECT_FALSE(index.RangeEmpty(kSeg + 16, 4));
  index.Clear(kSeg, 5);
  EXPECT_TRUE(index.RangeEmpty(kSeg, 5));
  EXPECT_EQ(index.NextPresent(0, 2 * kSeg), FolioIndex::kNone);

  index.Store(300, 0, &f[2]);  // segment 0: a first store past the inline slots
  EXPECT_EQ(index.Load(300), &f[2]);
  EXPECT_EQ(index.Load(299), nullptr);
  EXPECT_EQ(index.NextPresent(0, kSeg), 300u);
  index.SetDirty(300);
  index.SetDirty(3);  // dirty bits are per segment, whichever part holds the slot
  EXPECT_EQ(index.NextDirty(0, kSeg), 3u);
  index.ClearDirty(3);
  EXPECT_EQ(index.NextDirty(0, kSeg), 300u);
  index.ClearDirty(300);
  EXPECT_EQ(index.NextDirty(0, kSeg), FolioIndex::kNone);
}

// A lock-free reader racing the store that allocates a segment's rest finds either nothing or
// the folio, never garbage (run under TSan in make test).
TEST(FolioIndexTest, AReaderRacingTheFirstStorePastTheInlineSlotsSeesNothingOrTheFolio) {
  for (int round = 0; round < 200; ++round) {
    FolioIndex index(kSeg);
    Folio f;
    std::atomic<bool> go{false};
    std::thread reader([&] {
      while (!go.load(std::memory_order_acquire)) {
      }
      for (int i = 0; i < 2000; ++i) {
        Folio* got = index.Load(100);
        ASSERT_TRUE(got == nullptr || got == &f);
        if (got != nullptr) break;
      }
    });
    go.store(true, std::memory_order_release);
    index.Store(100, 0, &f);
    reader.join();
    EXPECT_EQ(index.Load(100), &f);
  }
}

}  // namespace
}  // namespace folio::cache
