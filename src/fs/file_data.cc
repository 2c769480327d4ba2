// FileData: the address space, reads, writes, attributes, Sync (see file_data.h).
// Commit and packing: file_commit.cc. Truncate, fallocate, seek: file_space.cc.
#include "fs/file_data.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/clock.h"
#include "fs/data_path.h"
#include "fs/fs_internal.h"
#include "fs/perm.h"

namespace folio::fs {

FileData::FileData(DataPath* dp, const meta::Inode& inode, const FolioPolicy& policy)
    : dp_(dp), ino_(inode.ino), policy_(policy) {
  view_.base = inode;
  view_.size = inode.size_bytes;
  view_.mtime_ns = inode.mtime_ns;
  view_.ctime_ns = inode.ctime_ns;
  view_.atime_ns = inode.atime_ns;
  view_.mode = inode.mode;
}

FileData::~FileData() {
  // The address space goes before its device.
  as_.reset();
  dev_.reset();
}

uint64_t FileData::CapacityFor(uint64_t size) {
  uint64_t cap = 256ull << 20;
  while (cap < size * 2 && cap < kMaxFileBytes) cap <<= 1;
  return std::max(cap, (size + 4095) & ~uint64_t{4095});
}

Status FileData::Init(const std::vector<uint32_t>* chunks) {
  std::unique_lock<std::shared_mutex> io(io_);
  capacity_ = CapacityFor(view_.size);
  dev_ = std::make_unique<InodeDevice>(this, &dp_->ctx(), ino_, capacity_);
  FOLIO_RETURN_IF_ERROR(dev_->Init(chunks));
  return OpenMapping(capacity_);
}

Status FileData::OpenMapping(uint64_t capacity) {
  // Sync runs without io_ (the periodic commit, SyncAll): it must not find the address space
  // freed under it.
  std::lock_guard<std::mutex> sync(sync_mu_);
  as_.reset();
  dev_->SetCapacity(capacity);
  capacity_ = capacity;
  AddressSpaceOptions o;
  o.name = InodeText(ino_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    o.size_bytes = view_.size;
    o.override_policy = true;
    o.policy = policy_;
  }
  o.sparse_device = true;
  o.readahead_max_bytes = dp_->ctx().options.readahead_bytes;
  FOLIO_ASSIGN_OR_RETURN(as_, dp_->ctx().cache->Open(dev_.get(), o));
  return Status::OK();
}

Status FileData::Regrow(uint64_t end) {
  if (end <= capacity_) return Status::OK();
  if (end > kMaxFileBytes) return Errno(EFBIG, InodeText(ino_) + ": size " + std::to_string(end));
  uint64_t cap = capacity_;
  while (cap < end) cap = std::min(cap * 4, kMaxFileBytes);
  // Everything dirty goes to the device (and is committed) before the mapping is replaced.
  FOLIO_RETURN_IF_ERROR(Sync(SyncMode::kBackground));
  return OpenMapping(cap);
}

Result<size_t> FileData::Read(uint64_t pos, std::span<char> out) {
  std::shared_lock<std::shared_mutex> io(io_);
  FOLIO_ASSIGN_OR_RETURN(size_t n, as_->Read(pos, out));
  const AtimeMode atime = dp_->ctx().options.atime;
  if (atime == AtimeMode::kNoatime || n == 0) return n;
  const int64_t now = WallNs();
  std::lock_guard<std::mutex> lock(mu_);
  // relatime: update when atime is not newer than mtime / ctime, or a day old.
  const bool update = atime == AtimeMode::kStrict || view_.atime_ns <= view_.mtime_ns ||
                      view_.atime_ns <= view_.ctime_ns ||
                      now - view_.atime_ns > 24ll * 3600 * 1000000000;
  if (update) {
    view_.atime_ns = now;
    view_.atime_dirty = true;
    MarkDirtyLocked();
  }
  return n;
}

Result<size_t> FileData::Write(uint64_t pos, std::span<const char> in, bool append,
                               const Cred& cred) {
  if (in.empty()) return size_t{0};
  for (;;) {
    std::shared_lock<std::shared_mutex> shared(io_, std::defer_lock);
    std::unique_lock<std::shared_mutex> exclusive(io_, std::defer_lock);
    if (append) {
      exclusive.lock();
      pos = size();
    } else {
      shared.lock();
    }
    const uint64_t end = pos + in.size();
    if (end < pos || end > kMaxFileBytes) {
      return Errno(EFBIG, InodeText(ino_) + ": write past " + std::to_string(kMaxFileBytes));
    }
    if (end > capacity_) {
      if (shared.owns_lock()) shared.unlock();
      if (!exclusive.owns_lock()) exclusive.lock();
      FOLIO_RETURN_IF_ERROR(Regrow(end));
      if (!append) continue;  // take the shared lock again
    }
    const int64_t now = WallNs();
    {
      // The size grows before the data is in the cache, so a commit never names data past
      // the size it commits.
      std::lock_guard<std::mutex> lock(mu_);
      if (pos > view_.size) MarkSparseLocked();  // [old size, pos) is a hole
      if (SparseLocked()) written_.Add(pos / kPageBytes, (end + kPageBytes - 1) / kPageBytes);
      NoteModifiedLocked(end, now, cred);
    }
    FOLIO_ASSIGN_OR_RETURN(size_t n, as_->Write(pos, in));
    return n;
  }
}

Status FileData::Sync(SyncMode mode) {
  std::lock_guard<std::mutex> lock(sync_mu_);
  sync_mode_.store(static_cast<int>(mode), std::memory_order_release);
  Status s = as_->Fsync();
  sync_mode_.store(static_cast<int>(SyncMode::kDurable), std::memory_order_release);
  if (!s.ok()) return s;
  if (mode == SyncMode::kDurable) FOLIO_RETURN_IF_ERROR(WaitPacked());
  return Status::OK();
}

void FileData::Discard() {
  std::unique_lock<std::shared_mutex> io(io_);
  bool uncommitted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Every write marks the file dirty (dirty_since_ns) until a commit of it lands: a file
    // without that has no dirty page, and its clean ones go with the FileData.
    uncommitted = view_.dirty_since_ns != 0 || view_.data_dirty || view_.sparse_dirty;
    view_.size_dirty = view_.times_dirty = view_.atime_dirty = view_.mode_dirty = false;
    view_.size_exact = view_.data_dirty = false;
    view_.sparse_dirty = false;
    view_.dirty_since_ns = 0;
  }
  // The cached pages go unwritten, dirty ones included (the kernel's truncate_inode_pages when
  // it evicts a deleted inode): a settle or SyncAll that still holds this file then writes
  // nothing. Destroying the address space waits for the writeback a flusher has in flight on
  // it; what that put on the device is dropped next, with the records before it.
  if (uncommitted) {
    Status s = OpenMapping(capacity_);
    // The same device and options opened this file's mapping before.
    FOLIO_CHECK_MSG(s.ok(), s.ToString().c_str());
  }
  dev_->DiscardPending();
}

