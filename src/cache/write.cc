// AddressSpaceImpl: the write path, zero ranges and Truncate.
//
// A write walks its range folio by folio. A cached folio is locked, modified under its sequence
// lock and its written pages marked dirty; when one of those pages is under writeback the
// writer waits for that write (stable pages; the folio's other pages take writes meanwhile).
// An uncached run gets new folios in one go (order from the policy: dynamic takes the largest
// order that the write's alignment and length cover, and in a sequential write stream, a write
// starting where the previous one ended, the largest empty aligned block holding its start, so
// a stream of 64 KiB writes fills 2 MiB folios; 4k order 0; fixed the fixed order). Only
// pages the write covers in part are brought to their old content first (a device read below
// the old size, zeros above it or in zero ranges); pages it does not touch stay unread (not up
// to date) until someone reads them, and only written pages become dirty.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/check.h"
#include "base/copy.h"
#include "cache/address_space_impl.h"
#include "cache/async_reader.h"
#include "cache/cache_impl.h"
#include "cache/folio_sync.h"
#include "cache/lock_rank.h"
#include "cache/order.h"

namespace folio::cache {
namespace {

bool InZero(const std::vector<PageRange>& zero, uint64_t page) {
  for (const PageRange& z : zero) {
    if (page >= z.first && page < z.last) return true;
  }
  return false;
}

}  // namespace

Result<size_t> AddressSpaceImpl::Write(uint64_t pos, std::span<const char> in) {
  if (in.empty()) return size_t{0};
  const uint64_t len = in.size();
  const uint64_t end = pos + len;
  const uint64_t device_bytes = device_pages_ << kPageShift;
  if (end < pos || end > device_bytes) {
    return Status::NoSpace(fmt::format(
        "{}: write of {} bytes at pos {} ends past the end of {} ({} bytes)", name_, len, pos,
        device_->name(), device_bytes));
  }
  const uint64_t dirtied0 = PageCacheImpl::ThreadDirtiedBytes();
  Result<size_t> r = WriteUnthrottled(pos, in);
  write_end_.store(r.ok() ? end : ~uint64_t{0}, std::memory_order_relaxed);
  const uint64_t dirtied = PageCacheImpl::ThreadDirtiedBytes() - dirtied0;
  if (dirtied != 0) cache_->ThrottleWriter(this, dirtied);
  return r;
}

Result<size_t> AddressSpaceImpl::WriteUnthrottled(uint64_t pos, std::span<const char> in) {
  const uint64_t len = in.size();
  const uint64_t end = pos + len;
  const bool stream = write_end_.load(std::memory_order_relaxed) == pos &&
                      ra_mode() != ReadaheadMode::kRandom;
  for (;;) {
    if (pos > size()) {
      // The write leaves a gap after the current end of file: it must read as zeros.
      SizeLock lock(size_lock_, SizeLock::Mode::kExclusive);
      const uint64_t old_size = size();
      if (pos > old_size) FOLIO_RETURN_IF_ERROR(ZeroRange(old_size, pos, old_size));
      FOLIO_RETURN_IF_ERROR(WriteData(pos, in.data(), len, old_size, stream));
      ExtendSize(end);
      return len;
    }
    SizeLock lock(size_lock_, SizeLock::Mode::kShared);
    const uint64_t old_size = size();
    if (pos > old_size) continue;  // truncated meanwhile: take the gap path
    FOLIO_RETURN_IF_ERROR(WriteData(pos, in.data(), len, old_size, stream));
    ExtendSize(end);
    return len;
  }
}

void AddressSpaceImpl::ExtendSize(uint64_t end) {
  uint64_t cur = size_.load(std::memory_order_acquire);
  while (cur < end && !size_.compare_exchange_weak(cur, end, std::memory_order_acq_rel)) {
  }
}

Status AddressSpaceImpl::WriteData(uint64_t pos, const char* src, uint64_t len,
                                   uint64_t old_size, bool stream) {
  CacheCounters& counters = cache_->counters();
  const uint64_t dirtied0 = PageCacheImpl::ThreadDirtiedBytes();
  uint64_t done = 0;
  while (done < len) {
    if (counters.dirty_bytes.load(std::memory_order_relaxed) > cache_->dirty_limit_bytes() &&
        PageCacheImpl::ThreadDirtiedBytes() != dirtied0) {
      cache_->ThrottleWriter(this, 0);  // a long write that dirties crossed the limit: wait
    }
    const uint64_t p = pos + done;
    const uint64_t idx = p >> kPageShift;
    const char* s = src != nullptr ? src + done : nullptr;
    Folio* f = LookupGet(idx);
    if (f == nullptr) {
      FOLIO_ASSIGN_OR_RETURN(uint64_t n, WriteNew(p, s, len - done, old_size, stream));
      done += n;
      continue;
    }
    if (!TryLockFolio(f)) {
      cache_->PutFolio(f);
      WaitFolioClear(f, kFolioLocked);
      continue;
    }
    if (index_.Load(idx) != f) {
      UnlockFolio(f);
      cache_->PutFolio(f);
      continue;
    }
    const uint32_t flags = f->flags.load(std::memory_order_acquire);
    if (!(flags & kFolioUptodate) && (flags & kFolioError)) {
      RemoveLocked(f);  // a failed read left it behind
      continue;
    }
    const uint64_t off = p - (f->index.load(std::memory_order_relaxed) << kPageShift);
    const uint64_t c = std::min(len - done, f->bytes() - off);
    const uint32_t pa = static_cast<uint32_t>(off >> kPageShift);
    const uint32_t pn = static_cast<uint32_t>(((off + c + kPageBytes - 1) >> kPageShift) - pa);
    if ((flags & kFolioWriteback) && cache_->pages().writeback.Any(f->frame + pa, pn)) {
      // Stable pages: these pages are on their way to the device. Wait for that write only;
      // pages of the folio that are not being written take writes meanwhile.
      CacheCounters::Add(counters.writeback_waits);
      UnlockFolio(f);
      cache_->PutFolio(f);
      WaitFolioClear(f, kFolioWriteback);
      continue;
    }
    if (!(flags & kFolioUptodate)) {
      // Partly up to date: bring only the pages this write covers in part to their content.
      Status fill = FillPartialPagesLocked(f, p, p + c, old_size);
      if (!fill.ok()) {
        UnlockFolio(f);
        cache_->PutFolio(f);
        return fill;
      }
    }
    CopyIntoFolio(f, cache_->Data(f) + off, s, c);
    if (!(flags & kFolioUptodate)) MarkUptodateLocked(f, pa, pn);
    MarkDirtyLocked(f, pa, pn);
    UnlockFolio(f);
    cache_->PutFolio(f);
    done += c;
  }
  return Status::OK();
}

Result<uint64_t> AddressSpaceImpl::WriteNew(uint64_t pos, const char* src, uint64_t len,
                                            uint64_t old_size, bool stream) {
  const FolioPolicy policy = this->policy();
  const int max_order = PolicyMaxOrder(policy);
  const uint64_t end = pos + len;
  const uint64_t first = pos >> kPageShift;
  const uint64_t end_page = (end + kPageBytes - 1) >> kPageShift;
  // Bound what one run pins (its folios stay locked until copied): 1/16 of the cache, which
  // also caps a dynamic write folio's size in a small cache.
  const uint64_t run_max_pages = std::max<uint64_t>(1, (cache_->memory_bytes() / 16) >> kPageShift);
  std::vector<Planned> plan;
  {
    RankedLock lock(mu_, LockRank::kMapping);
    uint64_t q = first;
    uint64_t planned = 0;
    while (q < end_page && planned < run_max_pages && index_.Load(q) == nullptr) {
      uint64_t start = q;
      int o = 0;
      if (policy.kind == FolioPolicy::Kind::kFixed) {
        o = max_order;
        start = q & ~(OrderPages(o) - 1);
        while (o > 0 && (start + OrderPages(o) > device_pages_ || !index_.RangeEmpty(start, o))) {
          --o;
          start = q & ~(OrderPages(o) - 1);
        }
      } else if (policy.kind == FolioPolicy::Kind::kDynamic && (q << kPageShift) >= pos) {
        // Pages [q, end >> kPageShift) are overwritten whole: take the largest aligned order.
        const uint64_t limit =
            std::min({device_pages_, end >> kPageShift, q + (run_max_pages - planned)});
        o = AlignedOrder(q, limit, max_order);
        while (o > 0 && !index_.RangeEmpty(q, o)) --o;
      }
      if (policy.kind == FolioPolicy::Kind::kDynamic && stream) {
        // A sequential stream: the largest empty aligned block holding q, within the pages below
        // the old size or the write's end (its pages outside the write stay unread, like a fixed
        // folio's), so the stream's next writes land in this folio instead of new ones. Only
        // the run's first folio may start before q (the others follow planned ones).
        const uint64_t limit =
            std::min(device_pages_, std::max(end_page, old_size >> kPageShift));
        for (int g = max_order; g > o; --g) {
          const uint64_t gs = q & ~(OrderPages(g) - 1);
          if ((gs == q || q == first) && gs + OrderPages(g) <= limit &&
              OrderPages(g) <= run_max_pages - planned && index_.RangeEmpty(gs, g)) {
            o = g;
            start = gs;
            CacheCounters::Add(cache_->counters().write_stream_folios);
            break;
          }
        }
      }
      plan.push_back({start, o, true, nullptr});
      q = start + OrderPages(o);
      planned += OrderPages(o);
    }
  }
  if (plan.empty()) return uint64_t{0};
  std::vector<Folio*> folios;
  std::vector<PageRange> zero;
  FOLIO_RETURN_IF_ERROR(InsertNew(&plan, AllocMode::kMayReclaim, ~uint64_t{0}, &zero, &folios));
  std::vector<PageMask> valid(folios.size());
  Status s = FillForWrite(folios, pos, end, old_size, zero, valid.data());
  if (!s.ok()) {
    for (Folio* f : folios) {
      f->SetFlag(kFolioError);
      RemoveLocked(f);
    }
    return s;
  }
  uint64_t covered_end = pos;  // [pos, covered_end) is now written
  for (size_t i = 0; i < folios.size(); ++i) {
    Folio* f = folios[i];
    const uint64_t fs = f->index.load(std::memory_order_relaxed) << kPageShift;
    const uint64_t fe = fs + f->bytes();
    const uint64_t a = std::max(pos, fs), b = std::min(end, fe);
    uint32_t pa = 0, pn = 0;
    if (a < b) {
      char* dst = cache_->Data(f) + (a - fs);
      if (src != nullptr) {
        FolioCopyIn(dst, src + (a - pos), b - a);
      } else {
        std::memset(dst, 0, b - a);
      }
      pa = static_cast<uint32_t>((a - fs) >> kPageShift);
      pn = static_cast<uint32_t>(((b - fs + kPageBytes - 1) >> kPageShift) - pa);
      valid[i].SetRange(pa, pn);
    }
    if (fs <= covered_end && covered_end < fe) covered_end = std::min(end, fe);
    if (valid[i].Count() == f->nr_pages()) {
      f->SetFlag(kFolioUptodate);
    } else {
      // Pages nobody asked for stay unread: the first reader of one reads it (fixed folios
      // larger than the write).
      CacheCounters::Add(cache_->counters().write_pages_not_read,
                         f->nr_pages() - valid[i].Count());
      PageState& ps = cache_->pages();
      ps.uptodate.Clear(f->frame, static_cast<uint32_t>(f->nr_pages()));
      ps.uptodate.SetMask(f->frame, static_cast<uint32_t>(f->nr_pages()), valid[i]);
    }
    if (pn > 0) MarkDirtyLocked(f, pa, pn);
    UnlockFolio(f);
    cache_->PutFolio(f);
  }
  return covered_end - pos;
}

Status AddressSpaceImpl::FillForWrite(std::span<Folio* const> folios, uint64_t pos, uint64_t end,
                                      uint64_t old_size, const std::vector<PageRange>& zero,
                                      PageMask* valid) {
  std::vector<PageFill> fills;
  for (size_t i = 0; i < folios.size(); ++i) {
    Folio* f = folios[i];
    const uint64_t fi = f->index.load(std::memory_order_relaxed);
    PageMask need;
    for (uint64_t pg = fi; pg < fi + f->nr_pages(); ++pg) {
      const uint64_t ps = pg << kPageShift;
      const uint32_t rel = static_cast<uint32_t>(pg - fi);
      if (ps >= pos && ps + kPageBytes <= end) continue;  // overwritten whole
      const bool touched = ps < end && ps + kPageBytes > pos;
      if (!touched && ps < old_size && !InZero(zero, pg)) continue;  // read when first read
      need.Set(rel);
      valid[i].Set(rel);
    }
    if (!need.Empty()) fills.push_back({f, need});
  }
  return FillPages(fills, old_size, zero);
}

Status AddressSpaceImpl::FillPartialPagesLocked(Folio* f, uint64_t from, uint64_t to,
                                                uint64_t old_size) {
  const uint64_t fi = f->index.load(std::memory_order_relaxed);
  const uint32_t nr = static_cast<uint32_t>(f->nr_pages());
  const PageMask uptodate = cache_->pages().uptodate.Get(f->frame, nr);
  PageMask need;
  // Only the first and last pages can be covered in part.
  for (uint64_t pg : {from >> kPageShift, (to - 1) >> kPageShift}) {
    const uint64_t ps = pg << kPageShift;
    const uint32_t rel = static_cast<uint32_t>(pg - fi);
    if (uptodate.Test(rel) || (ps >= from && ps + kPageBytes <= to)) continue;
    need.Set(rel);
  }
  if (need.Empty()) return Status::OK();
  const PageFill fill{f, need};
  FOLIO_RETURN_IF_ERROR(FillPages({&fill, 1}, old_size, ZeroOverlaps(fi, fi + nr)));
  need.ForEachRun(nr, [&](uint32_t a, uint32_t n) { MarkUptodateLocked(f, a, n); });
  return Status::OK();
}

Status AddressSpaceImpl::FillPages(std::span<const PageFill> fills, uint64_t old_size,
                                   const std::vector<PageRange>& zero) {
  struct Run {
    char* buf;
    uint64_t page;
    uint64_t pages;
  };
  std::vector<Run> runs;
  for (const PageFill& fill : fills) {
    Folio* f = fill.folio;
    const uint64_t fi = f->index.load(std::memory_order_relaxed);
    fill.pages.ForEachRun(static_cast<uint32_t>(f->nr_pages()), [&](uint32_t a, uint32_t n) {
      for (uint64_t pg = fi + a; pg < fi + a + n; ++pg) {
        char* d = cache_->Data(f) + ((pg - fi) << kPageShift);
        if ((pg << kPageShift) >= old_size || InZero(zero, pg)) {
          std::memset(d, 0, kPageBytes);
        } else if (!runs.empty() && runs.back().page + runs.back().pages == pg &&
                   runs.back().buf + (runs.back().pages << kPageShift) == d) {
          ++runs.back().pages;
        } else {
          runs.push_back({d, pg, 1});
        }
      }
    });
  }
  if (runs.empty()) return Status::OK();
  CacheCounters::Add(cache_->counters().fill_read_requests, runs.size());
  auto reqs = std::make_unique<IoRequest[]>(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    reqs[i].Reset(IoOp::kRead, runs[i].page << kPageShift, runs[i].pages << kPageShift,
                  runs[i].buf);
  }
  RunRequests(device_, std::span<IoRequest>(reqs.get(), runs.size()));
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!reqs[i].status.ok()) {
      return reqs[i].status.WithContext(fmt::format(
          "{}: read of {} bytes at pos {} (the rest of a partly written page)", device_->name(),
          runs[i].pages << kPageShift, runs[i].page << kPageShift));
    }
  }
  return Status::OK();
}

