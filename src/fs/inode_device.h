// InodeDevice: one regular file's data as a BlockDevice, the device under the file's page-cache
// address space. The cache's misses read it; the cache's writeback writes it; the cache's
// Fsync flushes it.
//
//   write   appended to the file's write log: the current LogObject (a stored slice being
//           built, up to 64 MiB). A write contiguous with the previous one (in the file and in
//           the object) extends its record, so sequential writeback makes one large record;
//           random writeback makes many records in one object. A block's buffer is its sector
//           encoding (sector_codec.h), filled as the data comes, so its put is not encoded
//           again: the store writes the CRCs into it and sends it (rados:) or copies it. Each
//           block of the object is put to the store as soon as it is full (once it is durable
//           its buffer is kept as a spare for a later block, BlockBufferPool, unless the store
//           still holds it after a failed put). On a store
//           that defers durability (dir:) the put skips the fsyncs and the block waits,
//           written, for a sync: one batch per FsOptions::store_sync_batch_bytes of written
//           blocks in the background, and one by every flush.
//   read    resolves the chunk's slices, newest last: the committed list (cached here, loaded
//           from the metadata on first use and reloaded when older than a quarter of the
//           deletion grace period) and then the pending records; segments come from pending
//           buffers, ranged store gets (all in flight at once) or zeros. A merged request of
//           several folios (a readahead window) is one such read: large folios are read in
//           place, a get per folio; small ones through one buffer, a get per segment.
//   trim    the cache's zero ranges (a truncate, a write past the end): a kZero record where
//           some older record still has data.
//   flush   seals the current object (its last, short block is put), waits until every block
//           the pending records name is put, makes the written ones durable in one sync, then
//           hands the records to the owner, which commits them with the file's size and times
//           in one transaction; only then do they join the committed list. A failed put or sync
//           keeps the block's buffer, fails the flush, and is retried (put again) by the next
//           flush.
//
// Invariants:
//   1. A record names bytes [object_off, object_off + len) of its object; a sealed object's
//      size never changes, an unsealed one only grows, and only the current object is
//      unsealed.
//   2. Pending records are in write order (seq ascending); a flush commits a prefix of them.
//   3. A block's buffer is present until it is durable (kStored); after that it is read from
//      the store. Its data runs never change once the block is put (only its CRC slots, by
//      the store's put), and it is reused only when no one else refers to it.
//   4. Records are changed in place (CutPending) only under flush_mu_, which a flush holds
//      from its copy of the records until they are committed.
//   5. A record is committed only when every block of its object is kStored (durable).
//
// Lock order: flush_mu_ before mu_. Store completions take mu_ only. No metadata transaction
// runs under mu_ (not even a batch of slice ids): FileData's and DataPath's locks are held
// around mu_ (HasPending), and transactions take those (an overlay, an unlink).
// Thread safety: every method is thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "fs/fs_types.h"
#include "fs/store/block_store.h"
#include "io/queued_device.h"
#include "meta/meta_engine.h"

namespace folio::fs {

struct DataContext;

// One stored slice of the write log.
struct LogObject {
  meta::SliceId id{0};
  uint32_t bytes = 0;  // appended so far; final once sealed
  bool sealed = false;
  // kWritten: put with PutSync::kDeferred, readable in the store, not durable yet; kSyncing:
  // in a sync request; kStored: durable.
  enum class BlockState : uint8_t { kFilling, kPutting, kWritten, kSyncing, kStored, kFailed };
  struct Block {
    // The block's sector encoding (sector_codec.h) as it fills: its bytes in the sectors' data
    // runs, the CRC slots written by the store when it is put, so a put sends (rados:) or
    // copies (dir:, dev:) it without encoding it again. Present until the block is durable
    // (kStored). Shared with the block's put in flight (StoreRequest::data_owner), and with
    // the store after a put that failed without an answer: reused only when the block's
    // reference is the last.
    std::shared_ptr<std::vector<char>> data;
    BlockState state = BlockState::kFilling;
    Status error;
  };
  std::vector<Block> blocks;
};

struct PendingRecord {
  uint64_t seq = 0;
  uint32_t chunk = 0;
  meta::Slice slice;               // object_bytes set when the object is sealed
  std::shared_ptr<LogObject> obj;  // null for kZero
  // A small file's whole content waiting in the pack writer: read like any record, never
  // committed by a flush (the pack writer commits it).
  bool frozen = false;
};

// What a small file's frozen content (FreezeLocked) was built from: the committed list of
// chunk 0 it was read over (nullopt when that list changed while it was read), and the ranges
// of chunk 0 (pos, len; ascending, merged) that this mount's records replaced by it covered:
// its own writes, punched and zeroed ranges. The pack's commit replaces chunk 0 by the entry
// only while the metadata still holds `committed`; otherwise another mount committed to the
// file meanwhile, and the entry is added over `written` alone, so bytes this mount did not
// write keep the other mount's data.
struct FrozenBase {
  std::optional<std::vector<meta::Slice>> committed;
  std::vector<std::pair<uint32_t, uint32_t>> written;
};

class InodeDevice final : public io_internal::QueuedDevice {
 public:
  class Owner {
   public:
    virtual ~Owner() = default;
    virtual Result<meta::SliceId> NewSliceId() = 0;
    // Commits the records (in order) and the file's attributes in one transaction. kInodeFreed:
    // the inode is gone (its last unlink freed it after these writes were taken for writeback);
    // nothing was committed, and no file can ever read what the records name.
    enum class CommitOutcome { kCommitted, kInodeFreed };
    virtual Result<CommitOutcome> CommitRecords(std::span<const PendingRecord> records) = 0;
    // A flush found a frozen record: make the pack writer commit it now, and wait.
    virtual Status WaitPacked() = 0;
    // Asked by a flush with data pending, before it seals anything: the file's size when the
    // file should be written as one pack entry instead (small), else 0.
    virtual uint64_t PackSize() const = 0;
    // The flush froze the file's whole content (FreezeLocked): hand it to the packs.
    virtual Status PackContent(const std::vector<char>& content, FrozenBase base) = 0;
  };

