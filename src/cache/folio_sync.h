// Folio synchronisation for the page cache: the folio lock, sleeping until flag bits clear,
// and the per-folio sequence lock that lets lock-free readers copy out of a folio while a
// writer (holding the folio lock) may be modifying it.
//
// Waiting: like the kernel's folio_wait_bit, sleepers hash into a shared table of
// (mutex, condition variable) buckets and announce themselves with kFolioWaiters, so a waker
// pays a bucket lock only when someone sleeps. A waiter never needs a reference: descriptors
// are type-stable, and every path that frees a folio clears its flags and wakes first.
//
// Sequence lock: Folio::private_data (through std::atomic_ref) is the sequence; a writer makes
// it odd while it copies into an up-to-date folio, readers retry when it changed. Under TSan
// the seqlock-protected copies use relaxed atomic words so the race is a defined one.
//
// Thread safety: all functions are thread-safe; the contracts below say what must be held.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cache/lock_rank.h"
#include "folio/arena.h"

namespace folio::cache {

// Cache-private flag bits (above the arena's FolioFlag bits).
inline constexpr uint32_t kFolioWaiters = 1u << 8;     // someone sleeps on this folio
inline constexpr uint32_t kFolioRaUnused = 1u << 9;    // read ahead, not yet read by a user
inline constexpr uint32_t kFolioReclaimWb = 1u << 10;  // written back by reclaim, evict next
// Its last writeback failed: up to date in memory, not on the device, not redirtied (a dead
// device never hangs the cache); counted in the address space's unwritten bytes.
inline constexpr uint32_t kFolioWbError = 1u << 11;

// Clears `bits` and wakes every sleeper on the folio.
void ClearFlagsAndWake(Folio* f, uint32_t bits);

// Takes the folio lock if it is free. Returns true on success. Folio locks are counted per
// thread in debug builds (lock_rank.h); a lock handed to another thread (an async read's
// folios go to the I/O thread) is released from the count with HandOffFolioLock.
inline bool TryLockFolio(Folio* f) {
  if (!f->TestAndSetFlag(kFolioLocked)) return false;
  RankAcquired(LockRank::kFolio);
  return true;
}
// For folios created locked (InsertNew, split).
inline void NoteFolioLocked() { RankAcquired(LockRank::kFolio); }
inline void HandOffFolioLock() { RankReleased(LockRank::kFolio); }

// REQUIRES: the caller holds the folio lock.
inline void UnlockFolio(Folio* f) {
  RankReleased(LockRank::kFolio);
  ClearFlagsAndWake(f, kFolioLocked);
}

// Sleeps until none of `bits` is set in f->flags.
// REQUIRES: the caller holds no folio lock, no mapping or LRU mutex, and no reference it
// would need to drop for the bits to clear (see lock_rank.h).
// Context: may block.
void WaitFolioClear(Folio* f, uint32_t bits);

// Spin-then-yield backoff for short waits (a frozen folio, an odd sequence).
void Backoff(int attempt);

// ---- Sequence lock --------------------------------------------------------------------------

// Copies n bytes from src (inside f's data) to dst, retrying while a writer modifies f.
// REQUIRES: a reference to f; f up to date.
void CopyFromFolio(Folio* f, const char* src, char* dst, size_t n);

// Copies n bytes into an up-to-date folio visible to readers (dst inside f's data), making the
// sequence odd around the copy. src == nullptr writes zeros.
// REQUIRES: the folio lock.
void CopyIntoFolio(Folio* f, char* dst, const char* src, size_t n);

}  // namespace folio::cache
