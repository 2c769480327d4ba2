// AddressSpaceImpl: writeback, zero-range materialisation, Fsync and the sticky error.
//
// One pass (under wb_mu_, so passes of one address space never overlap and Fsync waits for a
// background pass in flight): first write the pending zero ranges, then collect dirty folios
// in index order (lock, take the dirty page bits, mark those pages under writeback, unlock),
// submit one request per run of dirty pages, one batch per few MiB (the device merges adjacent
// runs, across folios too, up to max_request_bytes), wait, and complete each folio. A page
// whose write failed keeps its data in memory (still up to date, readers see what was
// written), gets its error bit (its bytes counted as unwritten) and is not redirtied, like the
// kernel: a dead device never hangs the cache. The failure is recorded in the address space's ErrSeq,
// with the device's code and errno, for every handle's next Fsync(cursor).
#include <algorithm>

#include <fmt/format.h>

#include "base/check.h"
#include "cache/address_space_impl.h"
#include "cache/async_reader.h"
#include "cache/cache_impl.h"
#include "cache/folio_sync.h"
#include "cache/lock_rank.h"

namespace folio::cache {
namespace {

constexpr uint64_t kBatchBytesMax = 8ull << 20;
constexpr size_t kBatchFoliosMax = 1024;
constexpr size_t kZeroRequestsPerBatch = 64;

}  // namespace

// Folios under writeback: kFolioWriteback set, the pages being written marked in the
// writeback bitmap, one reference each, not locked (writers may change their other pages).
class AddressSpaceImpl::WritebackBatch {
 public:
  explicit WritebackBatch(AddressSpaceImpl* as) : as_(as) {}
  ~WritebackBatch() { FOLIO_CHECK(entries_.empty()); }

  bool empty() const { return entries_.empty(); }
  bool full() const { return bytes_ >= kBatchBytesMax || entries_.size() >= kBatchFoliosMax; }
  void Add(Folio* f, const PageMask& pages, uint32_t nr_pages) {
    entries_.push_back({f, pages});
    bytes_ += uint64_t{nr_pages} << kPageShift;
    total_bytes_ += uint64_t{nr_pages} << kPageShift;
  }
  // Bytes of every folio added since construction (submitted or not).
  uint64_t total_bytes() const { return total_bytes_; }
  // Writes the batch (one request per run of dirty pages; the device merges adjacent ones)
  // and completes every folio in it.
  void Submit();
  Status Finish() {
    if (!empty()) Submit();
    return first_error_;
  }

 private:
  struct Entry {
    Folio* folio;
    PageMask pages;  // the pages being written, relative to the folio
  };
  struct Run {
    size_t entry;
    uint32_t first, n;  // pages relative to the folio
  };
  void CountRequests(std::span<const IoRequest> reqs);
  void Complete(const Entry& e, const PageMask& failed, const Status& error);

  AddressSpaceImpl* const as_;
  std::vector<Entry> entries_;
  uint64_t bytes_ = 0;
  uint64_t total_bytes_ = 0;
  Status first_error_;
};

void AddressSpaceImpl::WritebackBatch::CountRequests(std::span<const IoRequest> reqs) {
  // What reaches the device after merging: adjacent runs (within and across folios, which
  // are in index order) up to max_request_bytes.
  CacheCounters& c = as_->cache_->counters();
  const uint64_t max_bytes = std::max<uint64_t>(kPageBytes, as_->device_->max_request_bytes());
  uint64_t run = 0, prev_end = ~uint64_t{0};
  auto flush = [&] {
    if (run == 0) return;
    CacheCounters::Add(c.writeback_requests);
    CacheCounters::Add(c.writeback_bytes, run);
    c.writeback_request_bytes.Record(run);
  };
  for (const IoRequest& r : reqs) {
    if (r.offset == prev_end && run + r.length <= max_bytes) {
      run += r.length;
    } else {
      flush();
      run = r.length;
    }
    prev_end = r.offset + r.length;
  }
  flush();
}

void AddressSpaceImpl::WritebackBatch::Submit() {
  std::vector<Run> runs;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    e.pages.ForEachRun(static_cast<uint32_t>(e.folio->nr_pages()),
                       [&](uint32_t first, uint32_t n) { runs.push_back({i, first, n}); });
  }
  auto reqs = std::make_unique<IoRequest[]>(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    Folio* f = entries_[runs[r].entry].folio;
    const uint64_t pos = (f->index.load(std::memory_order_relaxed) + runs[r].first) << kPageShift;
    reqs[r].Reset(IoOp::kWrite, pos, uint64_t{runs[r].n} << kPageShift,
                  as_->cache_->Data(f) + (uint64_t{runs[r].first} << kPageShift));
  }
  std::span<IoRequest> all(reqs.get(), runs.size());
  const uint64_t t0 = MonotonicNowNs();
  RunRequests(as_->device_, all);
  as_->cache_->NoteWriteback(bytes_, MonotonicNowNs() - t0);
  CountRequests(all);
  size_t r = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    PageMask failed;
    Status error;
    for (; r < runs.size() && runs[r].entry == i; ++r) {
      if (reqs[r].status.ok()) continue;
      failed.SetRange(runs[r].first, runs[r].n);
      if (!error.ok()) continue;
      // The device's code and errno as they are (a NoSpace stays NoSpace), with what failed.
      error = reqs[r].status.WithContext(fmt::format("{}: writeback of {} bytes at pos {} to {}",
                                                     as_->name_, reqs[r].length, reqs[r].offset,
                                                     as_->device_->name()));
    }
    Complete(entries_[i], failed, error);
  }
  entries_.clear();
  bytes_ = 0;
  as_->cache_->NotifyWritebackProgress();
}

