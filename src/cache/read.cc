// AddressSpaceImpl: the read path and readahead.
//
// Hit: lookup (two loads), TryGet, sequence-locked copy, referenced bit (tested first), Put:
// no lock, no allocation, no syscall. Miss: one readahead decision under the mapping mutex,
// folios allocated outside it, inserted locked, one batch of device reads, completion. A
// folio that a write left partly up to date is a hit for its up-to-date pages (their bits,
// page_state.h); a read of its other pages reads just those, under the folio lock.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "cache/address_space_impl.h"
#include "cache/async_reader.h"
#include "cache/cache_impl.h"
#include "cache/folio_sync.h"
#include "cache/lock_rank.h"
#include "cache/order.h"

namespace folio::cache {
namespace {

constexpr uint64_t kNoMark = ~uint64_t{0};

bool Overlaps(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return a < d && c < b; }

}  // namespace

Result<size_t> AddressSpaceImpl::Read(uint64_t pos, std::span<char> out) {
  const uint64_t size = this->size();
  if (pos >= size || out.empty()) return size_t{0};
  const uint64_t n = std::min<uint64_t>(out.size(), size - pos);
  const uint64_t last_page = (pos + n - 1) >> kPageShift;
  CacheCounters& counters = cache_->counters();
  uint64_t done = 0;
  while (done < n) {
    const uint64_t p = pos + done;
    const uint64_t idx = p >> kPageShift;
    Folio* f = LookupGet(idx);
    if (f == nullptr) [[unlikely]] {
      FOLIO_RETURN_IF_ERROR(ReadMiss(idx, last_page - idx + 1));
      if (p >= this->size()) break;  // truncated meanwhile: a short read
      continue;
    }
    const uint32_t flags = f->flags.load(std::memory_order_acquire);
    const int order = f->order;
    const uint64_t folio_index = f->index.load(std::memory_order_relaxed);
    const uint64_t off = p - (folio_index << kPageShift);
    const uint64_t c = std::min(n - done, OrderBytes(order) - off);
    // The folio's pages this read copies: [pa, pa + pn).
    const uint32_t pa = static_cast<uint32_t>(off >> kPageShift);
    const uint32_t pn = static_cast<uint32_t>(((off + c + kPageBytes - 1) >> kPageShift) - pa);
    if (!(flags & kFolioUptodate)) [[unlikely]] {
      // Partly up to date (a write left pages unread), being read, or a failed read.
      if (flags & kFolioError) {
        cache_->PutFolio(f);
        RemoveStale(idx);  // a failed read: read it again ourselves
        continue;
      }
      if (!cache_->pages().uptodate.All(f->frame + pa, pn)) {
        // The mark acts before the wait, as in the kernel (filemap_get_pages): a reader that
        // caught up with its readahead issues the next window now, so two windows are in
        // flight while it waits for this one, not one window per round trip.
        const bool marked =
            (flags & kFolioReadahead) &&
            (f->flags.fetch_and(~uint32_t{kFolioReadahead}, std::memory_order_acq_rel) &
             kFolioReadahead);
        cache_->PutFolio(f);
        if (marked) AsyncReadahead(folio_index, OrderPages(order), last_page - idx + 1);
        if (flags & kFolioLocked) {
          WaitFolioClear(f, kFolioLocked);  // its read (or a write) is in flight
        } else {
          FOLIO_RETURN_IF_ERROR(FillForRead(idx, last_page));
        }
        continue;
      }
    }
    CopyFromFolio(f, cache_->Data(f) + off, out.data() + done, c);
    if (!(flags & kFolioReferenced)) f->SetFlag(kFolioReferenced);
    // Which pages of a large folio are read, and read again (reclaim's sparse rule).
    if (order >= kSparseMinOrder) cache_->pages().NoteRead(f->frame + pa, pn);
    bool marked = false;
    if (flags & (kFolioReadahead | kFolioRaUnused)) [[unlikely]] {
      uint32_t old = f->flags.fetch_and(~(kFolioReadahead | kFolioRaUnused),
                                        std::memory_order_acq_rel);
      marked = (old & kFolioReadahead) != 0;
      if (old & kFolioRaUnused) counters.ReadaheadHitPages(OrderPages(order));
    }
    counters.Hit(order);
    cache_->PutFolio(f);
    done += c;
    if (marked) AsyncReadahead(folio_index, OrderPages(order), last_page - idx + 1);
  }
  return done;
}

void AddressSpaceImpl::PlanRangeLocked(uint64_t start, uint64_t end, int order,
                                       const FolioPolicy& policy, uint64_t req_first,
                                       uint64_t req_last, std::vector<Planned>* plan) {
  if (policy.kind == FolioPolicy::Kind::kFixed) {
    // Fixed folios: whole aligned blocks (capped by the end of file / device below).
    const uint64_t block = OrderPages(order);
    const uint64_t limit = SizePages();
    start &= ~(block - 1);
    end = std::min(limit, (end + block - 1) & ~(block - 1));
  }
  uint64_t p = start;
  while (p < end) {
    if (Folio* f = index_.Load(p)) {
      // Under mu_ a folio in the index keeps its order and index.
      p = f->index.load(std::memory_order_relaxed) + f->nr_pages();
      continue;
    }
    int o = AlignedOrder(p, end, order);
    while (o > 0 && !index_.RangeEmpty(p, o)) --o;
    const uint64_t e = p + OrderPages(o);
    plan->push_back({p, o, Overlaps(p, e, req_first, req_last), nullptr});
    p = e;
  }
}

Status AddressSpaceImpl::ReadMiss(uint64_t index, uint64_t req_pages) {
  const FolioPolicy policy = this->policy();
  const int max_order = PolicyMaxOrder(policy);
  std::vector<Planned> plan;
  uint64_t mark = kNoMark;
  bool window = false;
  {
    RankedLock lock(mu_, LockRank::kMapping);
    const uint64_t limit = SizePages();
    if (index >= limit) return Status::OK();
    req_pages = std::min(req_pages, limit - index);
    const ReadaheadWindow w = ra_.OnMiss(index, req_pages, ra_mode(), max_order);
    const uint64_t end = std::min(limit, w.start + w.nr_pages);
    int order;
    switch (policy.kind) {
      case FolioPolicy::Kind::k4k: order = 0; break;
      case FolioPolicy::Kind::kFixed: order = max_order; break;
      default: order = w.readahead ? w.order : 0; break;
    }
    PlanRangeLocked(w.start, end, order, policy, index, index + req_pages, &plan);
    if (w.readahead) mark = w.mark;
    window = w.readahead && end - w.start > req_pages;
  }
  if (plan.empty()) return Status::OK();
  std::vector<Folio*> folios;
  std::vector<PageRange> zero;
  FOLIO_RETURN_IF_ERROR(InsertNew(&plan, AllocMode::kMayReclaim, mark, &zero, &folios));
  if (folios.empty()) return Status::OK();
  CacheCounters& counters = cache_->counters();
  for (Folio* f : folios) CacheCounters::Add(counters.misses[f->order]);
  if (window) CacheCounters::Add(counters.readahead_windows);

  ReadJob job;
  job.device = device_;
  job.folios = std::move(folios);
  job.zero = std::move(zero);
  job.BuildRequests(cache_);
  RunRequests(device_, std::span<IoRequest>(job.requests.get(), job.folios.size()));
  Status first_error;
  for (size_t i = 0; i < job.folios.size(); ++i) {
    Folio* f = job.folios[i];
    const Status& st = job.requests[i].status;
    if (st.ok()) {
      HandOffFolioLock();
      CompleteRead(cache_, f, st, job.zero);
      cache_->PutFolio(f);
      continue;
    }
    const uint64_t fi = f->index.load(std::memory_order_relaxed);
    if (first_error.ok() && Overlaps(fi, fi + f->nr_pages(), index, index + req_pages)) {
      first_error = Status::IOError(fmt::format("{}: read of {} at pos {} failed: {}",
                                                device_->name(), f->bytes(),
                                                fi << kPageShift, st.ToString()));
    }
    f->SetFlag(kFolioError);
    RemoveLocked(f);
  }
  return first_error;
}

Status AddressSpaceImpl::FillForRead(uint64_t index, uint64_t last_page) {
  Folio* f = LockFolioAt(index);
  if (f == nullptr) return Status::OK();  // gone meanwhile: the caller looks again
  Status s;
  const uint32_t flags = f->flags.load(std::memory_order_acquire);
  if (!(flags & (kFolioUptodate | kFolioError))) {
    const uint64_t fi = f->index.load(std::memory_order_relaxed);
    const uint32_t nr = static_cast<uint32_t>(f->nr_pages());
    const uint32_t a = static_cast<uint32_t>(index - fi);
    const uint32_t b = static_cast<uint32_t>(std::min<uint64_t>(fi + nr, last_page + 1) - fi);
    const PageMask uptodate = cache_->pages().uptodate.Get(f->frame, nr);
    PageMask need;
    for (uint32_t i = a; i < b; ++i) {
      if (!uptodate.Test(i)) need.Set(i);
    }
    const PageFill fill{f, need};
    // The pages lie below the size (the caller read it): only zero ranges read as zeros.
    s = FillPages({&fill, 1}, ~uint64_t{0}, ZeroOverlaps(fi, fi + nr));
    if (s.ok()) {
      CacheCounters::Add(cache_->counters().partial_read_fills);
      need.ForEachRun(nr, [&](uint32_t first, uint32_t n) { MarkUptodateLocked(f, first, n); });
    }
  }
  UnlockFolio(f);
  cache_->PutFolio(f);
  return s;
}

void AddressSpaceImpl::AsyncReadahead(uint64_t folio_index, uint64_t folio_pages,
                                      uint64_t req_pages) {
  if (ra_mode() == ReadaheadMode::kRandom) return;
  const FolioPolicy policy = this->policy();
  const int max_order = PolicyMaxOrder(policy);
  std::vector<Planned> plan;
  uint64_t mark;
  {
    RankedLock lock(mu_, LockRank::kMapping);
    const uint64_t limit = SizePages();
    const ReadaheadWindow w = ra_.OnMarkedHit(folio_index, folio_pages, req_pages, max_order);
    const uint64_t end = std::min(limit, w.start + w.nr_pages);
    if (w.start >= end) return;
    int order = policy.kind == FolioPolicy::Kind::kDynamic ? w.order : max_order;
    PlanRangeLocked(w.start, end, order, policy, 0, 0, &plan);
    mark = w.mark;
  }
  if (plan.empty()) return;
  std::vector<Folio*> folios;
  std::vector<PageRange> zero;
  if (!InsertNew(&plan, AllocMode::kCleanOnly, mark, &zero, &folios).ok()) return;
  if (folios.empty()) return;
  CacheCounters& counters = cache_->counters();
  for (Folio* f : folios) CacheCounters::Add(counters.misses[f->order]);
  CacheCounters::Add(counters.readahead_windows);
  CacheCounters::Add(counters.readahead_async);
  SubmitAsync(std::move(folios), std::move(zero));
}

void AddressSpaceImpl::WillNeed(uint64_t pos, uint64_t len) {
  const FolioPolicy policy = this->policy();
  const uint64_t max_pages = std::max<uint64_t>(1, (cache_->memory_bytes() / 4) >> kPageShift);
  std::vector<Planned> plan;
  {
    RankedLock lock(mu_, LockRank::kMapping);
    const uint64_t limit = SizePages();
    uint64_t first = pos >> kPageShift;
    uint64_t last = std::min(limit, (pos + len + kPageBytes - 1) >> kPageShift);
    last = std::min(last, first + max_pages);
    if (first >= last) return;
    PlanRangeLocked(first, last, PolicyMaxOrder(policy), policy, 0, 0, &plan);
  }
  if (plan.empty()) return;
  std::vector<Folio*> folios;
  std::vector<PageRange> zero;
  if (!InsertNew(&plan, AllocMode::kCleanOnly, kNoMark, &zero, &folios).ok()) return;
  if (folios.empty()) return;
  for (Folio* f : folios) CacheCounters::Add(cache_->counters().misses[f->order]);
  SubmitAsync(std::move(folios), std::move(zero));
}

void AddressSpaceImpl::SubmitAsync(std::vector<Folio*> folios, std::vector<PageRange> zero) {
  for (size_t i = 0; i < folios.size(); ++i) HandOffFolioLock();  // the I/O thread unlocks
  auto job = std::make_unique<ReadJob>();
  job->device = device_;
  job->folios = std::move(folios);
  job->zero = std::move(zero);
  job->BuildRequests(cache_);
  cache_->async_reader().Submit(std::move(job));
}

}  // namespace folio::cache
