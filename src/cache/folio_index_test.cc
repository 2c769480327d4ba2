// FolioIndex (folio_index.h): every slot of a folio's range finds it, whatever its order, and
// a segment filled by one 2 MiB folio answers from its whole-segment pointer until any smaller
// store or a clear in that segment.
#include "cache/folio_index.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace folio::cache
