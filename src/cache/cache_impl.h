// PageCacheImpl: the cache-wide half of the page cache: the folio arena, the LRU clock and
// reclaim, dirty accounting and throttling, the registry of address spaces, and the
// background threads (writeback, collapse scanner, compactor, async readahead completion).
//
// Invariants:
//   1. A folio in some address space's index has refcount >= 1 (the index's own reference)
//      and owner == that address space; it is on the LRU (kFolioLru) from just after its
//      insertion until its removal.
//   2. A folio out of every index is freed by whoever drops its last reference (PutFolio), or
//      directly by reclaim / collapse when they froze it (refcount 1 -> 0).
//   3. counters_.dirty_bytes == 4 KiB x the dirty pages (page_state_.dirty) of all folios; a
//      folio has kFolioDirty iff it has a dirty page.
//   4. A free frame has no dirty, error or writeback bit (page_state.h).
//
// Lock order: see lock_rank.h (lru_mu_ is rank 4; registry / background / throttle mutexes
// are leaves).
//
// Thread safety: every public method is thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/clock.h"
#include "cache/async_reader.h"
#include "cache/counters.h"
#include "cache/lru.h"
#include "cache/page_state.h"
#include "folio/page_cache.h"

namespace folio::cache {

class AddressSpaceImpl;

enum class AllocMode {
  kMayReclaim,  // reclaim clean folios, then write back dirty ones if needed
  kCleanOnly,   // reclaim clean folios only, never wait for I/O (readahead)
  kNoReclaim,   // the arena or nothing (collapse)
};

class PageCacheImpl final : public PageCache {
 public:
  static Result<std::unique_ptr<PageCache>> Create(const PageCacheOptions& options);
  ~PageCacheImpl() override;

  Result<std::unique_ptr<AddressSpace>> Open(BlockDevice* device,
                                             const AddressSpaceOptions& options) override;
  PageCacheStats Stats() const override;
  FolioArena* arena() override { return arena_.get(); }
  const PageCacheOptions& options() const override { return options_; }
  Status SyncAll() override;
  size_t ScanCollapseOnce() override;

  // ---- For address spaces ----------------------------------------------------------------
  char* Data(const Folio* f) const { return arena_->Data(f); }
  PageState& pages() { return page_state_; }
  CacheCounters& counters() { return counters_; }
  AsyncReader& async_reader() { return *async_; }
  uint64_t memory_bytes() const { return arena_->capacity_bytes(); }
  uint64_t dirty_background_bytes() const { return dirty_background_bytes_; }
  uint64_t dirty_limit_bytes() const { return dirty_limit_bytes_; }
  uint64_t readahead_max_pages() const { return readahead_max_pages_; }
  // A readahead window of `bytes`, in pages, capped at an eighth of the cache (at least 4).
  uint64_t ReadaheadPages(uint64_t bytes) const;
  // An aligned buffer of zeros, zero_buffer_bytes() long, for writing zero ranges.
  const char* zero_buffer() const { return zero_buffer_.data(); }
  uint64_t zero_buffer_bytes() const { return kZeroBufferBytes; }

  // Allocates a folio of `order`; when the arena cannot serve it even after reclaim, a smaller
  // one (down to min_order), counted as a fallback of `order`. The folio has refcount 1.
  // Returns NoSpace when not even min_order can be had.
  // REQUIRES: with a reclaiming mode, no lock of rank >= kWriteback held.
  // Context: may block (reclaim may write back dirty folios).
  Result<Folio*> AllocFolio(int order, int min_order, AllocMode mode);
  // Drops a reference; frees the folio if it was the last (it must be out of every index).
  void PutFolio(Folio* f) {
    if (f->Put() == 0) FreeFolio(f);
  }
  // Clears the folio's flags (waking sleepers) and returns it to the arena.
  // REQUIRES: out of every index and off the LRU; refcount 0 or 1 held by the caller.
  void FreeFolio(Folio* f);

  // REQUIRES: none of the folios is on the LRU. Context: takes lru_mu_.
  void LruAdd(std::span<Folio* const> folios);
  // Puts f right after `after` (a split's second half). REQUIRES: f not on the LRU.
  void LruAddAfter(Folio* after, Folio* f);
  // Removes f from the LRU if it is on it. Context: takes lru_mu_.
  void LruRemove(Folio* f);
  // Puts f where old is on the LRU (at the hot end if old is not on it) and unlinks old.
  // REQUIRES: f not on the LRU. Context: takes lru_mu_.
  void LruReplace(Folio* old, Folio* f);

  // ---- flusher.cc: the writeback policy ----
  // Adds (or with a negative delta removes) dirty bytes; above the background threshold, kicks
  // the flusher.
  void AccountDirty(int64_t delta_bytes);
  // Bytes this thread has made dirty (clean -> dirty pages) so far: a writer is throttled for
  // what it dirtied, as balance_dirty_pages counts nr_dirtied, so rewriting dirty data in the
  // cache is never slowed down.
  static uint64_t ThreadDirtiedBytes();
  // A writer about to dirty `bytes`: pauses in proportion above freerun, waits above the limit
  // (balance_dirty_pages; see flusher.cc). Without a flusher, writes back itself instead.
  // REQUIRES: no lock held (it may write back `as`).
  void ThrottleWriter(AddressSpaceImpl* as, uint64_t bytes);
  // Wakes throttled writers (after a writeback batch).
  void NotifyWritebackProgress();
  void KickWriteback();
  // A writeback batch wrote `bytes` in `ns`: updates the bandwidth estimate pauses use.
  void NoteWriteback(uint64_t bytes, uint64_t ns);