// ---- Attributes ------------------------------------------------------------------------

void FileData::MarkDirtyLocked() {
  view_.gen++;
  if (view_.dirty_since_ns == 0) view_.dirty_since_ns = MonotonicNowNs();
}

void FileData::ClearDirtyLocked(uint64_t gen) {
  if (view_.gen != gen) return;  // changed again since: stays dirty
  view_.size_dirty = view_.times_dirty = view_.atime_dirty = view_.mode_dirty = false;
  view_.size_exact = view_.data_dirty = false;
  view_.sparse_dirty = false;
  if (!dev_->HasPending()) view_.dirty_since_ns = 0;
}

void FileData::NoteModifiedLocked(uint64_t new_size, int64_t now, const Cred& cred) {
  view_.data_dirty = true;
  if (new_size > view_.size) {
    view_.size = new_size;
    view_.size_dirty = true;
  }
  view_.mtime_ns = view_.ctime_ns = now;
  view_.times_dirty = true;
  meta::Inode probe = view_.base;
  probe.mode = view_.mode;
  const uint32_t mode = ModeAfterWrite(probe, cred);
  if (mode != view_.mode) {
    view_.mode = mode;
    view_.mode_dirty = true;
  }
  MarkDirtyLocked();
}

bool FileData::SparseLocked() const {
  return view_.sparse_dirty || (view_.base.flags & meta::kInodeFlagSparse) != 0;
}

void FileData::MarkSparseLocked() {
  if (SparseLocked()) return;
  view_.sparse_dirty = true;
  if (view_.size > 0) written_.Add(0, (view_.size + kPageBytes - 1) / kPageBytes);
  MarkDirtyLocked();
}

void FileData::AddWrittenPages(cache::PageRangeSet* pages) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const cache::PageRange& r : written_.ToVector()) pages->Add(r.first, r.last);
}

void FileData::Overlay(meta::Inode* inode) const {
  std::lock_guard<std::mutex> lock(mu_);
  // An inode read before a commit of this mount landed (the background commit of a file just
  // closed) is older than what that commit put, whose ctime it has not reached: answer with
  // what this mount committed, not the size and times from before.
  if (inode->ctime_ns < view_.base.ctime_ns) {
    inode->size_bytes = view_.base.size_bytes;
    inode->mtime_ns = view_.base.mtime_ns;
    inode->ctime_ns = view_.base.ctime_ns;
    inode->atime_ns = view_.base.atime_ns;
    inode->mode = view_.base.mode;
    inode->flags |= view_.base.flags & meta::kInodeFlagSparse;
  }
  if (view_.sparse_dirty) inode->flags |= meta::kInodeFlagSparse;
  if (view_.size_dirty) inode->size_bytes = view_.size;
  if (view_.times_dirty) {
    inode->mtime_ns = view_.mtime_ns;
    inode->ctime_ns = std::max(inode->ctime_ns, view_.ctime_ns);
  }
  if (view_.atime_dirty) inode->atime_ns = view_.atime_ns;
  if (view_.mode_dirty) inode->mode = view_.mode;
}

