// Debug-build lock order check (see lock_rank.h for the table).
#include "cache/lock_rank.h"

#include "base/check.h"

#ifndef NDEBUG

namespace folio::cache {
namespace {

thread_local int held[kLockRanks] = {};

}  // namespace

void RankCheckBlock(LockRank rank) {
  for (int r = static_cast<int>(rank); r < kLockRanks; ++r) {
    FOLIO_CHECK_MSG(held[r] == 0,
                    "page cache lock order violated: blocking on a lock while holding one of "
                    "the same or a later rank (see src/cache/lock_rank.h)");
  }
}

void RankAcquired(LockRank rank) { ++held[static_cast<int>(rank)]; }

void RankReleased(LockRank rank) {
  int r = static_cast<int>(rank);
  FOLIO_CHECK_MSG(held[r] > 0, "page cache lock released that was not held");
  --held[r];
}

void RankAssertNoneFrom(LockRank rank) { RankCheckBlock(rank); }

int RankHeld(LockRank rank) { return held[static_cast<int>(rank)]; }

}  // namespace folio::cache

#endif  // NDEBUG
