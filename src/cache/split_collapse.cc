// AddressSpaceImpl: splitting a large folio into its buddies, and collapsing small folios
// into a large one.
//
// Split (partial invalidation / truncation): the caller holds the folio lock and mu_; we wait
// for transient references (lock-free readers mid-copy) to drop, freeze the folio
// (refcount 2 -> 0), let the arena relabel the frames, point the upper half's slots at the
// new head, and thaw both halves. The per-page bits stay with their frames, so each half keeps
// exactly its pages' dirty / uptodate / error state; its flags are recomputed from them.
//
// Collapse (Advise(kCollapse), the background scanner): 2^k adjacent clean, up-to-date,
// unshared folios of smaller orders covering an aligned block are frozen (refcount 1 -> 0,
// which fails if anyone holds a reference), copied into one new order-k folio, and replaced in
// the index under mu_; the small ones go back to the arena.
#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "cache/address_space_impl.h"
#include "cache/cache_impl.h"
#include "cache/folio_sync.h"
#include "cache/lock_rank.h"
#include "cache/order.h"

namespace folio::cache {
namespace {

constexpr uint32_t kSplitKeptFlags = kFolioUptodate | kFolioDirty | kFolioError |
                                     kFolioReferenced | kFolioLocked | kFolioRaUnused |
                                     kFolioReclaimWb | kFolioWbError;

bool CollapsibleFlags(uint32_t flags) {
  return (flags & kFolioUptodate) &&
         !(flags & (kFolioDirty | kFolioWriteback | kFolioLocked | kFolioError | kFolioWbError));
}

enum class BlockState { kNo, kCovered, kCandidate };

}  // namespace

Folio* AddressSpaceImpl::SplitLocked(Folio* f) {
  const int order = f->order;
  FOLIO_CHECK(order >= 1 && f->TestFlag(kFolioLocked));
  for (int attempt = 0;; ++attempt) {
    int32_t expected = 2;  // the index's and ours
    if (f->refcount.compare_exchange_weak(expected, 0, std::memory_order_acq_rel)) break;
    FOLIO_CHECK(expected >= 2);
    Backoff(attempt);
  }
  const uint64_t index = f->index.load(std::memory_order_relaxed);
  Folio* upper = cache_->arena()->Split(f);
  const uint64_t upper_index = index + OrderPages(order - 1);
  // Page bits stay with their frames; each half's summary flags are recomputed from them.
  const uint32_t flags = f->flags.load(std::memory_order_relaxed) & kSplitKeptFlags;
  const uint32_t half = static_cast<uint32_t>(OrderPages(order - 1));
  PageState& ps = cache_->pages();
  auto half_flags = [&](const Folio* h) {
    uint32_t v = flags & ~(kFolioDirty | kFolioWbError | kFolioUptodate);
    if ((flags & kFolioDirty) && ps.dirty.Any(h->frame, half)) v |= kFolioDirty;
    if ((flags & kFolioWbError) && ps.error.Any(h->frame, half)) v |= kFolioWbError;
    if ((flags & kFolioUptodate) || ps.uptodate.All(h->frame, half)) v |= kFolioUptodate;
    return v;
  };
  const uint32_t upper_flags = half_flags(upper);
  // f is frozen and locked, but waiters may still be setting kFolioWaiters: change only bits.
  const uint32_t lower_flags = half_flags(f);
  constexpr uint32_t kRecomputed = kFolioDirty | kFolioWbError | kFolioUptodate;
  f->flags.fetch_and(~(kRecomputed & ~lower_flags), std::memory_order_acq_rel);
  f->flags.fetch_or(lower_flags & kRecomputed, std::memory_order_acq_rel);
  if ((flags & kFolioDirty) && !(lower_flags & kFolioDirty)) index_.ClearDirty(index);
  upper->flags.store(upper_flags, std::memory_order_relaxed);
  upper->owner.store(this, std::memory_order_relaxed);
  upper->index.store(upper_index, std::memory_order_relaxed);
  index_.Store(upper_index, order - 1, upper);
  if (upper_flags & kFolioDirty) index_.SetDirty(upper_index);
  CacheCounters& c = cache_->counters();
  CacheCounters::Sub(c.resident[order]);
  CacheCounters::Add(c.resident[order - 1], 2);
  CacheCounters::Add(c.splits[order]);
  if (f->TestFlag(kFolioLru)) {
    cache_->LruAddAfter(f, upper);
  } else {
    Folio* one[1] = {upper};
    cache_->LruAdd(one);
  }
  NoteFolioLocked();  // the upper half comes locked, like f
  upper->refcount.store(2, std::memory_order_release);
  f->refcount.store(2, std::memory_order_release);
  return upper;
}

namespace {

// Looks at [start, start + 2^order) under the mapping mutex.
BlockState ProbeBlock(const FolioIndex& index, uint64_t start, int order,
                      std::vector<Folio*>* parts) {
  parts->clear();
  const uint64_t end = start + OrderPages(order);
  for (uint64_t p = start; p < end;) {
    Folio* f = index.Load(p);
    if (f == nullptr) return BlockState::kNo;
    if (f->order >= order) return BlockState::kCovered;
    if (!CollapsibleFlags(f->flags.load(std::memory_order_acquire)) ||
        f->refcount.load(std::memory_order_acquire) != 1) {
      return BlockState::kNo;
    }
    parts->push_back(f);
    p = f->index.load(std::memory_order_relaxed) + f->nr_pages();
  }
  return BlockState::kCandidate;
}

}  // namespace

bool AddressSpaceImpl::CollapseBlock(uint64_t start, int order) {
  std::vector<Folio*> parts;
  {
    RankedLock lock(mu_, LockRank::kMapping);
    if (ProbeBlock(index_, start, order, &parts) != BlockState::kCandidate) return false;
  }
  // The new folio comes from free memory only: collapse must not evict to make room.
  Result<Folio*> r = cache_->AllocFolio(order, order, AllocMode::kNoReclaim);
  if (!r.ok()) return false;
  Folio* nf = *r;
  {
    RankedLock lock(mu_, LockRank::kMapping);
    if (ProbeBlock(index_, start, order, &parts) != BlockState::kCandidate) {
      lock.Unlock();
      cache_->PutFolio(nf);
      return false;
    }
    size_t frozen = 0;
    for (Folio* f : parts) {
      int32_t one = 1;
      if (!f->refcount.compare_exchange_strong(one, 0, std::memory_order_acq_rel)) break;
      if (!CollapsibleFlags(f->flags.load(std::memory_order_acquire))) {
        f->refcount.store(1, std::memory_order_release);
        break;
      }
      ++frozen;
    }
    if (frozen < parts.size()) {
      for (size_t i = 0; i < frozen; ++i) parts[i]->refcount.store(1, std::memory_order_release);
      lock.Unlock();
      cache_->PutFolio(nf);
      return false;
    }
    uint32_t referenced = 0;
    for (Folio* f : parts) {
      const uint64_t off = (f->index.load(std::memory_order_relaxed) - start) << kPageShift;
      std::memcpy(cache_->Data(nf) + off, cache_->Data(f), f->bytes());
      referenced |= f->flags.load(std::memory_order_relaxed) & kFolioReferenced;
    }
    nf->flags.store(kFolioUptodate | referenced, std::memory_order_relaxed);
    nf->owner.store(this, std::memory_order_relaxed);
    nf->index.store(start, std::memory_order_relaxed);
    index_.Store(start, order, nf);
    // Still under mu_: once we let go, nf (holding only the index's reference) may be split,
    // dropped and reused by someone else at any time.
    Folio* one[1] = {nf};
    cache_->LruAdd(one);
    CacheCounters& c = cache_->counters();
    CacheCounters::Add(c.resident[order]);
    CacheCounters::Add(c.allocs[order]);
    CacheCounters::Add(c.collapses[order]);
  }
  // The parts are frozen and out of the index: they are ours alone.
  for (Folio* f : parts) {
    CacheCounters::Sub(cache_->counters().resident[f->order]);
    cache_->LruRemove(f);
    cache_->FreeFolio(f);
  }
  return true;
}

size_t AddressSpaceImpl::CollapseRecursive(uint64_t start, int order, uint64_t first,
                                           uint64_t last) {
  const uint64_t end = start + OrderPages(order);
  if (end <= first || start >= last || order == 0) return 0;
  const uint64_t half = OrderPages(order - 1);
  if (start >= first && end <= last) {
    // Cheap lock-free look first: an empty slot rules this block out.
    bool full = true;
    for (uint64_t p = start; p < end && full; ++p) full = index_.Load(p) != nullptr;
    if (full) {
      std::vector<Folio*> parts;
      BlockState state;
      {
        RankedLock lock(mu_, LockRank::kMapping);
        state = ProbeBlock(index_, start, order, &parts);
      }
      if (state == BlockState::kCovered) return 0;
      if (state == BlockState::kCandidate && CollapseBlock(start, order)) return 1;
    } else if (index_.NextPresent(start, end) == FolioIndex::kNone) {
      return 0;
    }
  }
  return CollapseRecursive(start, order - 1, first, last) +
         CollapseRecursive(start + half, order - 1, first, last);
}

size_t AddressSpaceImpl::CollapseRange(uint64_t first, uint64_t last) {
  const int order = PolicyMaxOrder(policy());
  if (order == 0) return 0;
  last = std::min(last, device_pages_);
  const uint64_t block = OrderPages(order);
  size_t n = 0;
  for (uint64_t start = first & ~(block - 1); start < last; start += block) {
    if (start + block > device_pages_) {
      // A block past the device end can never be whole; try its smaller pieces.
      n += CollapseRecursive(start, order - 1, first, last) +
           CollapseRecursive(start + block / 2, order - 1, first, last);
      continue;
    }
    if (index_.NextPresent(start, std::min(start + block, last)) == FolioIndex::kNone) continue;
    n += CollapseRecursive(start, order, first, last);
  }
  return n;
}

}  // namespace folio::cache
