// PageCacheImpl: compaction, the folio arena's answer to fragmentation (Linux's mm/compaction.c,
// reduced to what a cache that owns every folio in its arena needs).
//
// When a folio of order k >= 1 cannot be had even after reclaim, AllocFolio calls
// CompactForOrder(k) once, before it falls back to a smaller folio:
//
//   1. Select. Starting where the previous attempt stopped (the kernel's cached migrate
//      scanner position), look at up to kScanBudgetPages of the arena in 2^k-aligned blocks.
//      For each, FolioArena::ScanBlock lists the folios inside; the block is a candidate when
//      each of them is movable: on the LRU, unlocked, not under writeback, without read or
//      write errors, and held by nobody but its index (refcount 1). Under kEvict a dirty folio
//      is not movable (dropping it would lose data). The cheapest candidate wins (fewest pages
//      to move); a block whose occupants are at most 1/8 of it ends the search at once.
//   2. Isolate. FolioArena::TakeFreeIn takes the block's free parts off the free lists, so
//      neither the copies made in step 3 nor other threads' allocations land in it (the
//      kernel's isolated pageblock).
//   3. Move. Each occupant is frozen under its address space's mutex (refcount 1 -> 0, which
//      fails if a reader or writer took a reference meanwhile) and either copied into a new
//      folio allocated outside the block whose slots then replace it in the index and on the
//      LRU (migrate; its dirty / uptodate page bits move with it), or removed from the index
//      (evict). Lock-free readers that meet the frozen folio retry and find the copy. The old
//      folio's frames now belong to compaction. One busy occupant aborts the attempt.
//   4. Capture. What the block's frames became (free parts, the occupants' old frames,
//      copies that happened to land inside) is merged by FolioArena::AssembleBlock into one
//      folio of order k, which AllocFolio returns: the requester gets the block it paid for
//      (the kernel's capture_control), nobody splits it first. On an abort the pieces go back
//      to the arena, where they coalesce with whatever is free.
//
// Bounds: one block per attempt, so at most 2^k - 1 pages copied or dropped (1 MiB at k = 9)
// and kScanBudgetPages of descriptors looked at; it never waits for I/O or for a folio lock
// (a busy occupant aborts the attempt instead), and takes each mapping mutex only while it
// moves one folio.
//
// Why migrate is the default (docs/compaction.md has the numbers): the block is chosen by
// where its folios sit, not by how cold they are, so evicting them drops data the LRU would
// have kept (a re-read from the device later) and cannot move dirty folios at all, while a
// copy costs a memcpy of at most 1 MiB and leaves eviction to the LRU's order.
//
// The background compactor (PageCacheOptions::compaction_background; the kernel's kcompactd,
// which kswapd wakes when a high-order allocation fails): AllocFolio's compaction path also
// sets the order's bit in compact_wanted_ and wakes CompactionThread, which builds blocks of
// that order with the same CompactForOrder and frees them to the arena's shared lists
// (FreeShared) until kBackgroundFreeBlocks are free, so the next requests of that order find
// one free instead of compacting themselves. Compaction gathers free memory and makes none, so
// when the free frames in smaller pieces do not add up to a block, it first reclaims that much
// from the cold end of the LRU (clean folios only, no I/O: kswapd's part before kcompactd's).
// Its bounds: kBackgroundAttempts blocks and kBackgroundFreeBlocks blocks' worth of reclaim per
// order and round, a round per compaction_background_interval_ms at most, and nothing at all
// until a request of that order failed to find a block (no block is built that nobody asked
// for).
//
// Thread safety: CompactForOrder may run in any thread that may reclaim (no lock of rank >=
// kWriteback held), concurrently with every other cache operation.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "cache/address_space_impl.h"
#include "cache/cache_impl.h"
#include "cache/folio_sync.h"
#include "cache/lock_rank.h"