void AddressSpaceImpl::WritebackBatch::Complete(const Entry& e, const PageMask& failed,
                                                const Status& error) {
  Folio* f = e.folio;
  const uint32_t nr = static_cast<uint32_t>(f->nr_pages());
  if (!error.ok()) {
    as_->RecordWritebackError(error);
    if (first_error_.ok()) first_error_ = error;
    // The folio lock orders the error bits against writers' MarkDirtyLocked. Blocking on it
    // while holding references is safe here: nothing that waits for our references (a split)
    // runs on a folio under writeback (DropRange waits for the writeback first).
    while (!TryLockFolio(f)) WaitFolioClear(f, kFolioLocked);
    as_->MarkWriteFailedLocked(f, failed);
    UnlockFolio(f);
  }
  as_->cache_->pages().writeback.ClearMask(f->frame, nr, e.pages);
  ClearFlagsAndWake(f, kFolioWriteback);
  as_->cache_->PutFolio(f);
}

uint64_t AddressSpaceImpl::CollectDirty(uint64_t index, WritebackBatch* batch) {
  Folio* f = LookupGet(index);
  if (f == nullptr) return index + 1;
  if (!TryLockFolio(f)) {
    cache_->PutFolio(f);
    // Never wait for a folio lock while holding others: write what we hold first.
    if (!batch->empty()) batch->Submit();
    WaitFolioClear(f, kFolioLocked);
    return index;
  }
  if (index_.Load(index) != f) {
    UnlockFolio(f);
    cache_->PutFolio(f);
    return index;
  }
  const uint64_t head = f->index.load(std::memory_order_relaxed);
  const uint64_t next = head + f->nr_pages();
  if (head != index || !f->TestFlag(kFolioDirty)) {
    // A stale bit: with the lock of the folio covering index held, nobody can be setting it.
    if (head != index || !f->TestFlag(kFolioDirty)) index_.ClearDirty(index);
    UnlockFolio(f);
    cache_->PutFolio(f);
    return next;
  }
  if (zero_pending_.load(std::memory_order_acquire) && OverlapsPendingZeros(head, next)) {
    // Truncated after this pass wrote its zeros, then written again: the next pass writes
    // the zeros first and then this folio.
    UnlockFolio(f);
    cache_->PutFolio(f);
    return next;
  }
  // Passes of this address space are serialised (wb_mu_) and each waits for its batches.
  FOLIO_DCHECK(!f->TestFlag(kFolioWriteback));
  PageState& ps = cache_->pages();
  const uint32_t nr = static_cast<uint32_t>(f->nr_pages());
  const PageMask dirty = ps.dirty.Get(f->frame, nr);
  const uint32_t pages = ps.dirty.ClearMask(f->frame, nr, dirty);
  f->ClearFlag(kFolioDirty);
  index_.ClearDirty(index);
  const int64_t bytes = static_cast<int64_t>(pages) << kPageShift;
  dirty_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  cache_->AccountDirty(-bytes);
  // Writers that touch these pages wait for the write (stable pages); the others go on. Both
  // marks are in place before the lock is released.
  ps.writeback.SetMask(f->frame, nr, dirty);
  f->SetFlag(kFolioWriteback);
  UnlockFolio(f);
  batch->Add(f, dirty, pages);
  if (batch->full()) batch->Submit();
  return next;
}

