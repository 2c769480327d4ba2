// FileData: one regular file's data on this mount: its page-cache address space over its
// InodeDevice, and the attributes its writes changed that are not committed yet.
//
// Attributes: size, mtime / ctime (writes, truncates), atime (reads, relatime) and mode (a
// write by a non-root caller clears set-user-ID) are kept here while uncommitted and overlaid
// on the metadata's inode by getattr; the device's flush commits them with the data.
//
// Locks (in this order):
//   io_      shared by reads and writes, exclusive for truncate, fallocate, address-space
//            regrowth and attribute changes by setattr (no write slips between an overlay and
//            its adoption)
//   sync_mu_ one commit (Sync) at a time
//   mu_      the attributes (a leaf; the device's commit callback takes it)
//
// The address space is opened over a device of `capacity` bytes (the cache's index is sized
// by it): max(256 MiB, 2x the file size) rounded up to a power of two; a write or truncate
// past it commits, reopens the address space over a device 4x larger, and goes on.
//
// Thread safety: every method is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>

#include "cache/page_range_set.h"
#include "folio/page_cache.h"
#include "fs/fs_types.h"
#include "fs/inode_device.h"
#include "meta/meta_engine.h"

namespace folio::fs {

class DataPath;
struct PackTicket;

enum class SyncMode {
  kDurable,     // fsync: durable and committed when Sync returns
  kBackground,  // a close or the periodic commit: a small file may wait in the pack writer
};

class FileData final : public InodeDevice::Owner,
                       public std::enable_shared_from_this<FileData> {
 public:
  FileData(DataPath* dp, const meta::Inode& inode, const FolioPolicy& policy);
  ~FileData() override;
  FileData(const FileData&) = delete;
  FileData& operator=(const FileData&) = delete;

  // Creates the device and the address space. `chunks`: the file's chunk list read with the
  // inode this FileData was made from (null: the device reads it).
  Status Init(const std::vector<uint32_t>* chunks = nullptr);
  InodeId ino() const { return ino_; }

  // ---- Data ------------------------------------------------------------------------------
  Result<size_t> Read(uint64_t pos, std::span<char> out);
  // With append, writes at the end of file (under the exclusive lock, so appends never mix).
  Result<size_t> Write(uint64_t pos, std::span<const char> in, bool append, const Cred& cred);
  Status Sync(SyncMode mode);
  // Truncate to size (the cache, the pending records and the committed chunks, one
  // transaction for the metadata).
  Status Truncate(uint64_t size, const Cred& cred);
  Status Fallocate(int mode, uint64_t pos, uint64_t len, const Cred& cred);
  Result<uint64_t> Seek(uint64_t pos, Whence whence);
  // The file was freed: drops its cached pages unwritten (dirty ones too) and the device's
  // pending records; a later Sync writes nothing. A pack entry already handed to the pack
  // writer is committed to nothing (the inode is gone) and reclaimed with its pack.
  void Discard();

  // ---- Attributes ------------------------------------------------------------------------
  // Puts this mount's view into an inode read from the metadata: its uncommitted size, times
  // and mode, and, when the inode was read before a commit of this mount landed (its ctime is
  // older than the one this mount last committed), what that commit put.
  void Overlay(meta::Inode* inode) const;
  // For a file that may have holes (kInodeFlagSparse, committed or not): adds the pages this
  // mount wrote since it became sparse (committed or not yet) to *pages, in 4 KiB file pages.
  void AddWrittenPages(cache::PageRangeSet* pages) const;
  // The metadata now holds `inode` (a setattr committed it): take its mode, owner and times,
  // clearing those uncommitted changes.
  void AdoptAttrs(const meta::Inode& inode);
  // Shared mounts: whether `pre`, the inode as a commit of this mount read it in its
  // transaction, holds another mount's change since this mount last looked. Such a commit
  // adopts what it wrote as this mount's base, while the cached data may still be older: the
  // FileData is then marked stale, and the next open revalidates it (drops the cache).
  bool ChangedSinceBase(const meta::Inode& pre) const;
  void MarkStale();
  // The size to commit is exactly size() (View::size_exact).
  bool size_exact() const;
  uint64_t size() const;
  bool Dirty() const;
  uint64_t dirty_since_ns() const;
  // The atime of reads is all this mount has uncommitted of the file (no data, no other
  // attribute, no pack in flight): what DataPath::CommitAtimes commits for many files in one
  // transaction. nullopt when anything else is dirty (the file's own commit takes it all).
  struct AtimeUpdate {
    uint64_t gen = 0;
    int64_t atime_ns = 0;
    int64_t base_atime_ns = 0;  // the committed atime the reads' one replaces
  };
  std::optional<AtimeUpdate> AtimeOnly() const;
  // The metadata holds `committed_atime_ns` now (CommitAtimes' transaction): the base takes it,
  // and the file is clean unless it changed since `u` was taken.
  void AtimeCommitted(const AtimeUpdate& u, int64_t committed_atime_ns);
  // Close-to-open at an open of this cached file: *seen is the metadata's inode as the open
  // read it. When the metadata holds another version than this mount last committed or read
  // (another mount wrote the file, or the FileData is stale) and this mount has nothing
  // uncommitted but the atime of its reads (kept for its next commit), drops the cached pages
  // and slice lists, reads the list of chunks again and adopts it; returns whether it did.
  // *seen may predate a commit of this mount that landed after it was read (the background
  // commit of a file just closed), so a difference is checked again on a fresh read under the
  // exclusive lock, which then replaces *seen.
  Result<bool> Revalidate(meta::Inode* seen);
  std::unique_lock<std::shared_mutex> LockExclusive() { return std::unique_lock(io_); }
  void SetPolicy(const FolioPolicy& policy);
  FolioPolicy policy() const;
  void NoteLocks() { has_locks_.store(true, std::memory_order_relaxed); }
  bool has_locks() const { return has_locks_.load(std::memory_order_relaxed); }
  InodeDevice* device() const { return dev_.get(); }
  AddressSpace* mapping() const { return as_.get(); }

  // ---- DataPath bookkeeping (GUARDED_BY DataPath::mu_) ------------------------------------
  int opens = 0;
  // Unlinked while open: free at the last close. A count of DataPath::MarkSustainedIfOpen's
  // marks whose transaction committed; pending_marks counts those whose transaction has not
  // returned yet (a last close waits for them to become one or the other: SustainMarks).
  int sustain_marks = 0;
  int pending_marks = 0;
  // Shared mounts: whether the sustained table holds (this session, this inode) for this
  // mount's handles (DataPath::RecordOpen, ReleaseOpenRecord). GUARDED_BY(record_mu); taken
  // before any transaction and before DataPath::mu_.
  std::mutex record_mu;
  bool recorded = false;
  bool in_lru = false;
  std::list<uint64_t>::iterator lru_it;

  // ---- InodeDevice::Owner ----------------------------------------------------------------
  Result<meta::SliceId> NewSliceId() override;
  Result<CommitOutcome> CommitRecords(std::span<const PendingRecord> records) override;
  Status WaitPacked() override;
  uint64_t PackSize() const override;
  // Hands the frozen content to the pack writer; with a durable sync, waits for its commit.
  Status PackContent(const std::vector<char>& content, FrozenBase base) override;

  // ---- Pack writer callbacks -------------------------------------------------------------
  struct PackedAttrs {
    uint64_t gen = 0;
    uint64_t size = 0;
    int64_t mtime_ns = 0, ctime_ns = 0, atime_ns = 0;
    uint32_t mode = 0;
    // The committed values these were taken over: a field the metadata holds another value of
    // at the pack's commit was set since (chmod, utimensat after the close) and is kept.
    int64_t base_mtime_ns = 0, base_atime_ns = 0;
    uint32_t base_mode = 0;
    meta::Inode base;  // the whole inode these were taken over (ChangedSinceBase)
    bool size_dirty = false, size_exact = false;  // as in View: how `size` is committed
    // What the content was built from (InodeDevice::FrozenBase): the pack replaces chunk 0
    // only when the metadata still holds `frozen.committed`; otherwise (another mount
    // committed to the file since) it adds records for `frozen.written` alone.
    FrozenBase frozen;
  };
  // The attributes a pack entry commits (taken when the content was handed over).
  PackedAttrs pack_attrs() const;
  // `committed`: the inode as the pack's transaction wrote it, or null when that transaction
  // found the inode freed (nothing was written); `elsewhere`: it found another mount's change
  // (ChangedSinceBase).
  void PackCommitted(const PackedAttrs& attrs, const meta::Inode* committed, bool elsewhere);
  void PackFailed(const Status& error);

 private:
  // Whether `inode` differs from what this mount last committed or read.
  bool ChangedElsewhere(const meta::Inode& inode) const;
  // Whether this mount has uncommitted data or attributes other than an atime.
  bool DataDirty() const;
  struct View {
    uint64_t size = 0;
    int64_t mtime_ns = 0, ctime_ns = 0, atime_ns = 0;
    uint32_t mode = 0;
    bool size_dirty = false, times_dirty = false, atime_dirty = false, mode_dirty = false;
    // The size to commit is exactly `size` (a truncate whose own commit failed), not the
    // largest of it and the committed size (writes only grow a file: the committed size may
    // be another mount's later growth).
    bool size_exact = false;
    // Written (write, fallocate, punch) since the last commit: the cache may hold dirty pages
    // whatever the attribute flags say (a setattr adopts the attributes, not the data).
    bool data_dirty = false;
    bool sparse_dirty = false;        // kInodeFlagSparse to commit
    uint64_t gen = 0;                 // bumped by every change
    uint64_t dirty_since_ns = 0;      // monotonic; 0 = clean
    meta::Inode base;                 // the inode as last read or committed
  };
  static uint64_t CapacityFor(uint64_t size);
  Status OpenMapping(uint64_t capacity);
  // REQUIRES: io_ exclusive.
  Status Regrow(uint64_t end);
  void MarkDirtyLocked();
  void ClearDirtyLocked(uint64_t gen);
  // A write or fallocate changed the data: the size grows to new_size if that is larger, the
  // times become now, the mode loses what a write by cred clears (ModeAfterWrite).
  // REQUIRES: mu_ held.
  void NoteModifiedLocked(uint64_t new_size, int64_t now, const Cred& cred);
  bool SparseLocked() const;
  // The file may have holes from now on. [0, size) had none, so its pages count as written.
  // REQUIRES: mu_ held.
  void MarkSparseLocked();
  Status TruncateMeta(uint64_t size, const Cred& cred);
  Status PunchRange(uint64_t pos, uint64_t len);

  DataPath* const dp_;
  const InodeId ino_;
  // Once the file may have holes: every page written through this FileData (a superset of
  // what is not committed yet), for st_blocks; punched and truncated pages removed. Kept out
  // of View, which commits copy. GUARDED_BY(mu_).
  cache::PageRangeSet written_;
  std::unique_ptr<InodeDevice> dev_;
  std::unique_ptr<AddressSpace> as_;  // GUARDED_BY(io_) for replacement
  uint64_t capacity_ = 0;             // GUARDED_BY(io_)

  mutable std::shared_mutex io_;
  std::mutex sync_mu_;
  std::atomic<int> sync_mode_{static_cast<int>(SyncMode::kDurable)};
  mutable std::mutex mu_;
  View view_;                          // GUARDED_BY(mu_)
  FolioPolicy policy_;                 // GUARDED_BY(mu_)
  std::shared_ptr<PackTicket> ticket_; // GUARDED_BY(mu_): the pack entry in flight, if any
  PackedAttrs packed_attrs_;           // GUARDED_BY(mu_)
  FrozenBase frozen_;                  // GUARDED_BY(mu_): of the content being handed over
  // Shared mounts: a commit of this mount took another mount's change into view_.base while
  // the cached data may be older (ChangedSinceBase); the next open revalidates.
  bool stale_ = false;                 // GUARDED_BY(mu_)
  std::atomic<bool> has_locks_{false};
};

}  // namespace folio::fs
