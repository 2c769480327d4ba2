// AddressSpaceImpl: construction, lookup, folio insertion and removal, Invalidate / Advise.
#include <algorithm>
#include <chrono>
#include <thread>

#include "base/check.h"
#include "cache/address_space_impl.h"
#include "cache/cache_impl.h"
#include "cache/folio_sync.h"
#include "cache/lock_rank.h"
#include "cache/order.h"

namespace folio::cache {

AddressSpaceImpl::AddressSpaceImpl(PageCacheImpl* cache, BlockDevice* device, std::string name,
                                   uint64_t size_bytes, const FolioPolicy& policy,
                                   bool trim_zero_ranges, uint64_t readahead_max_pages)
    : cache_(cache),
      device_(device),
      trim_zero_ranges_(trim_zero_ranges),
      name_(std::move(name)),
      device_pages_(device->size_bytes() >> kPageShift),
      index_(device_pages_),
      size_(size_bytes),
      policy_(PackPolicy(policy)),
      ra_(readahead_max_pages) {}

AddressSpaceImpl::~AddressSpaceImpl() {
  cache_->Unregister(this);
  DropRange(0, device_pages_, DropMode::kDiscard);
  // Reclaim or a background thread may still be inside a call on us (they pinned us while
  // our folios were on the LRU or we were registered); neither can pin us any more.
  for (int attempt = 0; pins_.load(std::memory_order_acquire) != 0; ++attempt) Backoff(attempt);
  // A pinned caller may have inserted nothing, but it may have raced with the drop above.
  DropRange(0, device_pages_, DropMode::kDiscard);
  FOLIO_CHECK(index_.NextPresent(0, device_pages_) == FolioIndex::kNone);
  FOLIO_CHECK(dirty_bytes_.load() == 0);
  // A reclaimer that evicted our last folio may still be about to release mu_.
  RankedLock lock(mu_, LockRank::kMapping);
}

FolioPolicy AddressSpaceImpl::policy() const {
  return UnpackPolicy(policy_.load(std::memory_order_relaxed));
}

void AddressSpaceImpl::SetPolicy(const FolioPolicy& policy) {
  policy_.store(PackPolicy(policy), std::memory_order_relaxed);
  RankedLock lock(mu_, LockRank::kMapping);
  ra_.Reset();
}

uint64_t AddressSpaceImpl::SizePages() const {
  return std::min(device_pages_, (size() + kPageBytes - 1) >> kPageShift);
}

Folio* AddressSpaceImpl::LookupGet(uint64_t index) {
  for (int attempt = 0;; ++attempt) {
    Folio* f = index_.Load(index);
    if (f == nullptr) return nullptr;
    if (f->TryGet()) {
      if (index_.Load(index) == f) [[likely]] return f;
      cache_->PutFolio(f);
    }
    // Frozen (being evicted, split or collapsed) or replaced: look again.
    Backoff(attempt);
  }
}

Folio* AddressSpaceImpl::LockFolioAt(uint64_t index) {
  for (;;) {
    Folio* f = LookupGet(index);
    if (f == nullptr) return nullptr;
    if (TryLockFolio(f)) {
      if (index_.Load(index) == f) return f;
      UnlockFolio(f);
      cache_->PutFolio(f);
      continue;
    }
    cache_->PutFolio(f);
    WaitFolioClear(f, kFolioLocked);
  }
}

void AddressSpaceImpl::RemoveLocked(Folio* f) {
  const int order = f->order;
  const uint64_t index = f->index.load(std::memory_order_relaxed);
  // Dirty state goes first, while we still own the range: once the slots are clear another
  // folio may be inserted at this index and dirtied.
  FOLIO_DCHECK(!f->TestFlag(kFolioWriteback));
  if (f->TestFlag(kFolioDirty)) {
    f->ClearFlag(kFolioDirty);
    index_.ClearDirty(index);
    const int64_t bytes =
        static_cast<int64_t>(cache_->pages().dirty.Clear(f->frame, static_cast<uint32_t>(f->nr_pages())))
        << kPageShift;
    dirty_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    cache_->AccountDirty(-bytes);
  }
  {
    RankedLock lock(mu_, LockRank::kMapping);
    FOLIO_CHECK(index_.Load(index) == f);
    index_.Clear(index, order);
  }
  cache_->LruRemove(f);
  CacheCounters::Sub(cache_->counters().resident[order]);
  // Out of the index and off the LRU: nothing may reach us through it any more (a reference
  // holder may outlive this address space and free the folio).
  f->owner.store(nullptr, std::memory_order_release);
  UnlockFolio(f);
  cache_->PutFolio(f);  // the caller's
  cache_->PutFolio(f);  // the index's
}

void AddressSpaceImpl::RemoveFrozenLocked(Folio* f) {
  FOLIO_CHECK(!f->TestFlag(kFolioDirty | kFolioWriteback | kFolioLocked));
  index_.Clear(f->index.load(std::memory_order_relaxed), f->order);
  CacheCounters::Sub(cache_->counters().resident[f->order]);
}

bool AddressSpaceImpl::IndexHolds(const Folio* f) const {
  const uint64_t first = f->index.load(std::memory_order_relaxed);
  for (uint64_t i = first; i < first + f->nr_pages(); ++i) {
    if (index_.Load(i) == f) return true;
  }
  return false;
}

void AddressSpaceImpl::RemoveStale(uint64_t index) {
  Folio* f = LockFolioAt(index);
  if (f == nullptr) return;
  // Only a failed read is stale; a partly up-to-date folio may hold dirty pages.
  if (f->TestFlag(kFolioUptodate) || !f->TestFlag(kFolioError)) {
    UnlockFolio(f);
    cache_->PutFolio(f);
    return;
  }
  RemoveLocked(f);
}

void AddressSpaceImpl::DropRange(uint64_t first, uint64_t last, DropMode mode) {
  last = std::min(last, device_pages_);
  uint64_t idx = first;
  while (idx < last) {
    idx = index_.NextPresent(idx, last);
    if (idx == FolioIndex::kNone) break;
    Folio* f = LockFolioAt(idx);
    if (f == nullptr) continue;
    if (f->TestFlag(kFolioWriteback)) {
      // Its write is in flight: splitting or dropping it now could let a newer write of the
      // same pages (or the zeros of a truncate) land before it. Wait for it.
      UnlockFolio(f);
      cache_->PutFolio(f);
      WaitFolioClear(f, kFolioWriteback);
      continue;
    }
    const uint64_t folio_end = f->index.load(std::memory_order_relaxed) + f->nr_pages();
    // Pieces to look at, each locked and referenced by us.
    std::vector<Folio*> work = {f};
    while (!work.empty()) {
      Folio* p = work.back();
      work.pop_back();
      const uint64_t ps = p->index.load(std::memory_order_relaxed);
      const uint64_t pe = ps + p->nr_pages();
      // kCleanOnly keeps every folio with a dirty page, partly up to date or not.
      const bool keep = pe <= first || ps >= last ||
                        (mode == DropMode::kCleanOnly && p->TestFlag(kFolioDirty));
      if (keep) {
        UnlockFolio(p);
        cache_->PutFolio(p);
      } else if (ps >= first && pe <= last) {
        // Discarded data nobody could write is no longer unwritten; invalidated data is lost.
        if (mode == DropMode::kDiscard) ClearWritebackError(p, 0, static_cast<uint32_t>(p->nr_pages()));
        RemoveLocked(p);
      } else {
        Folio* upper;
        {
          RankedLock lock(mu_, LockRank::kMapping);
          upper = SplitLocked(p);
        }
        work.push_back(upper);
        work.push_back(p);
      }
    }
    idx = folio_end;
  }
}

Status AddressSpaceImpl::InsertNew(std::vector<Planned>* plan, AllocMode mode, uint64_t mark,
                                   std::vector<PageRange>* zero, std::vector<Folio*>* out) {
  // Allocate outside every lock: reclaim may need to take this address space's mutex. Only
  // the first piece may wait for memory: the later ones must not wait for what the earlier
  // ones hold, so they stop the plan instead (the caller loops over what is still missing).
  size_t allocated = 0;
  for (Planned& p : *plan) {
    AllocMode m = allocated == 0 ? mode
                  : mode == AllocMode::kNoReclaim ? mode
                                                  : AllocMode::kCleanOnly;
    Result<Folio*> r = cache_->AllocFolio(p.order, 0, m);
    if (!r.ok()) {
      if (allocated == 0) return r.status().WithContext(name_);
      break;
    }
    p.folio = *r;
    p.order = p.folio->order;  // a fallback may have made it smaller
    ++allocated;
  }
  const size_t first_out = out->size();
  std::vector<Folio*> losers;
  {
    RankedLock lock(mu_, LockRank::kMapping);
    for (size_t i = 0; i < allocated; ++i) {
      Planned& p = (*plan)[i];
      Folio* f = p.folio;
      if (!index_.RangeEmpty(p.index, p.order)) {
        losers.push_back(f);  // someone cached (part of) this range meanwhile
        continue;
      }
      uint32_t flags = kFolioLocked | (p.required ? 0 : kFolioRaUnused);
      if (mark >= p.index && mark < p.index + OrderPages(p.order)) flags |= kFolioReadahead;
      f->flags.store(flags, std::memory_order_relaxed);
      f->owner.store(this, std::memory_order_relaxed);
      f->index.store(p.index, std::memory_order_relaxed);
      f->Get();  // the caller's reference; the arena's initial one is the index's
      NoteFolioLocked();
      // Not up to date: its page bits are read from now on (the frames' old bits are stale).
      cache_->pages().uptodate.Clear(f->frame, static_cast<uint32_t>(f->nr_pages()));
      index_.Store(p.index, p.order, f);
      out->push_back(f);
    }
    if (out->size() > first_out && zero != nullptr && (!zero_.empty() || !zero_inflight_.empty())) {
      Folio* a = (*out)[first_out];
      Folio* b = out->back();
      uint64_t lo = a->index.load(std::memory_order_relaxed);
      uint64_t hi = b->index.load(std::memory_order_relaxed) + b->nr_pages();
      zero_.Overlaps(lo, hi, zero);
      zero_inflight_.Overlaps(lo, hi, zero);
    }
  }
  for (Folio* f : losers) cache_->PutFolio(f);
  std::span<Folio* const> inserted(out->data() + first_out, out->size() - first_out);
  for (Folio* f : inserted) {
    CacheCounters::Add(cache_->counters().resident[f->order]);
    CacheCounters::Add(cache_->counters().allocs[f->order]);
  }
  cache_->LruAdd(inserted);
  return Status::OK();
}

Status AddressSpaceImpl::Invalidate(uint64_t pos, uint64_t len) {
  if (len == 0) return Status::OK();
  uint64_t first = pos >> kPageShift;
  uint64_t last = std::min(device_pages_, (pos + len + kPageBytes - 1) >> kPageShift);
  if (first >= last) return Status::OK();
  // A dirty large folio that starts before the range has its dirty mark at its head: write
  // back from there, or it would stay dirty and be neither written back nor dropped.
  uint64_t wb_first = first;
  if (Folio* f = LookupGet(first)) {
    wb_first = std::min(first, f->index.load(std::memory_order_relaxed));
    cache_->PutFolio(f);
  }
  Status s = WritebackRange(wb_first, last);
  DropRange(first, last, DropMode::kCleanOnly);
  return s;
}

Status AddressSpaceImpl::Advise(uint64_t pos, uint64_t len, Advice advice) {
  switch (advice) {
    case Advice::kNormal:
    case Advice::kSequential:
    case Advice::kRandom: {
      ReadaheadMode m = advice == Advice::kNormal       ? ReadaheadMode::kNormal
                        : advice == Advice::kSequential ? ReadaheadMode::kSequential
                                                        : ReadaheadMode::kRandom;
      ra_mode_.store(static_cast<int>(m), std::memory_order_relaxed);
      RankedLock lock(mu_, LockRank::kMapping);
      ra_.Reset();
      return Status::OK();
    }
    case Advice::kWillNeed:
      WillNeed(pos, len);
      return Status::OK();
    case Advice::kDontNeed:
      return Invalidate(pos, len);
    case Advice::kCollapse: {
      uint64_t first = pos >> kPageShift;
      uint64_t last = std::min(device_pages_, (pos + len + kPageBytes - 1) >> kPageShift);
      CollapseRange(first, last);
      return Status::OK();
    }
  }
  return Status::InvalidArgument(name_ + ": unknown advice");
}

}  // namespace folio::cache