Status AddressSpaceImpl::WritebackRange(uint64_t first, uint64_t last) {
  const uint64_t since = dirty_since_ns();
  RankedLock wb(wb_mu_, LockRank::kWriteback);
  Status zero_status = MaterializeZeros();
  WritebackBatch batch(this);
  uint64_t idx = first;
  while (idx < last) {
    idx = index_.NextDirty(idx, last);
    if (idx == FolioIndex::kNone) break;
    idx = CollectDirty(idx, &batch);
  }
  Status s = batch.Finish();
  // A whole pass leaves only what was written meanwhile: that is young.
  if (first == 0 && last >= device_pages_) RestartDirtyClock(since, MonotonicNowNs());
  return zero_status.ok() ? s : zero_status;
}

Status AddressSpaceImpl::WritebackExpired() { return WritebackRange(0, device_pages_); }

uint64_t AddressSpaceImpl::WritebackSome(uint64_t max_bytes) {
  const uint64_t since = dirty_since_ns();
  RankedLock wb(wb_mu_, LockRank::kWriteback);
  (void)MaterializeZeros();  // errors are recorded (errseq) and the zeros stay pending
  WritebackBatch batch(this);
  const uint64_t start = wb_cursor_ < device_pages_ ? wb_cursor_ : 0;
  uint64_t idx = start;
  bool wrapped = false;
  while (batch.total_bytes() < max_bytes) {
    const uint64_t end = wrapped ? start : device_pages_;
    uint64_t next = idx < end ? index_.NextDirty(idx, end) : FolioIndex::kNone;
    if (next == FolioIndex::kNone) {
      if (wrapped || start == 0) {
        idx = 0;
        break;
      }
      wrapped = true;
      idx = 0;
      continue;
    }
    idx = CollectDirty(next, &batch);
  }
  wb_cursor_ = idx;
  (void)batch.Finish();
  if (!HasWritebackWork()) RestartDirtyClock(since, MonotonicNowNs());
  return batch.total_bytes();
}

Status AddressSpaceImpl::WritebackIndices(std::span<const uint64_t> indices) {
  RankedLock wb(wb_mu_, LockRank::kWriteback);
  Status zero_status = MaterializeZeros();
  WritebackBatch batch(this);
  size_t i = 0;
  while (i < indices.size()) {
    const uint64_t idx = indices[i];
    const uint64_t next = CollectDirty(idx, &batch);
    if (next == idx) continue;  // waited for its lock: look again
    while (i < indices.size() && indices[i] < next) ++i;
  }
  Status s = batch.Finish();
  return zero_status.ok() ? s : zero_status;
}

Status AddressSpaceImpl::MaterializeZeros() {
  std::vector<PageRange> ranges;
  {
    RankedLock lock(mu_, LockRank::kMapping);
    if (zero_.empty()) return Status::OK();
    ranges = zero_.ToVector();
    for (const PageRange& r : ranges) zero_inflight_.Add(r.first, r.last);
    zero_.clear();
    zero_pending_.store(false, std::memory_order_release);
  }
  const uint64_t chunk = cache_->zero_buffer_bytes();
  char* zeros = const_cast<char*>(cache_->zero_buffer());  // the device only reads it
  auto reqs = std::make_unique<IoRequest[]>(kZeroRequestsPerBatch);
  CacheCounters& counters = cache_->counters();
  Status first_error;
  size_t n = 0;
  auto run = [&] {
    RunRequests(device_, std::span<IoRequest>(reqs.get(), n));
    for (size_t i = 0; i < n; ++i) {
      if (reqs[i].op == IoOp::kWrite) {
        CacheCounters::Add(counters.writeback_requests);
        CacheCounters::Add(counters.writeback_bytes, reqs[i].length);
        counters.writeback_request_bytes.Record(reqs[i].length);
      }
      if (!reqs[i].status.ok() && first_error.ok()) {
        first_error = reqs[i].status.WithContext(
            fmt::format("{}: writing zeros ({} bytes at pos {}) to {}", name_, reqs[i].length,
                        reqs[i].offset, device_->name()));
      }
    }
    n = 0;
  };
  for (const PageRange& r : ranges) {
    if (trim_zero_ranges_) {
      // The device reads zeros where it was trimmed: one request per range.
      reqs[n++].Reset(IoOp::kTrim, r.first << kPageShift, (r.last - r.first) << kPageShift, nullptr);
      if (n == kZeroRequestsPerBatch) run();
      continue;
    }
    for (uint64_t pos = r.first << kPageShift; pos < (r.last << kPageShift); pos += chunk) {
      const uint64_t len = std::min(chunk, (r.last << kPageShift) - pos);
      reqs[n++].Reset(IoOp::kWrite, pos, len, zeros);
      if (n == kZeroRequestsPerBatch) run();
    }
  }
  run();
  {
    RankedLock lock(mu_, LockRank::kMapping);
    zero_inflight_.clear();
    // Zeros that did not land stay pending (readers keep seeing zeros); the error is sticky.
    if (!first_error.ok()) {
      for (const PageRange& r : ranges) AddZeroRange(r.first, r.last);
    }
  }
  if (!first_error.ok()) RecordWritebackError(first_error);
  return first_error;
}