std::vector<PageRange> AddressSpaceImpl::ZeroOverlaps(uint64_t first, uint64_t last) {
  std::vector<PageRange> zero;
  RankedLock lock(mu_, LockRank::kMapping);
  zero_.Overlaps(first, last, &zero);
  zero_inflight_.Overlaps(first, last, &zero);
  return zero;
}

void AddressSpaceImpl::MarkDirtyLocked(Folio* f, uint32_t first, uint32_t n) {
  if (f->TestFlag(kFolioWbError)) ClearWritebackError(f, first, n);  // written over: out again
  const uint32_t newly = cache_->pages().dirty.Set(f->frame + first, n);
  if (newly == 0) return;
  const int64_t bytes = static_cast<int64_t>(newly) << kPageShift;
  if (f->TestAndSetFlag(kFolioDirty)) index_.SetDirty(f->index.load(std::memory_order_relaxed));
  dirty_bytes_.fetch_add(bytes, std::memory_order_seq_cst);
  NoteDirtied();
  cache_->AccountDirty(bytes);
}

void AddressSpaceImpl::MarkUptodateLocked(Folio* f, uint32_t first, uint32_t n) {
  PageState& ps = cache_->pages();
  ps.uptodate.Set(f->frame + first, n);
  if (ps.uptodate.All(f->frame, static_cast<uint32_t>(f->nr_pages()))) f->SetFlag(kFolioUptodate);
}