  void Register(AddressSpaceImpl* as);
  void Unregister(AddressSpaceImpl* as);

 private:
  static constexpr uint64_t kZeroBufferBytes = 1ull << 20;
  PageCacheImpl(const PageCacheOptions& options, std::unique_ptr<FolioArena> arena);

  // Frees at least target_bytes if it can (clean folios first; with kMayReclaim then dirty
  // ones after writing them back). Returns the bytes freed.
  size_t Reclaim(size_t target_bytes, AllocMode mode);
  // One clock pass over the LRU evicting clean folios. *dirty_seen counts dirty folios passed.
  size_t ReclaimClean(size_t target_bytes, size_t* dirty_seen);
  // Writes back up to target_bytes of dirty folios from the cold end of the LRU.
  size_t WritebackCold(size_t target_bytes);

  // ---- compaction.cc ----
  // Frees one 2^order-aligned block of the arena by moving (or evicting) the folios in it and
  // returns it as a folio of `order` (refcount 1), or null. Bounded; never waits for I/O.
  // REQUIRES: order >= 1, compaction on, no lock of rank >= kWriteback held.
  Folio* CompactForOrder(int order);
  // A request of `order` compacted in its own thread or fell back: wakes the background
  // compactor to build free blocks of that order (a no-op without one).
  void WantCompaction(int order);
  void CompactionThread();
  // One background round: for each wanted order, largest first, blocks built and freed into
  // the arena until kBackgroundFreeBlocks of at least that order are free, less than a block
  // is free in smaller pieces, an attempt fails, or kBackgroundAttempts were made.
  void CompactInBackground();
  // The arena's free memory around `order` (its global lists and thread caches): free blocks
  // of at least that order, and bytes free in smaller blocks.
  struct FreeShape {
    uint64_t blocks_at_least = 0;
    uint64_t bytes_below = 0;
  };
  FreeShape FreeShapeFor(int order) const;
  // Pages the occupants of a block occupy, or ~0u when one of them cannot move now.
  uint32_t BlockCost(const std::vector<Folio*>& occupants) const;
  // The cheapest block of `order` within the scan budget: *first and its occupants.
  bool SelectBlock(int order, uint32_t* first, std::vector<Folio*>* occupants);
  // A folio of `order` outside the block at first (copies into the block become pieces).
  Folio* AllocOutside(int order, uint32_t first, int block_order, std::vector<Folio*>* pieces);
  // Moves f out of the block (migrate, or evict when there is no room or in kEvict) and adds
  // its frames to *pieces. False when f is busy or gone.
  bool MoveOut(Folio* f, uint32_t first, int block_order, std::vector<Folio*>* pieces);

  // The registered address spaces, each pinned (Unpin each when done).
  std::vector<AddressSpaceImpl*> PinAll();
  void WritebackThread();
  // One flusher round: expired address spaces, then background chunks (flusher.cc).
  void FlushRound();
  void SetDirtyThresholds(uint64_t capacity);
  void CollapseThread();

  const PageCacheOptions options_;
  std::unique_ptr<FolioArena> arena_;
  uint64_t dirty_background_bytes_ = 0;
  uint64_t dirty_limit_bytes_ = 0;
  uint64_t dirty_freerun_bytes_ = 0;   // (background + limit) / 2: writers pause above it
  std::atomic<uint64_t> wb_bandwidth_{0};  // bytes/s, an average over writeback batches
  uint64_t readahead_max_pages_ = 0;
  AlignedBuffer zero_buffer_;  // zeros, kZeroBufferBytes
  CacheCounters counters_;
  PageState page_state_;  // per-page bits of every frame of the arena

  std::mutex lru_mu_;
  LruList lru_;  // GUARDED_BY(lru_mu_)
  std::atomic<uint32_t> compact_cursor_{0};  // frame where the next block selection starts
  std::atomic<uint32_t> compact_wanted_{0};  // bit k: the background compactor owes order k

  std::mutex registry_mu_;
  std::vector<AddressSpaceImpl*> spaces_;  // GUARDED_BY(registry_mu_)

  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool wb_kicked_ = false;  // GUARDED_BY(bg_mu_)
  bool stop_ = false;       // GUARDED_BY(bg_mu_)
  std::atomic<bool> stopping_{false};  // == stop_, for loops that do not hold bg_mu_
  std::atomic<bool> wb_kick_pending_{false};

  std::condition_variable compact_cv_;  // the background compactor waits here (bg_mu_)
  bool compact_kicked_ = false;         // GUARDED_BY(bg_mu_)

  std::mutex throttle_mu_;
  std::condition_variable throttle_cv_;

  std::unique_ptr<AsyncReader> async_;
  std::vector<std::thread> wb_threads_;
  std::thread collapse_thread_;
  std::thread compact_thread_;
};

}  // namespace folio::cache
