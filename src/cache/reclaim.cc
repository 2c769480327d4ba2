// PageCacheImpl: folio allocation with reclaim, the LRU clock, freeing.
//
// Reclaim walks the LRU from its cold end under lru_mu_: a referenced folio loses its bit and
// goes to the hot end (second chance), unless it is a large folio whose reads since the last
// look went to a few of its pages, read over and over (page_state.h kSparseShare): that one is
// evicted as if unreferenced (sparse_evictions). A clean, unlocked folio nobody else holds is
// frozen (refcount 1 -> 0, under its address space's mutex taken with try_lock), removed from the
// index and freed, folio by folio; a dirty folio is passed over on the clean pass. Only when a
// pass freed too little does reclaim write back a batch of cold dirty folios (through their
// address spaces' writeback, so pending zero ranges still go first) and then evict them.
// Reclaim frees a batch (at least memory/64) so that not every allocation has to reclaim.
#include <algorithm>

#include <fmt/format.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/units.h"
#include "cache/address_space_impl.h"
#include "cache/cache_impl.h"
#include "cache/folio_sync.h"
#include "cache/lock_rank.h"

namespace folio::cache {
namespace {

constexpr uint64_t kAllocPatienceNs = 20ull * 1000000000ull;

// A referenced large folio whose read hits since the last look (the page bits, cleared here)
// went to fewer than 1 in kSparseShare of its pages, some of them read again (page_state.h).
// A folio with no page bits was referenced some other way (a collapse keeps the folio's bit,
// not the pages'): not sparse.
bool SparselyReferenced(PageState& ps, const Folio* f) {
  if (f->order < kSparseMinOrder) return false;
  return ps.TakeSparse(f->frame, static_cast<uint32_t>(f->nr_pages()));
}

}  // namespace

Result<Folio*> PageCacheImpl::AllocFolio(int order, int min_order, AllocMode mode) {
  if (mode != AllocMode::kNoReclaim) RankAssertNoneFrom(LockRank::kWriteback);
  // Reads' and writes' requests (not collapse's) are counted once they got a folio.
  auto served = [&](Folio* f, int got) {
    if (mode != AllocMode::kNoReclaim) CacheCounters::Add(counters_.requests[order]);
    if (got < order) {
      arena_->NoteFallback(order);
      CacheCounters::Add(counters_.fallbacks[order]);
    }
    // Its pages start unread (reclaim's sparse rule): frames keep their bits when freed.
    page_state_.ForgetReads(f->frame, static_cast<uint32_t>(f->nr_pages()));
  };
  Result<Folio*> r = arena_->Alloc(order);
  if (r.ok()) {
    served(*r, order);
    return r;
  }
  const size_t target = std::max<size_t>(OrderBytes(order), memory_bytes() / 64);
  if (mode != AllocMode::kNoReclaim) {
    Reclaim(target, mode);
    r = arena_->Alloc(order);
    if (r.ok()) {
      served(*r, order);
      return r;
    }
    // Free memory is there but in pieces: build the block instead of falling back, and have
    // the background compactor build the next ones ahead of time.
    if (order >= 1 && options_.compaction != CompactionMode::kOff) {
      CacheCounters::Add(counters_.compact_attempts);
      Folio* f = CompactForOrder(order);
      // After this attempt, not before: the compactor would race it for the same block.
      WantCompaction(order);
      if (f != nullptr) {
        CacheCounters::Add(counters_.compact_successes);
        CacheCounters::Add(counters_.compacted[order]);
        served(f, order);
        return f;
      }
    }
  }
  for (int o = order - 1; o >= min_order; --o) {
    r = arena_->Alloc(o);
    if (r.ok()) {
      served(*r, o);
      return r;
    }
  }
  if (mode != AllocMode::kMayReclaim) return r.status();
  // Whatever is left is referenced, locked, dirty or under I/O: keep reclaiming (writing dirty
  // folios back) until something frees up.
  // Patience is real time (a liveness guard against a real hang), whatever clock a test installs.
  const uint64_t deadline_ns = SystemClock().NowNs() + kAllocPatienceNs;
  for (int attempt = 0;; ++attempt) {
    Reclaim(target, AllocMode::kMayReclaim);
    r = arena_->Alloc(min_order);
    if (r.ok()) {
      served(*r, min_order);
      return r;
    }
    if (SystemClock().NowNs() > deadline_ns) {
      return Status::NoSpace(fmt::format(
          "page cache: no memory for an order-{} folio: all {} of the cache is referenced, "
          "locked or under I/O; use a larger --cache",
          min_order, FormatSize(memory_bytes())));
    }
    Backoff(attempt);
  }
}

void PageCacheImpl::FreeFolio(Folio* f) {
  FOLIO_DCHECK(!f->TestFlag(kFolioLru));
#ifndef NDEBUG
  if (auto* as = static_cast<AddressSpaceImpl*>(f->owner.load(std::memory_order_acquire))) {
    FOLIO_CHECK_MSG(!as->IndexHolds(f), "page cache: freeing a folio still in the index");
  }
#endif
  const uint32_t nr = static_cast<uint32_t>(f->nr_pages());
  FOLIO_DCHECK(!page_state_.dirty.Any(f->frame, nr) && !page_state_.writeback.Any(f->frame, nr));
  // Evicted or invalidated in error: the data is gone (it stays counted as unwritten).
  if (f->TestFlag(kFolioWbError)) page_state_.error.Clear(f->frame, nr);
  f->owner.store(nullptr, std::memory_order_release);
  ClearFlagsAndWake(f, ~0u);
  arena_->Free(f);
}

void PageCacheImpl::LruAdd(std::span<Folio* const> folios) {
  if (folios.empty()) return;
  RankedLock lock(lru_mu_, LockRank::kLru);
  for (Folio* f : folios) lru_.PushTail(f);
}

void PageCacheImpl::LruAddAfter(Folio* after, Folio* f) {
  RankedLock lock(lru_mu_, LockRank::kLru);
  if (after->TestFlag(kFolioLru)) {
    lru_.InsertAfter(after, f);
  } else {
    lru_.PushTail(f);
  }
}

void PageCacheImpl::LruRemove(Folio* f) {
  RankedLock lock(lru_mu_, LockRank::kLru);
  if (f->TestFlag(kFolioLru)) lru_.Remove(f);
}

size_t PageCacheImpl::Reclaim(size_t target_bytes, AllocMode mode) {
  size_t freed = 0;
  for (int pass = 0; pass < 3 && freed < target_bytes; ++pass) {
    size_t dirty_seen = 0;
    freed += ReclaimClean(target_bytes - freed, &dirty_seen);
    if (freed >= target_bytes || mode != AllocMode::kMayReclaim || dirty_seen == 0) break;
    WritebackCold(std::max(target_bytes - freed, memory_bytes() / 64));
  }
  return freed;
}

size_t PageCacheImpl::ReclaimClean(size_t target_bytes, size_t* dirty_seen) {
  RankedLock lock(lru_mu_, LockRank::kLru);
  size_t freed = 0;
  // Two laps: the first may only clear referenced bits.
  for (uint64_t budget = 2 * lru_.size() + 1; freed < target_bytes && budget > 0; --budget) {
    Folio* f = lru_.head();
    if (f == nullptr) break;
    uint32_t flags = f->flags.load(std::memory_order_acquire);
    bool sparse = false;
    if (flags & kFolioReferenced) {
      f->ClearFlag(kFolioReferenced);
      sparse = SparselyReferenced(page_state_, f);
      if (!sparse) {
        lru_.Rotate(f);
        continue;
      }
    }
    if ((flags & (kFolioLocked | kFolioWriteback)) ||
        f->refcount.load(std::memory_order_acquire) != 1) {
      lru_.Rotate(f);
      continue;
    }
    if (flags & kFolioDirty) {
      ++*dirty_seen;
      lru_.Rotate(f);
      continue;
    }
    // On the LRU, so its address space is alive (it unlinks its folios under lru_mu_).
    auto* as = static_cast<AddressSpaceImpl*>(f->owner.load(std::memory_order_acquire));
    std::mutex& mu = as->mapping_mutex();
    if (!mu.try_lock()) {
      lru_.Rotate(f);
      continue;
    }
    RankedLock mapping(mu, LockRank::kMapping, std::adopt_lock);
    int32_t one = 1;
    if (!f->refcount.compare_exchange_strong(one, 0, std::memory_order_acq_rel)) {
      mapping.Unlock();
      lru_.Rotate(f);
      continue;
    }
    flags = f->flags.load(std::memory_order_acquire);
    if (flags & (kFolioDirty | kFolioLocked | kFolioWriteback)) {
      f->refcount.store(1, std::memory_order_release);
      mapping.Unlock();
      lru_.Rotate(f);
      continue;
    }
    const int order = f->order;
    as->RemoveFrozenLocked(f);
    mapping.Unlock();
    lru_.Remove(f);
    CacheCounters::Add(counters_.evictions[order]);
    if (flags & kFolioReclaimWb) CacheCounters::Add(counters_.evicted_dirty);
    if (sparse) CacheCounters::Add(counters_.sparse_evictions);
    FreeFolio(f);
    freed += OrderBytes(order);
  }
  return freed;
}

size_t PageCacheImpl::WritebackCold(size_t target_bytes) {
  struct Item {
    AddressSpaceImpl* as;
    uint64_t index;
  };
  std::vector<Item> items;
  {
    RankedLock lock(lru_mu_, LockRank::kLru);
    // Counted in pages of the smallest folio: writing back a little more than needed is fine.
    const size_t max_items = std::max<size_t>(16, target_bytes / kPageBytes);
    uint64_t budget = lru_.size();
    for (Folio* f = lru_.head(); f != nullptr && budget > 0 && items.size() < max_items;
         f = f->next, --budget) {
      uint32_t flags = f->flags.load(std::memory_order_acquire);
      if (!(flags & kFolioDirty) || (flags & (kFolioLocked | kFolioWriteback))) continue;
      auto* as = static_cast<AddressSpaceImpl*>(f->owner.load(std::memory_order_acquire));
      as->Pin();  // unpinned below; its destructor waits for that
      f->SetFlag(kFolioReclaimWb);
      items.push_back({as, f->index.load(std::memory_order_relaxed)});
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.as != b.as ? a.as < b.as : a.index < b.index;
  });
  std::vector<uint64_t> indices;
  for (size_t i = 0; i < items.size();) {
    AddressSpaceImpl* as = items[i].as;
    indices.clear();
    for (; i < items.size() && items[i].as == as; ++i) indices.push_back(items[i].index);
    (void)as->WritebackIndices(indices);  // errors are sticky on the address space
    for (size_t k = 0; k < indices.size(); ++k) as->Unpin();
  }
  return items.size();
}

}  // namespace folio::cache
