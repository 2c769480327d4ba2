// Byte-range lock arithmetic for fcntl(2) locks (pure functions over meta::PlockRecord).
//
// One owner's locks on one inode are a sorted list of disjoint ranges [start, end] (inclusive;
// end UINT64_MAX means "to the end of file"). Setting a range replaces whatever the owner held
// in it (splitting ranges that straddle its ends) and merges adjacent ranges of the same type;
// unlocking removes the range. Conflicts are between different owners (different session or
// lock owner) whose ranges overlap and where at least one is a write lock.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "meta/meta_types.h"

namespace folio::fs {

inline bool RangesOverlap(uint64_t a_start, uint64_t a_end, uint64_t b_start, uint64_t b_end) {
  return a_start <= b_end && b_start <= a_end;
}

// `mine` (one owner's ranges, any order) with [start, end] set to type (kUnlock removes it).
// The result is sorted by start, disjoint, with adjacent same-type ranges merged.
std::vector<meta::PlockRecord> ApplyLockRange(const std::vector<meta::PlockRecord>& mine,
                                              meta::LockType type, uint64_t start, uint64_t end,
                                              uint32_t pid);

// The first lock of another owner that conflicts with a `type` lock on [start, end].
std::optional<meta::PlockRecord> FindConflict(const std::vector<meta::PlockRecord>& all,
                                              meta::SessionId session, uint64_t owner,
                                              meta::LockType type, uint64_t start,
                                              uint64_t end);

}  // namespace folio::fs