void FileData::AdoptAttrs(const meta::Inode& inode) {
  std::lock_guard<std::mutex> lock(mu_);
  view_.base = inode;
  view_.size = inode.size_bytes;
  view_.mtime_ns = inode.mtime_ns;
  view_.ctime_ns = inode.ctime_ns;
  view_.atime_ns = inode.atime_ns;
  view_.mode = inode.mode;
  view_.size_dirty = view_.times_dirty = view_.atime_dirty = view_.mode_dirty = false;
  view_.size_exact = false;
  // A sparse mark not committed yet stays: the setattr committed other fields.
  if ((inode.flags & meta::kInodeFlagSparse) != 0) view_.sparse_dirty = false;
  written_.Remove((inode.size_bytes + kPageBytes - 1) / kPageBytes, UINT64_MAX);
  view_.gen++;
}

uint64_t FileData::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_.size;
}

bool FileData::Dirty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_.dirty_since_ns != 0 || ticket_ != nullptr || dev_->HasPending();
}

std::optional<FileData::AtimeUpdate> FileData::AtimeOnly() const {
  std::lock_guard<std::mutex> lock(mu_);
  const View& v = view_;
  if (!v.atime_dirty || v.size_dirty || v.times_dirty || v.mode_dirty || v.size_exact ||
      v.data_dirty || v.sparse_dirty || ticket_ != nullptr || dev_->HasPending()) {
    return std::nullopt;
  }
  return AtimeUpdate{v.gen, v.atime_ns, v.base.atime_ns};
}

void FileData::AtimeCommitted(const AtimeUpdate& u, int64_t committed_atime_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  view_.base.atime_ns = committed_atime_ns;
  ClearDirtyLocked(u.gen);
}

uint64_t FileData::dirty_since_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_.dirty_since_ns;
}

bool FileData::ChangedSinceBase(const meta::Inode& pre) const {
  if (!dp_->ctx().options.shared) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return InodeChangedSince(pre, view_.base);
}

void FileData::MarkStale() {
  std::lock_guard<std::mutex> lock(mu_);
  stale_ = true;
}

bool FileData::size_exact() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_.size_exact;
}

bool FileData::ChangedElsewhere(const meta::Inode& inode) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (stale_) return true;
  if (inode.mtime_ns != view_.base.mtime_ns || inode.size_bytes != view_.base.size_bytes ||
      inode.ctime_ns < view_.base.ctime_ns) {
    return true;
  }
  // Shared mounts: another mount's commit may leave the size and mtime as they were (the same
  // range rewritten; an mtime its commit keeps because this mount's differs, see
  // CommitRecords); every commit moves the ctime forward, so any other ctime is a change. (A
  // rename or link on this mount moves it too: the cache is then dropped for nothing.)
  return dp_->ctx().options.shared && inode.ctime_ns != view_.base.ctime_ns;
}

bool FileData::DataDirty() const {
  std::lock_guard<std::mutex> lock(mu_);
  // An atime of reads waiting for its commit does not count: it changes no data, and a reader
  // whose reads keep it dirty must still see another mount's close at its next open.
  return view_.data_dirty || view_.size_dirty || view_.times_dirty || view_.mode_dirty ||
         view_.sparse_dirty || ticket_ != nullptr || dev_->HasPending();
}

Result<bool> FileData::Revalidate(meta::Inode* seen) {
  if (!ChangedElsewhere(*seen) || DataDirty()) return false;
  std::unique_lock<std::shared_mutex> io(io_);
  // No write of this mount starts now, and with no data dirty none is committing (an atime
  // commit may be, which changes only the atime): base holds everything this mount committed,
  // so a fresh read differs from it only by another mount.
  if (DataDirty()) return false;
  meta::Inode now;
  FOLIO_RETURN_IF_ERROR(dp_->ctx().meta->Transact("revalidate", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(now, GetInodeOrEnoent(t, ino_));
    return Status::OK();
  }));
  *seen = now;
  if (!ChangedElsewhere(now)) return false;
  FOLIO_RETURN_IF_ERROR(dev_->DropCommittedCache());
  int64_t atime_ns = 0;
  bool atime_dirty;
  {
    std::lock_guard<std::mutex> lock(mu_);
    atime_dirty = view_.atime_dirty;
    atime_ns = view_.atime_ns;
  }
  AdoptAttrs(now);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stale_ = false;
  }
  if (atime_dirty && atime_ns > now.atime_ns) {
    // This mount's reads since its last commit: their atime still goes with the next one.
    std::lock_guard<std::mutex> lock(mu_);
    view_.atime_ns = atime_ns;
    view_.atime_dirty = true;
    MarkDirtyLocked();
  }
  // A fresh address space at the new size: the cached pages go. Not a truncate of this one:
  // it would send a size another mount grew to the device as trims (zero records over the
  // other mount's data, committed at this mount's next sync), and a shrink as zero ranges too.
  FOLIO_RETURN_IF_ERROR(OpenMapping(std::max(capacity_, CapacityFor(now.size_bytes))));
  return true;
}

void FileData::SetPolicy(const FolioPolicy& policy) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    policy_ = policy;
  }
  std::shared_lock<std::shared_mutex> io(io_);
  as_->SetPolicy(policy);
}

FolioPolicy FileData::policy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_;
}

}  // namespace folio::fs
