// Slice resolution, cutting and data bytes; byte-range lock arithmetic.
#include <gtest/gtest.h>

#include <random>

#include "fs/lock_ranges.h"
#include "fs/slice_view.h"

namespace folio::fs {
namespace {

meta::Slice S(uint32_t pos, uint32_t len, meta::SliceKind kind = meta::SliceKind::kBlocks) {
  meta::Slice s;
  s.pos = pos;
  s.len = len;
  s.id = meta::SliceId{kind == meta::SliceKind::kZero ? 0u : pos + 1};
  s.object_bytes = kind == meta::SliceKind::kZero ? 0 : len;
  s.kind = kind;
  return s;
}

TEST(ResolveSlices, NewestWinsAndHolesAreHoles) {
  // The header comment's example.
  std::vector<meta::Slice> slices{S(0, 8), S(2, 3), S(10, 2)};
  std::vector<Segment> got = ResolveSlices(slices, 0, 12);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].pos, 0u); EXPECT_EQ(got[0].len, 2u); EXPECT_EQ(got[0].src, 0);
  EXPECT_EQ(got[1].pos, 2u); EXPECT_EQ(got[1].len, 3u); EXPECT_EQ(got[1].src, 1);
  EXPECT_EQ(got[2].pos, 5u); EXPECT_EQ(got[2].len, 3u); EXPECT_EQ(got[2].src, 0);
  EXPECT_EQ(got[3].pos, 8u); EXPECT_EQ(got[3].len, 2u); EXPECT_EQ(got[3].src, -1);
  EXPECT_EQ(got[4].pos, 10u); EXPECT_EQ(got[4].len, 2u); EXPECT_EQ(got[4].src, 2);
}

TEST(ResolveSlices, MatchesAByteMapOnRandomLists) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<meta::Slice> slices;
    std::vector<int> owner(256, -1);
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const uint32_t pos = rng() % 250, len = 1 + rng() % (256 - pos);
      slices.push_back(S(pos, len));
      for (uint32_t b = pos; b < pos + len; ++b) owner[b] = i;
    }
    const uint32_t from = rng() % 256, to = from + rng() % (257 - from);
    uint32_t at = from;
    for (const Segment& seg : ResolveSlices(slices, from, to)) {
      ASSERT_EQ(seg.pos, at);
      for (uint32_t b = seg.pos; b < seg.pos + seg.len; ++b) ASSERT_EQ(owner[b], seg.src);
      at += seg.len;
    }
    ASSERT_EQ(at, to);
  }
}

TEST(SliceView, CutAndDataBytes) {
  std::vector<meta::Slice> slices{S(0, 100), S(50, 100), S(60, 10, meta::SliceKind::kZero)};
  EXPECT_EQ(DataBytes(slices), 140u);
  std::vector<meta::Slice> cut = CutSlices(slices, 55);
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_EQ(cut[0].len, 55u);
  EXPECT_EQ(cut[1].len, 5u);
  EXPECT_EQ(DataBytes(cut), 55u);
}

meta::PlockRecord L(meta::LockType t, uint64_t s, uint64_t e) {
  meta::PlockRecord r;
  r.type = t;
  r.start = s;
  r.end = e;
  return r;
}

TEST(LockRanges, SplitMergeAndUnlock) {
  using meta::LockType;
  std::vector<meta::PlockRecord> mine = ApplyLockRange({}, LockType::kRead, 0, 99, 1);
  mine = ApplyLockRange(mine, LockType::kWrite, 40, 59, 1);
  ASSERT_EQ(mine.size(), 3u);
  EXPECT_EQ(mine[0].end, 39u);
  EXPECT_EQ(mine[1].type, LockType::kWrite);
  EXPECT_EQ(mine[2].start, 60u);
  mine = ApplyLockRange(mine, LockType::kRead, 40, 59, 1);
  ASSERT_EQ(mine.size(), 1u);  // merged back into one read range
  mine = ApplyLockRange(mine, LockType::kUnlock, 10, UINT64_MAX, 1);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].end, 9u);
  EXPECT_TRUE(ApplyLockRange(mine, LockType::kUnlock, 0, UINT64_MAX, 1).empty());
}

TEST(LockRanges, ConflictsAreBetweenOwnersWithAWriter) {
  using meta::LockType;
  std::vector<meta::PlockRecord> all{L(LockType::kRead, 0, 10), L(LockType::kWrite, 20, 30)};
  all[0].owner = 1;
  all[1].owner = 1;
  EXPECT_FALSE(FindConflict(all, meta::SessionId{0}, 2, LockType::kRead, 0, 15).has_value());
  EXPECT_TRUE(FindConflict(all, meta::SessionId{0}, 2, LockType::kWrite, 5, 5).has_value());
  EXPECT_TRUE(FindConflict(all, meta::SessionId{0}, 2, LockType::kRead, 25, 40).has_value());
  EXPECT_FALSE(FindConflict(all, meta::SessionId{0}, 1, LockType::kWrite, 0, 40).has_value());
}

}  // namespace
}  // namespace folio::fs