  InodeDevice(Owner* owner, const DataContext* ctx, InodeId ino, uint64_t capacity_bytes);
  ~InodeDevice() override;

  // Loads the list of the file's chunks, or takes `chunks` when the caller read it in the
  // transaction that read the inode (null: one read transaction here). Called once before use.
  Status Init(const std::vector<uint32_t>* chunks = nullptr);

  std::string name() const override { return name_; }
  uint32_t logical_block_bytes() const override { return 4096; }
  uint64_t size_bytes() const override { return capacity_.load(std::memory_order_acquire); }
  bool supports_trim() const override { return true; }
  void SetCapacity(uint64_t bytes) { capacity_.store(bytes, std::memory_order_release); }

  // The file content [pos, pos + len) as this device sees it (committed + pending). A stored
  // object a cached committed list names but the store no longer has (another mount rewrote
  // the chunk and the deletion's grace period has passed) makes it reload the lists and read
  // again. REQUIRES: len > 0.
  Status ReadRange(uint64_t pos, uint64_t len, char* dst);
  // Flush as the cache's Fsync does it (see the header comment).
  Status FlushAndCommit();
  // Cuts pending records at `size` (a truncate); objects nothing names any more are deleted.
  // A pack entry in flight lands (or fails) first. then, if given, runs before flush_mu_ is
  // released: no flush commits or packs in between.
  void CutPending(uint64_t size, const std::function<void()>& then = {});
  // A pending kZero record over [pos, pos + len) (punch hole, zero range).
  void AddZero(uint64_t pos, uint64_t len);
  // Drops every pending record and deletes the objects they wrote (the file is gone).
  void DiscardPending();
  bool HasPending() const;

  // Replaces the pending records older than `boundary` (the seq of the next record when the
  // content was read) by one frozen record holding `content` (a small file handed to the pack
  // writer); the objects the replaced records wrote are returned for deletion. Records added
  // while the content was read (a write-back, a punched or zeroed range: they take mu_, not
  // flush_mu_) stay after it, newer, so they still win; one the content already holds is the
  // same bytes again.
  // Returns the ranges the replaced records covered (FrozenBase::written).
  std::vector<std::pair<uint32_t, uint32_t>> FreezeLocked(
      const std::vector<char>& content, uint64_t boundary,
      std::vector<std::shared_ptr<LogObject>>* orphans);  // REQUIRES: flush_mu_
  // The pack writer committed the frozen record (chunk 0 now holds its kPacked slice).
  void Packed();
  // The pack failed: the frozen content goes back to being an ordinary pending write.
  Status UnfreezeAfterFailedPack();

  // The committed list of a chunk changed in the metadata (truncate, compaction, packing):
  // the next read loads it again. (Never replaced in place: a commit of this device racing
  // the caller could append to it in between.)
  void InvalidateChunk(uint32_t chunk);
  // Forgets every cached committed list and reloads the list of the file's chunks (another
  // mount changed the file, maybe in chunks this device never knew of).
  Status DropCommittedCache();
  // Chunks that have (or may have) slices, ascending.
  std::vector<uint32_t> KnownChunks() const;
  // The committed slice list of a chunk (loading it if needed).
  Result<std::vector<meta::Slice>> CommittedChunk(uint32_t chunk);
  // The extents [start, end) of a chunk that hold data (committed and pending; kZero and
  // holes excluded), ascending and merged.
  Result<std::vector<std::pair<uint32_t, uint32_t>>> DataExtents(uint32_t chunk);

 protected:
  Status Execute(const io_internal::MergedRequest& m, const iovec* iov) override;
  io_internal::DeviceGeometry geometry() const override;