void AddressSpaceImpl::AddZeroRange(uint64_t first, uint64_t last) {
  zero_.Add(first, last);
  zero_pending_.store(true, std::memory_order_seq_cst);
  NoteDirtied();
}

void AddressSpaceImpl::NoteDirtied() {
  if (dirty_since_ns_.load(std::memory_order_seq_cst) != 0) [[likely]] return;
  uint64_t clean = 0;
  dirty_since_ns_.compare_exchange_strong(clean, MonotonicNowNs(), std::memory_order_seq_cst);
}

void AddressSpaceImpl::RestartDirtyClock(uint64_t since, uint64_t now) {
  // Dekker with NoteDirtied: a writer adds its work, then looks at the clock; we move the
  // clock, then look at the work. One of the two sees the other.
  if (!dirty_since_ns_.compare_exchange_strong(since, 0, std::memory_order_seq_cst)) return;
  if (HasWritebackWork()) {
    uint64_t clean = 0;
    dirty_since_ns_.compare_exchange_strong(clean, now, std::memory_order_seq_cst);
  }
}

bool AddressSpaceImpl::OverlapsPendingZeros(uint64_t first, uint64_t last) {
  RankedLock lock(mu_, LockRank::kMapping);
  std::vector<PageRange> overlap;
  zero_.Overlaps(first, last, &overlap);
  return !overlap.empty();
}

void AddressSpaceImpl::RecordWritebackError(const Status& s) { errseq_.Record(s); }

void AddressSpaceImpl::MarkWriteFailedLocked(Folio* f, const PageMask& failed) {
  const uint32_t newly =
      cache_->pages().error.SetMask(f->frame, static_cast<uint32_t>(f->nr_pages()), failed);
  unwritten_bytes_.fetch_add(static_cast<int64_t>(newly) << kPageShift, std::memory_order_relaxed);
  f->SetFlag(kFolioWbError);
}

void AddressSpaceImpl::ClearWritebackError(Folio* f, uint32_t first, uint32_t n) {
  if (!f->TestFlag(kFolioWbError)) return;
  FrameBitmap& error = cache_->pages().error;
  const uint32_t cleared = error.Clear(f->frame + first, n);
  unwritten_bytes_.fetch_sub(static_cast<int64_t>(cleared) << kPageShift,
                             std::memory_order_relaxed);
  if (!error.Any(f->frame, static_cast<uint32_t>(f->nr_pages()))) f->ClearFlag(kFolioWbError);
}

bool AddressSpaceImpl::HasWritebackWork() {
  return dirty_bytes_.load(std::memory_order_seq_cst) > 0 ||
         zero_pending_.load(std::memory_order_seq_cst);
}

Status AddressSpaceImpl::WriteBack() {
  Status s = WritebackRange(0, device_pages_);
  Status flush = device_->Flush();
  if (!s.ok()) return s;
  if (!flush.ok()) return flush.WithContext(name_ + ": flush of " + device_->name());
  return Status::OK();
}

Status AddressSpaceImpl::Fsync(WritebackErrorCursor* cursor) {
  // This pass's errors are recorded in errseq_ too: report through it, once per cursor.
  (void)WritebackRange(0, device_pages_);
  Status flush = device_->Flush();
  Status recorded = errseq_.CheckAndAdvance(&cursor->seq);
  if (!recorded.ok()) return recorded;
  if (!flush.ok()) return flush.WithContext(name_ + ": fsync: flush of " + device_->name());
  return Status::OK();
}

Status AddressSpaceImpl::Fsync() { return Fsync(&fsync_cursor_); }

WritebackErrorCursor AddressSpaceImpl::SampleWritebackError() {
  return WritebackErrorCursor{errseq_.Sample()};
}

WritebackErrorState AddressSpaceImpl::writeback_errors() const {
  WritebackErrorState st;
  st.errors = errseq_.errors();
  st.unwritten_bytes =
      static_cast<uint64_t>(std::max<int64_t>(0, unwritten_bytes_.load(std::memory_order_relaxed)));
  st.latest = errseq_.latest();
  return st;
}

}  // namespace folio::cache
