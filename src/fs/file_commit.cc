// FileData: committing the device's records with the file's attributes, and handing small
// files to the pack writer (see data_path.h and pack_writer.h).
#include <algorithm>
#include <map>

#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/fs_internal.h"
#include "fs/pack_writer.h"
#include "fs/slice_refs.h"
#include "fs/stats_counters.h"
#include "base/clock.h"

namespace folio::fs {

Result<meta::SliceId> FileData::NewSliceId() { return dp_->NewSliceId(); }

Result<InodeDevice::Owner::CommitOutcome> FileData::CommitRecords(std::span<const PendingRecord> records) {
  View v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    v = view_;
  }
  const bool attrs = v.size_dirty || v.times_dirty || v.atime_dirty || v.mode_dirty || v.sparse_dirty;
  if (records.empty() && !attrs) {
    std::lock_guard<std::mutex> lock(mu_);
    ClearDirtyLocked(v.gen);
    return CommitOutcome::kCommitted;
  }
  const DataContext& ctx = dp_->ctx();
  const int64_t delete_after = WallNs() + ctx.format.deletion_grace_ms * 1000000;
  std::vector<meta::Slice> added;
  added.reserve(records.size());
  // Per chunk, in the records' order (newest last): one append each.
  std::map<uint32_t, std::vector<meta::Slice>> by_chunk;
  // The transaction's reads, known up front: the inode and the refs of the objects the records
  // name (ApplyRefDelta), one round trip on a server engine.
  std::vector<meta::RecordKey> ahead{meta::RecordKey::OfInode(ino_)};
  for (const PendingRecord& r : records) {
    added.push_back(r.slice);
    by_chunk[r.chunk].push_back(r.slice);
    if (r.slice.kind != meta::SliceKind::kZero) {
      ahead.push_back(meta::RecordKey::OfSliceRef(r.slice.id));
    }
  }
  meta::Inode committed;
  bool elsewhere = false;
  bool freed = false;
  Status s = ctx.meta->Transact("write", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Inode> inode, t.GetInode(ino_));
    // Freed since these writes were taken for writeback (a closed file unlinked: an unlink frees
    // a file with nothing committed at once). Inode numbers are never reused, so no file can
    // read what the records name: nothing is committed.
    freed = !inode.has_value();
    if (freed) return Status::OK();
    committed = *inode;
    elsewhere = ChangedSinceBase(committed);
    for (const auto& [chunk, slices] : by_chunk) {
      FOLIO_RETURN_IF_ERROR(t.AppendSlices(ino_, chunk, slices));
    }
    FOLIO_RETURN_IF_ERROR(ApplyRefDelta(t, {}, added, delete_after));
    const uint64_t old_size = committed.size_bytes;
    committed.size_bytes = CommitSize(old_size, v.size, v.size_dirty, v.size_exact);
    // A field the metadata holds another value of than the one this mount last committed or
    // read (v.base) was set since the snapshot above (a setattr after the close, racing this
    // background commit, or another mount's commit): it stays.
    if (v.times_dirty && committed.mtime_ns == v.base.mtime_ns) committed.mtime_ns = v.mtime_ns;
    // Data committed moves the ctime even when the times were adopted since the writes (a
    // truncate or setattr after them): another mount sees the change only by it.
    if (v.times_dirty || !records.empty()) {
      committed.ctime_ns = CommitCtime(committed.ctime_ns, v.ctime_ns);
    }
    if (v.atime_dirty && committed.atime_ns == v.base.atime_ns) committed.atime_ns = v.atime_ns;
    if (v.mode_dirty && committed.mode == v.base.mode) committed.mode = v.mode;
    if (v.sparse_dirty) committed.flags |= meta::kInodeFlagSparse;
    const int64_t delta = Round4k(committed.size_bytes) - Round4k(old_size);
    if (delta != 0) FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedBytes, delta));
    return t.PutInode(committed);
  });
  if (!s.ok()) return s;
  if (freed) {
    std::lock_guard<std::mutex> lock(mu_);
    ClearDirtyLocked(v.gen);
    return CommitOutcome::kInodeFreed;
  }
  FsCounters::Add(ctx.counters->commits);
  FsCounters::Add(ctx.counters->slices_committed, records.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    view_.base = committed;
    stale_ |= elsewhere;
    ClearDirtyLocked(v.gen);
  }
  for (const auto& [chunk, slices] : by_chunk) {
    DataPath::Appended a;
    a.records = slices.size();
    a.last_append_ns = MonotonicNowNs();
    for (const meta::Slice& sl : slices) {
      (sl.len < ctx.format.block_bytes ? a.small_bytes : a.large_bytes) += sl.len;
    }
    dp_->NoteSlices(ino_, chunk, a);
  }
  return CommitOutcome::kCommitted;
}