namespace folio {

std::string_view CompactionModeName(CompactionMode m) {
  switch (m) {
    case CompactionMode::kOff: return "off";
    case CompactionMode::kEvict: return "evict";
    case CompactionMode::kMigrate: return "migrate";
  }
  return "unknown";
}

Result<CompactionMode> ParseCompactionMode(std::string_view text) {
  for (CompactionMode m : {CompactionMode::kOff, CompactionMode::kEvict, CompactionMode::kMigrate}) {
    if (text == CompactionModeName(m)) return m;
  }
  return Status::InvalidArgument(
      fmt::format("compaction '{}': unknown mode; use migrate, evict or off", text));
}

namespace cache {
namespace {

// Descriptors looked at per attempt: 128 MiB of arena.
constexpr uint32_t kScanBudgetPages = 1u << 15;
constexpr uint32_t kUnmovable = ~0u;
// The background compactor stops building blocks of an order once this many of at least that
// order are free, and makes at most kBackgroundAttempts per order and round.
constexpr uint64_t kBackgroundFreeBlocks = 2;
constexpr int kBackgroundAttempts = 8;
// What a copy keeps of the old folio's flags (kFolioLru is the LRU's, set when it links it).
constexpr uint32_t kMigratedFlags = kFolioUptodate | kFolioDirty | kFolioReferenced |
                                    kFolioReadahead | kFolioRaUnused | kFolioReclaimWb;
constexpr uint32_t kPinnedFlags = kFolioLocked | kFolioWriteback | kFolioError | kFolioWbError;

}  // namespace

uint32_t PageCacheImpl::BlockCost(const std::vector<Folio*>& occupants) const {
  uint32_t pages = 0;
  for (const Folio* f : occupants) {
    const uint32_t flags = f->flags.load(std::memory_order_acquire);
    if (!(flags & kFolioLru) || (flags & kPinnedFlags) ||
        f->refcount.load(std::memory_order_acquire) != 1) {
      return kUnmovable;
    }
    if ((flags & kFolioDirty) && options_.compaction != CompactionMode::kMigrate) {
      return kUnmovable;
    }
    pages += static_cast<uint32_t>(f->nr_pages());
  }
  return pages;
}

bool PageCacheImpl::SelectBlock(int order, uint32_t* first, std::vector<Folio*>* occupants) {
  const uint32_t pages = static_cast<uint32_t>(OrderPages(order));
  const uint32_t blocks = arena_->frame_count() / pages;
  const uint32_t budget = std::clamp<uint32_t>(kScanBudgetPages / pages, 1, blocks);
  const uint32_t start = compact_cursor_.load(std::memory_order_relaxed) / pages % blocks;
  std::vector<Folio*> scan;
  uint32_t best_cost = kUnmovable;
  uint32_t looked = 0;
  while (looked < budget) {
    const uint32_t frame = (start + looked) % blocks * pages;
    ++looked;
    uint32_t free_pages = 0;
    if (!arena_->ScanBlock(frame, order, &scan, &free_pages)) continue;
    const uint32_t cost = BlockCost(scan);
    if (cost < best_cost) {
      best_cost = cost;
      *first = frame;
      occupants->swap(scan);
      if (cost <= pages / 8) break;
    }
  }
  compact_cursor_.store((start + looked) % blocks * pages, std::memory_order_relaxed);
  CacheCounters::Add(counters_.compact_blocks_scanned, looked);
  return best_cost != kUnmovable;
}

Folio* PageCacheImpl::AllocOutside(int order, uint32_t first, int block_order,
                                   std::vector<Folio*>* pieces) {
  const uint32_t end = first + static_cast<uint32_t>(OrderPages(block_order));
  for (int attempt = 0; attempt < 4; ++attempt) {
    Result<Folio*> r = arena_->Alloc(order);
    if (!r.ok()) return nullptr;
    Folio* d = *r;
    if (d->frame < first || d->frame >= end) return d;
    // Freed into the block meanwhile (someone evicted an occupant): part of the block now.
    d->refcount.store(0, std::memory_order_release);
    pieces->push_back(d);
  }
  return nullptr;
}

bool PageCacheImpl::MoveOut(Folio* f, uint32_t first, int block_order,
                            std::vector<Folio*>* pieces) {
  AddressSpaceImpl* as;
  {
    RankedLock lock(lru_mu_, LockRank::kLru);
    if (!f->TestFlag(kFolioLru)) return false;
    // On the LRU, so its address space is alive; the pin keeps it so until we are done.
    as = static_cast<AddressSpaceImpl*>(f->owner.load(std::memory_order_acquire));
    if (as == nullptr) return false;
    as->Pin();
  }
  const int order = f->order;
  Folio* dst = nullptr;
  if (options_.compaction == CompactionMode::kMigrate) {
    dst = AllocOutside(order, first, block_order, pieces);
  }
  const bool moved = as->MoveForCompaction(f, dst);
  as->Unpin();
  if (!moved) {
    if (dst != nullptr) arena_->Free(dst);
    return false;
  }
  if (dst != nullptr) {
    CacheCounters::Add(counters_.compact_migrated_folios);
    CacheCounters::Add(counters_.compact_migrated_bytes, OrderBytes(order));
  } else {
    CacheCounters::Add(counters_.compact_evicted_folios);
    CacheCounters::Add(counters_.compact_evicted_bytes, OrderBytes(order));
    CacheCounters::Add(counters_.evictions[order]);
  }
  pieces->push_back(f);
  return true;
}

Folio* PageCacheImpl::CompactForOrder(int order) {
  FOLIO_DCHECK(order >= 1 && options_.compaction != CompactionMode::kOff);
  RankAssertNoneFrom(LockRank::kWriteback);
  uint32_t first = 0;
  std::vector<Folio*> occupants;
  if (!SelectBlock(order, &first, &occupants)) return nullptr;
  std::vector<Folio*> pieces;
  arena_->TakeFreeIn(first, order, &pieces);
  bool all_moved = true;
  for (Folio* f : occupants) {
    if (!MoveOut(f, first, order, &pieces)) {
      all_moved = false;
      break;
    }
  }
  if (all_moved) {
    // Frames freed into the block meanwhile (an occupant evicted by reclaim) are ours too.
    arena_->TakeFreeIn(first, order, &pieces);
    if (Folio* block = arena_->AssembleBlock(first, order, &pieces)) return block;
  }
  for (Folio* p : pieces) arena_->Free(p);
  return nullptr;
}

void PageCacheImpl::WantCompaction(int order) {
  if (!compact_thread_.joinable()) return;
  const uint32_t bit = 1u << order;
  if (compact_wanted_.fetch_or(bit, std::memory_order_acq_rel) & bit) return;  // already owed
  {
    std::lock_guard<std::mutex> lock(bg_mu_);
    compact_kicked_ = true;
  }
  compact_cv_.notify_one();
}

void PageCacheImpl::CompactionThread() {
  const auto interval = std::chrono::milliseconds(
      std::max<uint64_t>(1, options_.compaction_background_interval_ms));
  std::unique_lock<std::mutex> lock(bg_mu_);
  while (!stop_) {
    compact_cv_.wait(lock, [&] { return stop_ || compact_kicked_; });
    if (stop_) break;
    compact_kicked_ = false;
    lock.unlock();
    CompactInBackground();
    lock.lock();
    // At most a round per interval: a workload that fragments the arena as fast as it is
    // compacted gets the copies of a round per interval, not a core of them.
    compact_cv_.wait_for(lock, interval, [&] { return stop_; });
  }
}

PageCacheImpl::FreeShape PageCacheImpl::FreeShapeFor(int order) const {
  const ArenaStats a = arena_->Stats();
  FreeShape shape;
  for (int o = 0; o <= kMaxOrder; ++o) {
    if (o >= order) {
      shape.blocks_at_least += a.orders[o].free_folios;
    } else {
      shape.bytes_below += a.orders[o].free_folios * OrderBytes(o);
    }
  }
  return shape;
}

void PageCacheImpl::CompactInBackground() {
  const uint32_t wanted = compact_wanted_.exchange(0, std::memory_order_acq_rel);
  for (int order = kMaxOrder; order >= 1; --order) {
    if (!(wanted & (1u << order))) continue;
    uint64_t reclaimed = 0;
    for (int attempt = 0; attempt < kBackgroundAttempts; ++attempt) {
      if (stopping_.load(std::memory_order_relaxed)) return;
      const FreeShape shape = FreeShapeFor(order);
      if (shape.blocks_at_least >= kBackgroundFreeBlocks) break;
      if (shape.bytes_below < OrderBytes(order)) {
        // Compaction gathers free memory, it does not make it (the kernel's
        // compaction_suitable): with less than a block's worth free in smaller pieces, an
        // attempt would only move the hole the last one left (the copies land in it). So
        // first make that much from the cold end of the LRU, clean folios only, never
        // waiting for I/O (kswapd's part before kcompactd's).
        if (reclaimed >= kBackgroundFreeBlocks * OrderBytes(order)) break;
        const size_t got = Reclaim(OrderBytes(order) - shape.bytes_below, AllocMode::kCleanOnly);
        if (got == 0) break;
        reclaimed += got;
        CacheCounters::Add(counters_.compact_background_reclaimed_bytes, got);
        continue;
      }
      CacheCounters::Add(counters_.compact_background_attempts);
      Folio* block = CompactForOrder(order);
      if (block == nullptr) break;  // nothing movable within the scan budget now
      CacheCounters::Add(counters_.compact_background_blocks);
      arena_->FreeShared(block);  // not into this thread's cache: the requesters' to take
    }
  }
}

void PageCacheImpl::LruReplace(Folio* old, Folio* f) {
  RankedLock lock(lru_mu_, LockRank::kLru);
  if (old->TestFlag(kFolioLru)) {
    lru_.InsertAfter(old, f);
    lru_.Remove(old);
  } else {
    lru_.PushTail(f);
  }
}

bool AddressSpaceImpl::MoveForCompaction(Folio* f, Folio* dst) {
  RankedLock lock(mu_, LockRank::kMapping);
  // Under mu_ a folio in the index keeps its slots: check it is still ours before freezing.
  if (f->owner.load(std::memory_order_acquire) != this) return false;
  const uint64_t index = f->index.load(std::memory_order_relaxed);
  if (index_.Load(index) != f) return false;
  int32_t one = 1;
  if (!f->refcount.compare_exchange_strong(one, 0, std::memory_order_acq_rel)) return false;
  // Frozen: nobody can take a reference, so nobody can lock, write or write back f now.
  const uint32_t flags = f->flags.load(std::memory_order_acquire);
  const int order = f->order;
  if ((flags & kPinnedFlags) || (dst == nullptr && (flags & kFolioDirty)) ||
      (dst != nullptr && dst->order != order)) {
    f->refcount.store(1, std::memory_order_release);
    return false;
  }
  if (dst == nullptr) {
    RemoveFrozenLocked(f);
    lock.Unlock();
    cache_->LruRemove(f);
  } else {
    const uint32_t nr = static_cast<uint32_t>(f->nr_pages());
    std::memcpy(cache_->Data(dst), cache_->Data(f), f->bytes());
    PageState& ps = cache_->pages();
    // Per-page state stays with the data: a partly up-to-date folio's page bits, dirty bits
    // (the index's dirty bit and the dirty byte counts are per index: unchanged).
    ps.uptodate.Clear(dst->frame, nr);
    if (!(flags & kFolioUptodate)) ps.uptodate.SetMask(dst->frame, nr, ps.uptodate.Get(f->frame, nr));
    if (flags & kFolioDirty) {
      const PageMask dirty = ps.dirty.Get(f->frame, nr);
      ps.dirty.SetMask(dst->frame, nr, dirty);
      ps.dirty.ClearMask(f->frame, nr, dirty);
    }
    // The pages read since reclaim last looked (its sparse rule), as they were.
    ps.MoveReads(f->frame, dst->frame, nr);
    dst->flags.store(flags & kMigratedFlags, std::memory_order_relaxed);
    dst->owner.store(this, std::memory_order_relaxed);
    dst->index.store(index, std::memory_order_relaxed);
    index_.Store(index, order, dst);  // release: readers that find dst see all of the above
    cache_->LruReplace(f, dst);
    lock.Unlock();
  }
  // Out of the index and off the LRU: the frames are the caller's. Wake anyone who slept on f.
  f->owner.store(nullptr, std::memory_order_release);
  ClearFlagsAndWake(f, ~0u);
  return true;
}

}  // namespace cache
}  // namespace folio
