// Debug-build lock order check for the arena's locks (see spin_lock.h).
#include "mem/spin_lock.h"

#ifndef NDEBUG

namespace folio::mem {
namespace {

constexpr int kLevels = 3;
thread_local int held_count[kLevels] = {0, 0, 0};

}  // namespace

void LockOrderAcquire(LockLevel level) {
  int l = static_cast<int>(level);
  for (int higher = l + 1; higher < kLevels; ++higher) {
    FOLIO_CHECK_MSG(held_count[higher] == 0,
                    "arena lock order violated: a lock taken while holding a later-level lock "
                    "(order is registry -> thread cache -> buddy)");
  }
  if (level == LockLevel::kThreadCache && held_count[l] > 0) {
    FOLIO_CHECK_MSG(held_count[static_cast<int>(LockLevel::kRegistry)] > 0,
                    "arena lock order violated: two thread-cache locks held without the "
                    "registry lock");
  }
  if (level != LockLevel::kThreadCache) {
    FOLIO_CHECK_MSG(held_count[l] == 0, "arena lock order violated: lock level taken twice");
  }
  ++held_count[l];
}

void LockOrderRelease(LockLevel level) {
  int l = static_cast<int>(level);
  FOLIO_CHECK_MSG(held_count[l] > 0, "arena lock released that was not held");
  --held_count[l];
}

}  // namespace folio::mem

#endif  // NDEBUG
