// Lock ranks of the page cache, and a debug-build check that every thread takes them in order.
//
// Lock order (outermost first). A thread may block on a lock only while holding locks of a
// strictly lower rank; try-locks may be taken out of order (they never wait):
//
//   rank  lock                                   held while
//   0     AddressSpaceImpl::size_lock_ (shared)  a Write (shared) / Truncate, gap write (excl.)
//   1     AddressSpaceImpl::wb_mu_               one writeback pass of one address space
//   2     folio lock (kFolioLocked bit)          I/O on the folio, modifying it, split, drop
//   3     AddressSpaceImpl::mu_                  index stores, readahead streams, zero ranges
//   4     PageCacheImpl::lru_mu_                 LRU list surgery, the clean-eviction scan
//   -     leaf locks: arena internals, wait-table buckets, registry, queues, throttle
//
// Two rules that are not plain rank order, both checked here or by construction:
//   * Blocking on a folio lock (or on any folio flag) is allowed only while holding NO folio
//     lock, no mu_ and no lru_mu_. A thread that needs several folios locked (writeback)
//     try-locks them and, when one is busy, finishes what it holds before it waits.
//   * Reclaim runs under lru_mu_ and takes an address space's mu_ with try_lock only, so the
//     inverted pair (lru_mu_ -> mu_) never waits. Allocation with reclaim is therefore only
//     allowed while holding nothing of rank >= 1 (it may take any wb_mu_).
//   * A thread that holds a reference to a folio it has not locked never blocks before
//     dropping it (split spins, under the folio lock, for the other references to go).
//
// Thread safety: per-thread state only.
#pragma once

#include <mutex>
#include <shared_mutex>

namespace folio::cache {

enum class LockRank : int { kSize = 0, kWriteback = 1, kFolio = 2, kMapping = 3, kLru = 4 };
inline constexpr int kLockRanks = 5;

#ifndef NDEBUG
// Before a blocking acquisition of `rank`: checks that no lock of rank >= `rank` is held.
void RankCheckBlock(LockRank rank);
void RankAcquired(LockRank rank);
void RankReleased(LockRank rank);
// Checks that no lock of rank >= `rank` is held (e.g. before allocation with reclaim).
void RankAssertNoneFrom(LockRank rank);
int RankHeld(LockRank rank);
#else
inline void RankCheckBlock(LockRank) {}
inline void RankAcquired(LockRank) {}
inline void RankReleased(LockRank) {}
inline void RankAssertNoneFrom(LockRank) {}
inline int RankHeld(LockRank) { return 0; }
#endif

// RAII lock of a std::mutex at a rank.
class [[nodiscard]] RankedLock {
 public:
  RankedLock(std::mutex& mu, LockRank rank) : mu_(&mu), rank_(rank) {
    RankCheckBlock(rank_);
    mu_->lock();
    RankAcquired(rank_);
  }
  // Adopts a lock taken with try_lock.
  RankedLock(std::mutex& mu, LockRank rank, std::adopt_lock_t) : mu_(&mu), rank_(rank) {
    RankAcquired(rank_);
  }
  ~RankedLock() { Unlock(); }
  void Unlock() {
    if (mu_ == nullptr) return;
    RankReleased(rank_);
    mu_->unlock();
    mu_ = nullptr;
  }
  RankedLock(const RankedLock&) = delete;
  RankedLock& operator=(const RankedLock&) = delete;

 private:
  std::mutex* mu_;
  LockRank rank_;
};

// RAII shared or exclusive lock of the size lock (rank 0).
class [[nodiscard]] SizeLock {
 public:
  enum class Mode { kShared, kExclusive };
  SizeLock(std::shared_mutex& mu, Mode mode) : mu_(&mu), mode_(mode) {
    RankCheckBlock(LockRank::kSize);
    if (mode_ == Mode::kShared) {
      mu_->lock_shared();
    } else {
      mu_->lock();
    }
    RankAcquired(LockRank::kSize);
  }
  ~SizeLock() {
    RankReleased(LockRank::kSize);
    if (mode_ == Mode::kShared) {
      mu_->unlock_shared();
    } else {
      mu_->unlock();
    }
  }
  SizeLock(const SizeLock&) = delete;
  SizeLock& operator=(const SizeLock&) = delete;

 private:
  std::shared_mutex* mu_;
  Mode mode_;
};

}  // namespace folio::cache
