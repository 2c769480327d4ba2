// AddressSpaceImpl: writeback, zero-range materialisation, Fsync and the sticky error.
//
// One pass (under wb_mu_, so passes of one address space never overlap and Fsync waits for a
// background pass in flight): first write the pending zero ranges, then collect dirty folios
// in index order (lock, clear dirty, set writeback), submit them as one batch per few MiB (the
// device merges adjacent ones up to max_request_bytes), wait, and complete each folio. A
// failed folio keeps its data in memory (still up to date, readers see what was written), is
// marked kFolioWbError (its bytes counted as unwritten) and is not redirtied, like the kernel:
// a dead device never hangs the cache. The failure is recorded in the address space's ErrSeq,
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

// Folios under writeback: locked, kFolioWriteback set, one reference each.
class AddressSpaceImpl::WritebackBatch {
 public:
  explicit WritebackBatch(AddressSpaceImpl* as) : as_(as) {}
  ~WritebackBatch() { FOLIO_CHECK(folios_.empty()); }

  bool empty() const { return folios_.empty(); }
  bool full() const { return bytes_ >= kBatchBytesMax || folios_.size() >= kBatchFoliosMax; }
  void Add(Folio* f) {
    folios_.push_back(f);
    bytes_ += f->bytes();
  }
  // Writes the batch and completes every folio in it.
  void Submit();
  Status Finish() {
    if (!empty()) Submit();
    return first_error_;
  }

 private:
  void CountRequests();

  AddressSpaceImpl* const as_;
  std::vector<Folio*> folios_;
  uint64_t bytes_ = 0;
  Status first_error_;
};

void AddressSpaceImpl::WritebackBatch::CountRequests() {
  // What reaches the device after merging: runs of adjacent folios up to max_request_bytes.
  CacheCounters& c = as_->cache_->counters();
  const uint64_t max_bytes = std::max<uint64_t>(kPageBytes, as_->device_->max_request_bytes());
  uint64_t run = 0, prev_end = ~uint64_t{0};
  auto flush = [&] {
    if (run == 0) return;
    CacheCounters::Add(c.writeback_requests);
    CacheCounters::Add(c.writeback_bytes, run);
    c.writeback_request_bytes.Record(run);
  };
  for (Folio* f : folios_) {
    const uint64_t start = f->index.load(std::memory_order_relaxed) << kPageShift;
    if (start == prev_end && run + f->bytes() <= max_bytes) {
      run += f->bytes();
    } else {
      flush();
      run = f->bytes();
    }
    prev_end = start + f->bytes();
  }
  flush();
}

void AddressSpaceImpl::WritebackBatch::Submit() {
  const size_t n = folios_.size();
  auto reqs = std::make_unique<IoRequest[]>(n);
  for (size_t i = 0; i < n; ++i) {
    Folio* f = folios_[i];
    reqs[i].Reset(IoOp::kWrite, f->index.load(std::memory_order_relaxed) << kPageShift,
                  f->bytes(), as_->cache_->Data(f));
  }
  RunRequests(as_->device_, std::span<IoRequest>(reqs.get(), n));
  CountRequests();
  for (size_t i = 0; i < n; ++i) {
    Folio* f = folios_[i];
    if (!reqs[i].status.ok()) {
      // The device's code and errno as they are (a NoSpace stays NoSpace), with what failed.
      Status e = reqs[i].status.WithContext(fmt::format(
          "{}: writeback of {} bytes at pos {} to {}", as_->name_, f->bytes(),
          f->index.load(std::memory_order_relaxed) << kPageShift, as_->device_->name()));
      as_->RecordWritebackError(e, f);
      if (first_error_.ok()) first_error_ = e;
    }
    HandOffFolioLock();
    ClearFlagsAndWake(f, kFolioWriteback | kFolioLocked);
    as_->cache_->PutFolio(f);
  }
  folios_.clear();
  bytes_ = 0;
  as_->cache_->NotifyWritebackProgress();
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
  f->ClearFlag(kFolioDirty);
  index_.ClearDirty(index);
  dirty_bytes_.fetch_sub(static_cast<int64_t>(f->bytes()), std::memory_order_relaxed);
  cache_->AccountDirty(-static_cast<int64_t>(f->bytes()));
  f->SetFlag(kFolioWriteback);
  batch->Add(f);
  if (batch->full()) batch->Submit();
  return next;
}

Status AddressSpaceImpl::WritebackRange(uint64_t first, uint64_t last) {
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
  return zero_status.ok() ? s : zero_status;
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
      CacheCounters::Add(counters.writeback_requests);
      CacheCounters::Add(counters.writeback_bytes, reqs[i].length);
      counters.writeback_request_bytes.Record(reqs[i].length);
      if (!reqs[i].status.ok() && first_error.ok()) {
        first_error = reqs[i].status.WithContext(
            fmt::format("{}: writing zeros ({} bytes at pos {}) to {}", name_, reqs[i].length,
                        reqs[i].offset, device_->name()));
      }
    }
    n = 0;
  };
  for (const PageRange& r : ranges) {
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
  if (!first_error.ok()) RecordWritebackError(first_error, nullptr);
  return first_error;
}

void AddressSpaceImpl::AddZeroRange(uint64_t first, uint64_t last) {
  zero_.Add(first, last);
  zero_pending_.store(true, std::memory_order_release);
}

bool AddressSpaceImpl::OverlapsPendingZeros(uint64_t first, uint64_t last) {
  RankedLock lock(mu_, LockRank::kMapping);
  std::vector<PageRange> overlap;
  zero_.Overlaps(first, last, &overlap);
  return !overlap.empty();
}

void AddressSpaceImpl::RecordWritebackError(const Status& s, Folio* f) {
  errseq_.Record(s);
  if (f != nullptr && f->TestAndSetFlag(kFolioWbError)) {
    unwritten_bytes_.fetch_add(static_cast<int64_t>(f->bytes()), std::memory_order_relaxed);
  }
}

void AddressSpaceImpl::ClearWritebackError(Folio* f) {
  if (!f->TestFlag(kFolioWbError)) return;
  f->ClearFlag(kFolioWbError);
  unwritten_bytes_.fetch_sub(static_cast<int64_t>(f->bytes()), std::memory_order_relaxed);
}

bool AddressSpaceImpl::HasWritebackWork() {
  return dirty_bytes_.load(std::memory_order_relaxed) > 0 ||
         zero_pending_.load(std::memory_order_acquire);
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