 private:
  // An object range whose bytes go to folios of at least this size on average is read in
  // place, a get per folio; one that goes to several smaller folios is one get into a block
  // buffer, copied out (ReadRangeOnce).
  static constexpr uint64_t kInPlaceReadMinBytes = 1ull << 20;
  // A read that finds an object of a cached committed list gone reloads the lists and reads
  // again, this many times in all (ReadRange).
  static constexpr int kReadReloadsMax = 3;
  class ReadDst;
  Status ReadRange(uint64_t pos, uint64_t len, const ReadDst& dst);
  Status ReadRangeOnce(uint64_t pos, uint64_t len, const ReadDst& dst);
  struct ChunkCache {
    bool loaded = false;
    uint64_t load_ns = 0;
    uint64_t version = 0;  // bumped by every change made here
    std::vector<meta::Slice> slices;
  };
  struct PutCtx;
  struct SyncCtx;
  // A block put with PutSync::kDeferred that completed: waiting for a sync.
  struct WrittenBlock {
    std::shared_ptr<LogObject> obj;
    uint32_t block = 0;
    store::ObjectKey key;
  };
  struct PutItem {
    std::shared_ptr<LogObject> obj;
    uint32_t block = 0;
    store::ObjectKey key;
    char* encoding = nullptr;
    std::shared_ptr<std::vector<char>> owner;  // of encoding
  };
  using PutList = std::vector<PutItem>;

  Status Write(uint64_t pos, const char* src, uint64_t len);
  Status Trim(uint64_t pos, uint64_t len);
  Status EnsureLoaded(uint32_t chunk);
  // EnsureLoaded, then *lock holds mu_ with the chunk still loaded. Between a load and the lock
  // a commit can land (a pack entry's Packed(), a flush, InvalidateChunk): it takes its records
  // out of pending_ and marks the chunk unloaded, so slices read without this check would hold
  // neither the old records nor the committed ones (a read of the file's previous content).
  Status LockLoaded(uint32_t chunk, std::unique_lock<std::mutex>* lock);
  // Appends len bytes of a write at file position pos to the log and returns len, or fewer
  // when a new object is due and *id is empty (the caller takes an id without mu_ and calls
  // again for the rest); a new object consumes *id. REQUIRES: mu_.
  uint64_t AppendLocked(uint64_t pos, const char* src, uint64_t len,
                        std::optional<meta::SliceId>* id, PutList* puts);
  void SealLocked(PutList* puts);
  PutItem MakePut(const std::shared_ptr<LogObject>& obj, uint32_t b) const;  // REQUIRES: mu_
  void SubmitPuts(const PutList& puts);
  static void OnPutDone(store::StoreRequest* req);
  void WaitPutsBelow(uint32_t limit);
  // Moves every written block into a new sync request (null when none). REQUIRES: mu_.
  std::unique_ptr<SyncCtx> TakeWrittenLocked();
  // A background sync when a batch of written blocks waits and none is in flight. REQUIRES: mu_.
  std::unique_ptr<SyncCtx> MaybeBackgroundSyncLocked();
  void SubmitSync(std::unique_ptr<SyncCtx> sync);  // without mu_ (completions take it)
  static void OnSyncDone(store::StoreRequest* req);
  // Until no put and no sync of this device is in flight.
  void WaitIoIdle();
  // Deletes the stored blocks of objects that no pending record names (never committed).
  void DeleteOrphans(const std::vector<std::shared_ptr<LogObject>>& candidates);
  bool OverlapsDataLocked(uint32_t chunk, uint32_t from, uint32_t to) const;

  Owner* const owner_;
  const DataContext* const ctx_;
  const InodeId ino_;
  const std::string name_;
  const uint64_t block_bytes_;
  const uint64_t refresh_ns_;
  const bool defer_sync_;               // the store DefersSync(): puts are kDeferred
  const uint64_t sync_batch_bytes_;     // FsOptions::store_sync_batch_bytes
  std::atomic<uint64_t> capacity_;

  std::mutex flush_mu_;
  mutable std::mutex mu_;
  std::condition_variable puts_cv_;
  std::map<uint32_t, ChunkCache> chunks_;     // GUARDED_BY(mu_)
  std::set<uint32_t> known_;                  // GUARDED_BY(mu_)
  std::vector<PendingRecord> pending_;        // GUARDED_BY(mu_)
  std::shared_ptr<LogObject> current_;        // GUARDED_BY(mu_)
  uint64_t next_seq_ = 1;                     // GUARDED_BY(mu_)
  uint32_t puts_in_flight_ = 0;               // GUARDED_BY(mu_)
  std::vector<WrittenBlock> written_;         // GUARDED_BY(mu_): blocks in kWritten
  uint64_t written_bytes_ = 0;                // GUARDED_BY(mu_): their bytes
  uint64_t syncing_bytes_ = 0;                // GUARDED_BY(mu_): bytes in kSyncing
  uint32_t syncs_in_flight_ = 0;              // GUARDED_BY(mu_)
};

}  // namespace folio::fs