Status AddressSpaceImpl::ZeroRange(uint64_t from, uint64_t to, uint64_t fill_size) {
  if (from >= to) return Status::OK();
  if (from % kPageBytes != 0) {
    // The partial first page lives on in the cache, its tail zeroed and dirty.
    const uint64_t head_end = std::min(to, (from + kPageBytes - 1) & ~(kPageBytes - 1));
    FOLIO_RETURN_IF_ERROR(WriteData(from, nullptr, head_end - from, fill_size));
    from = head_end;
    if (from >= to) return Status::OK();
  }
  FOLIO_DCHECK(from % kPageBytes == 0);
  const uint64_t first = from >> kPageShift;
  const uint64_t last = std::min(device_pages_, (to + kPageBytes - 1) >> kPageShift);
  if (first >= last) return Status::OK();
  // Drop first, then record: were the range recorded first, a writeback pass could write
  // these zeros and then a not-yet-dropped dirty folio's old data over them. Nothing can cache
  // these pages in between: they lie past the size (readers and readahead stop there) and
  // writers wait for the size lock we hold exclusively.
  DropRange(first, last, DropMode::kDiscard);
  {
    RankedLock lock(mu_, LockRank::kMapping);
    AddZeroRange(first, last);
  }
  return Status::OK();
}

Status AddressSpaceImpl::Truncate(uint64_t new_size) {
  const uint64_t device_bytes = device_pages_ << kPageShift;
  if (new_size > device_bytes) {
    return Status::NoSpace(fmt::format("{}: truncate to {} bytes: past the end of {} ({} bytes)",
                                       name_, new_size, device_->name(), device_bytes));
  }
  SizeLock lock(size_lock_, SizeLock::Mode::kExclusive);
  const uint64_t old_size = size();
  if (new_size < old_size) {
    size_.store(new_size, std::memory_order_release);
    return ZeroRange(new_size, old_size, old_size);
  }
  if (new_size > old_size) {
    FOLIO_RETURN_IF_ERROR(ZeroRange(old_size, new_size, old_size));
    size_.store(new_size, std::memory_order_release);
  }
  return Status::OK();
}

}  // namespace folio::cache
