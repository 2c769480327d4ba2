// ArenaCore: the allocator state behind one FolioArena: the buddy free lists under one global
// lock, plus per-thread caches of free blocks of orders 0..kCachedOrderMax so that threads
// allocating and freeing small folios do not serialise on that lock.
//
// Lock order (checked in debug builds, see spin_lock.h):
//
//     registry_mu_  ->  ThreadCache::lock  ->  buddy_mu_
//
// Per-thread caches. A thread that allocates or frees a small folio gets one ThreadCache per
// arena, owned jointly (shared_ptr) by the thread's TLS list and the arena's registry. The
// owner pushes and pops under the cache's spin lock (uncontended: one atomic exchange); other
// threads take that lock only to drain the cache (an Alloc that found nothing, Drain, Stats,
// CheckInvariants). A cache holds at most cache_limit_[order] blocks per order; a refill or a
// flush moves cache_batch_[order] blocks under one buddy lock. When the thread exits, its
// blocks and counters go back to the arena; an arena destroyed first detaches every cache, so
// a later thread exit touches only its own ThreadCache.
//
// Invariants:
//   1. A block head is in exactly one place: a buddy free list (kStateFree), one cache stack
//      (kStateCached) or a user's hands (kStateAllocated).
//   2. cache->arena == nullptr <=> cache->retired; a retired cache holds no blocks or counts.
//   3. An Alloc that finds no block drains every cache and retries before it fails, so
//      failure means no free block of that order exists anywhere (memory is fully coalesced).
//
// Thread safety: every public method is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/cache_line.h"
#include "folio/arena.h"
#include "mem/buddy.h"
#include "mem/spin_lock.h"

namespace folio::mem {

class ArenaCore;

inline constexpr int kCachedOrders = FolioArena::kCachedOrderMax + 1;

struct alignas(kFalseSharingBytes) ThreadCache {
  struct Stack {
    Folio* top = nullptr;  // linked through Folio::next
    uint32_t count = 0;
  };
  SpinLock lock;
  ArenaCore* arena = nullptr;       // GUARDED_BY(lock); null once retired
  std::atomic<bool> retired{false};  // written under lock; read lock-free to prune
  Stack stacks[kCachedOrders];       // GUARDED_BY(lock)
  uint64_t allocs[kCachedOrders] = {};  // GUARDED_BY(lock)
  uint64_t frees[kCachedOrders] = {};   // GUARDED_BY(lock)
};

class ArenaCore {
 public:
  // REQUIRES: descs[0..frame_count) initialised with their frame numbers; frame_count a
  // multiple of 2^kMaxOrder.
  ArenaCore(Folio* descs, uint32_t frame_count);
  // Detaches every thread cache. REQUIRES: no concurrent Alloc / Free on this arena.
  ~ArenaCore();
  ArenaCore(const ArenaCore&) = delete;
  ArenaCore& operator=(const ArenaCore&) = delete;

  // Returns a head of `order` marked allocated (order set; user fields untouched), or nullptr
  // when no free block of order >= `order` exists after draining every thread cache.
  Folio* Alloc(int order);
  // REQUIRES: head is marked allocated (checked by the caller).
  void Free(Folio* head);
  // Free onto the buddy free lists, bypassing this thread's cache.
  void FreeShared(Folio* head);
  void NoteFallback(int order) { fallbacks_[order].fetch_add(1, std::memory_order_relaxed); }
  // Splits the allocated block headed by `head` (order >= 1) into two allocated halves; returns
  // the upper head. REQUIRES: head is marked allocated (checked by the caller).
  Folio* Split(Folio* head);
  // Returns every thread cache's blocks to the buddy lists.
  void DrainThreadCaches();
  // Compaction (see FolioArena::ScanBlock / TakeFreeIn / AssembleBlock), under the buddy lock.
  bool ScanBlock(uint32_t first, int order, std::vector<Folio*>* allocated,
                 uint32_t* free_pages) const;
  void TakeFreeIn(uint32_t first, int order, std::vector<Folio*>* out);
  bool Assemble(uint32_t first, int order, std::span<Folio* const> pieces);
  // "1.2M free of 16M, largest free folio order 3 (32K)".
  std::string DescribeFree() const;

  ArenaStats Stats() const;          // arena_check.cc
  Status CheckInvariants() const;    // arena_check.cc

  // Thread exit: returns the cache's blocks and counters to its arena (if still alive) and
  // marks it retired.
  static void RetireCache(ThreadCache* cache);

 private:
  // Runs fn() with the registry, every cache and the buddy lock held (a consistent snapshot).
  template <typename Fn>
  auto WithAllLocked(Fn&& fn) const;

  ThreadCache* CurrentCache();
  ThreadCache* CurrentCacheSlow();
  // REQUIRES: c->lock held.
  void Refill(ThreadCache* c, int order);
  // Returns up to n blocks of `order` from c to the buddy lists. REQUIRES: c->lock held.
  void Flush(ThreadCache* c, int order, uint32_t n);
  // Returns every block of c to the buddy lists. REQUIRES: c->lock held.
  void FlushAll(ThreadCache* c);
  Folio* AllocGlobal(int order, bool count_failure);

  const uint64_t id_;  // unique for the process's lifetime (TLS lookup key)
  Folio* const descs_;
  const uint32_t frame_count_;
  uint32_t cache_limit_[kCachedOrders];
  uint32_t cache_batch_[kCachedOrders];

  mutable std::mutex registry_mu_;
  std::vector<std::shared_ptr<ThreadCache>> caches_;  // GUARDED_BY(registry_mu_)

  mutable std::mutex buddy_mu_;
  BuddyAllocator buddy_;                // GUARDED_BY(buddy_mu_)
  uint64_t allocs_[kNumOrders] = {};    // GUARDED_BY(buddy_mu_): global path + retired caches
  uint64_t frees_[kNumOrders] = {};     // GUARDED_BY(buddy_mu_)
  uint64_t failures_[kNumOrders] = {};  // GUARDED_BY(buddy_mu_)
  uint64_t user_splits_[kNumOrders] = {};  // GUARDED_BY(buddy_mu_): Split() of an allocated block
  std::atomic<uint64_t> fallbacks_[kNumOrders] = {};
};

}  // namespace folio::mem
