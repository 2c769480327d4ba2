#include "fs/lock_ranges.h"

#include <algorithm>

namespace folio::fs {

std::vector<meta::PlockRecord> ApplyLockRange(const std::vector<meta::PlockRecord>& mine,
                                              meta::LockType type, uint64_t start, uint64_t end,
                                              uint32_t pid) {
  std::vector<meta::PlockRecord> out;
  out.reserve(mine.size() + 2);
  for (const meta::PlockRecord& r : mine) {
    if (!RangesOverlap(r.start, r.end, start, end)) {
      out.push_back(r);
      continue;
    }
    // Keep the parts of r outside [start, end].
    if (r.start < start) {
      meta::PlockRecord left = r;
      left.end = start - 1;
      out.push_back(left);
    }
    if (r.end > end) {
      meta::PlockRecord right = r;
      right.start = end + 1;
      out.push_back(right);
    }
  }
  if (type != meta::LockType::kUnlock) {
    meta::PlockRecord n = mine.empty() ? meta::PlockRecord{} : mine.front();
    n.type = type;
    n.start = start;
    n.end = end;
    n.pid = pid;
    out.push_back(n);
  }
  std::sort(out.begin(), out.end(),
            [](const meta::PlockRecord& a, const meta::PlockRecord& b) { return a.start < b.start; });
  std::vector<meta::PlockRecord> merged;
  for (const meta::PlockRecord& r : out) {
    if (!merged.empty()) {
      meta::PlockRecord& last = merged.back();
      if (last.type == r.type && last.end != UINT64_MAX && last.end + 1 == r.start) {
        last.end = r.end;
        last.pid = r.pid;
        continue;
      }
    }
    merged.push_back(r);
  }
  return merged;
}

std::optional<meta::PlockRecord> FindConflict(const std::vector<meta::PlockRecord>& all,
                                              meta::SessionId session, uint64_t owner,
                                              meta::LockType type, uint64_t start,
                                              uint64_t end) {
  for (const meta::PlockRecord& r : all) {
    if (r.session == session && r.owner == owner) continue;
    if (!RangesOverlap(r.start, r.end, start, end)) continue;
    if (type == meta::LockType::kWrite || r.type == meta::LockType::kWrite) return r;
  }
  return std::nullopt;
}

}  // namespace folio::fs
