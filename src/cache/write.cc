// AddressSpaceImpl: the write path, zero ranges and Truncate.
//
// A write walks its range folio by folio. A cached folio is locked (which also waits for its
// writeback: stable pages), modified under its sequence lock and marked dirty. An uncached run
// gets new folios in one go (order from the policy: dynamic takes the largest order that the
// write's alignment and length cover; 4k order 0; fixed the fixed order), which are brought to
// their old content only where the write does not cover them (device reads below the old size,
// zeros above it or in zero ranges), then filled, marked up to date and dirty.
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
  cache_->ThrottleWriter(this);
  for (;;) {
    if (pos > size()) {
      // The write leaves a gap after the current end of file: it must read as zeros.
      SizeLock lock(size_lock_, SizeLock::Mode::kExclusive);
      const uint64_t old_size = size();
      if (pos > old_size) FOLIO_RETURN_IF_ERROR(ZeroRange(old_size, pos, old_size));
      FOLIO_RETURN_IF_ERROR(WriteData(pos, in.data(), len, old_size));
      ExtendSize(end);
      return len;
    }
    SizeLock lock(size_lock_, SizeLock::Mode::kShared);
    const uint64_t old_size = size();
    if (pos > old_size) continue;  // truncated meanwhile: take the gap path
    FOLIO_RETURN_IF_ERROR(WriteData(pos, in.data(), len, old_size));
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
                                   uint64_t old_size) {
  CacheCounters& counters = cache_->counters();
  uint64_t done = 0;
  while (done < len) {
    if (counters.dirty_bytes.load(std::memory_order_relaxed) > cache_->dirty_bytes_max()) {
      cache_->ThrottleWriter(this);
    }
    const uint64_t p = pos + done;
    const uint64_t idx = p >> kPageShift;
    const char* s = src != nullptr ? src + done : nullptr;
    Folio* f = LookupGet(idx);
    if (f == nullptr) {
      FOLIO_ASSIGN_OR_RETURN(uint64_t n, WriteNew(p, s, len - done, old_size));
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
    if (!f->TestFlag(kFolioUptodate)) {
      RemoveLocked(f);  // a failed read left it behind
      continue;
    }
    FOLIO_DCHECK(!f->TestFlag(kFolioWriteback));  // writeback holds the folio lock
    const uint64_t off = p - (f->index.load(std::memory_order_relaxed) << kPageShift);
    const uint64_t c = std::min(len - done, f->bytes() - off);
    CopyIntoFolio(f, cache_->Data(f) + off, s, c);
    MarkDirtyLocked(f);
    UnlockFolio(f);
    cache_->PutFolio(f);
    done += c;
  }
  return Status::OK();
}

Result<uint64_t> AddressSpaceImpl::WriteNew(uint64_t pos, const char* src, uint64_t len,
                                            uint64_t old_size) {
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
      plan.push_back({start, o, true, nullptr});
      q = start + OrderPages(o);
      planned += OrderPages(o);
    }
  }
  if (plan.empty()) return uint64_t{0};
  std::vector<Folio*> folios;
  std::vector<PageRange> zero;
  FOLIO_RETURN_IF_ERROR(InsertNew(&plan, AllocMode::kMayReclaim, ~uint64_t{0}, &zero, &folios));
  Status s = FillForWrite(folios, pos, end, old_size, zero);
  if (!s.ok()) {
    for (Folio* f : folios) {
      f->SetFlag(kFolioError);
      RemoveLocked(f);
    }
    return s;
  }
  uint64_t covered_end = pos;  // [pos, covered_end) is now written
  for (Folio* f : folios) {
    const uint64_t fs = f->index.load(std::memory_order_relaxed) << kPageShift;
    const uint64_t fe = fs + f->bytes();
    const uint64_t a = std::max(pos, fs), b = std::min(end, fe);
    if (a < b) {
      char* dst = cache_->Data(f) + (a - fs);
      if (src != nullptr) {
        std::memcpy(dst, src + (a - pos), b - a);
      } else {
        std::memset(dst, 0, b - a);
      }
    }
    if (fs <= covered_end && covered_end < fe) covered_end = std::min(end, fe);
    f->SetFlag(kFolioUptodate);
    MarkDirtyLocked(f);
    UnlockFolio(f);
    cache_->PutFolio(f);
  }
  return covered_end - pos;
}

Status AddressSpaceImpl::FillForWrite(std::span<Folio* const> folios, uint64_t pos, uint64_t end,
                                      uint64_t old_size, const std::vector<PageRange>& zero) {
  struct Run {
    Folio* folio;
    char* buf;
    uint64_t page;
    uint64_t pages;
  };
  std::vector<Run> runs;
  for (Folio* f : folios) {
    const uint64_t fi = f->index.load(std::memory_order_relaxed);
    for (uint64_t pg = fi; pg < fi + f->nr_pages(); ++pg) {
      const uint64_t ps = pg << kPageShift;
      char* d = cache_->Data(f) + ((pg - fi) << kPageShift);
      if (ps >= pos && ps + kPageBytes <= end) continue;  // overwritten whole
      if (ps >= old_size || InZero(zero, pg)) {
        std::memset(d, 0, kPageBytes);
        continue;
      }
      if (!runs.empty() && runs.back().folio == f && runs.back().page + runs.back().pages == pg) {
        ++runs.back().pages;
      } else {
        runs.push_back({f, d, pg, 1});
      }
    }
  }
  if (runs.empty()) return Status::OK();
  auto reqs = std::make_unique<IoRequest[]>(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    reqs[i].Reset(IoOp::kRead, runs[i].page << kPageShift, runs[i].pages << kPageShift,
                  runs[i].buf);
  }
  RunRequests(device_, std::span<IoRequest>(reqs.get(), runs.size()));
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!reqs[i].status.ok()) {
      return Status::IOError(fmt::format(
          "{}: read of {} bytes at pos {} (the rest of a partially written folio) failed: {}",
          device_->name(), runs[i].pages << kPageShift, runs[i].page << kPageShift,
          reqs[i].status.ToString()));
    }
  }
  return Status::OK();
}

void AddressSpaceImpl::MarkDirtyLocked(Folio* f) {
  const uint32_t old = f->flags.fetch_or(kFolioDirty, std::memory_order_acq_rel);
  if (old & kFolioWbError) ClearWritebackError(f);  // written over: it goes out again
  if (old & kFolioDirty) return;
  index_.SetDirty(f->index.load(std::memory_order_relaxed));
  dirty_bytes_.fetch_add(static_cast<int64_t>(f->bytes()), std::memory_order_relaxed);
  cache_->AccountDirty(static_cast<int64_t>(f->bytes()));
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