uint64_t FileData::PackSize() const {
  const uint64_t below = dp_->ctx().format.pack_below_bytes;
  if (below == 0) return 0;
  // Not by a background flush (the settle after a close, the periodic commit) while a handle
  // is open: writes, truncates and zero ranges through it raced the content's read and freeze,
  // and a page's data could come back as the zeros read before it was written back (the data
  // test ZeroRangeInsidePagesOfAGrowingFileKeepsTheEdges, ~3% of runs 4 at a time). The file
  // is packed by the flush after its last close; an fsync packs it at once.
  if (static_cast<SyncMode>(sync_mode_.load(std::memory_order_acquire)) == SyncMode::kBackground &&
      dp_->HasHandles(*this)) {
    return 0;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const bool small = view_.size > 0 && view_.size < below && ticket_ == nullptr;
  return small ? view_.size : 0;
}

FileData::PackedAttrs FileData::pack_attrs() const {
  std::lock_guard<std::mutex> lock(mu_);
  PackedAttrs a;
  a.gen = view_.gen;
  a.size = view_.size;
  a.mtime_ns = view_.mtime_ns;
  a.ctime_ns = view_.ctime_ns;
  a.atime_ns = view_.atime_ns;
  a.mode = view_.mode;
  a.base_mtime_ns = view_.base.mtime_ns;
  a.base_atime_ns = view_.base.atime_ns;
  a.base_mode = view_.base.mode;
  a.base = view_.base;
  a.size_dirty = view_.size_dirty;
  a.size_exact = view_.size_exact;
  a.frozen = frozen_;
  return a;
}

Status FileData::PackContent(const std::vector<char>& content, FrozenBase base) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    frozen_ = std::move(base);
  }
  std::shared_ptr<PackTicket> ticket = dp_->packs()->Add(shared_from_this(), content);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ticket_ = ticket;
  }
  if (static_cast<SyncMode>(sync_mode_.load(std::memory_order_acquire)) == SyncMode::kDurable) {
    return WaitPacked();
  }
  return Status::OK();
}

Status FileData::WaitPacked() {
  std::shared_ptr<PackTicket> t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t = ticket_;
  }
  if (!t) return Status::OK();
  if (!t->done()) (void)dp_->packs()->Flush();
  return t->Wait();
}

void FileData::PackCommitted(const PackedAttrs& attrs, const meta::Inode* committed,
                             bool elsewhere) {
  dev_->Packed();
  std::lock_guard<std::mutex> lock(mu_);
  stale_ |= elsewhere;
  if (committed != nullptr) {
    view_.base.size_bytes = committed->size_bytes;
    view_.base.mtime_ns = committed->mtime_ns;
    view_.base.ctime_ns = std::max(view_.base.ctime_ns, committed->ctime_ns);
    view_.base.atime_ns = committed->atime_ns;
    view_.base.mode = committed->mode;
  }
  ticket_.reset();
  ClearDirtyLocked(attrs.gen);
}

void FileData::PackFailed(const Status& error) {
  (void)error;  // the waiter (if any) gets it from the ticket
  Status s = dev_->UnfreezeAfterFailedPack();
  std::lock_guard<std::mutex> lock(mu_);
  ticket_.reset();
  MarkDirtyLocked();
  (void)s;
}

}  // namespace folio::fs
