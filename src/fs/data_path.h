// DataPath: the file data of one mount: the table of FileData (one per open or recently
// closed regular file), the pack writer for small files, background commits, compaction of
// chunks and packs, and the deletion queue.
//
// Page-cache integration (file_data.h, inode_device.h): every FileData owns an AddressSpace
// of the shared PageCache over its own InodeDevice. The cache serves reads and absorbs writes;
// its misses become InodeDevice reads, which resolve the chunk's slice list (newest wins,
// holes read zeros) into ranged store gets; its writeback becomes InodeDevice writes, which
// append to the inode's current stored slice (a log: contiguous writes merge into one record,
// every write lands in one object of up to 64 MiB put block by block); the device's Flush
// (AddressSpace::Fsync) puts the last block, waits until every block is durable and then
// commits all new slice records and the file's size and times in ONE metadata transaction. A
// crash therefore leaves at most blocks nobody references.
//
// Lifetime of a FileData: created by the first open; after the last close it is synced in the
// background (a small file goes to the pack writer) and then kept, clean, in an LRU of closed
// files (so a reopen finds its cached pages) until more than FsOptions::closed_files_cached
// are closed.
// A file unlinked while open is freed at its last close (its FileData discarded).
//
// Deletion: the queue (meta) holds kInode items (freed here: chunks emptied, references
// dropped, inode removed, all in one transaction that also removes the item) and kSlice items
// (objects whose references reached 0; deleted from the store once their grace period has
// passed, then removed from the queue). A crash between the store deletes and the removal
// only repeats the deletes.
//
// Thread safety: every method is thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/page_range_set.h"
#include "folio/page_cache.h"
#include "fs/block_buffer_pool.h"
#include "fs/file_system.h"
#include "fs/fs_internal.h"

namespace folio::fs {

class DataPath;
class FileData;
class PackCommitter;

// Compaction (compaction.cc) keeps naming a stored slice instead of copying its bytes when
// the chunk shows at least a block and at least half of it, in at most kKeptSegmentsMax
// pieces: a chunk overwritten by large writes is compacted without reading or writing data.
inline constexpr uint32_t kKeptSegmentsMax = 8;
struct KeptCandidate {
  uint64_t visible_bytes = 0;  // of the slice, in the chunk's resolved view
  uint32_t segments = 0;       // the pieces those bytes are in
};
bool KeepsSlice(const meta::Slice& s, const KeptCandidate& c, uint64_t block_bytes);

// The marks DataPath::MarkSustainedIfOpen makes inside one write transaction (unlink, rename
// over a file, FreeInode): those of runs of fn that did not commit (fn ran again, or the call
// failed) are taken back, so a failed unlink of an open file leaves a file whose last close
// commits its data, not one whose last close discards it and frees a linked inode. Counted
// per mark, so a failed unlink never takes back a mark another, committed one made.
class SustainMarks {
 public:
  // Runs fn as one kWrite transaction of `meta`, each run with the marks it may add.
  static Status Transact(meta::MetaEngine* meta, DataPath* data, std::string_view op,
                         const std::function<Status(meta::Txn&, SustainMarks&)>& fn);

  void Add(std::shared_ptr<FileData> data) { current_.push_back(std::move(data)); }

 private:
  void NewAttempt() {  // at the start of every run of fn
    undo_.insert(undo_.end(), current_.begin(), current_.end());
    current_.clear();
  }

  std::vector<std::shared_ptr<FileData>> undo_;     // marks of runs that did not commit
  std::vector<std::shared_ptr<FileData>> current_;  // marks of the latest run
};

struct FsCounters;

// What the data path needs of the mount.
struct DataContext {
  meta::MetaEngine* meta = nullptr;
  store::BlockStore* store = nullptr;
  PageCache* cache = nullptr;
  meta::FormatRecord format;
  meta::SessionId session{0};
  FsOptions options;
  FsCounters* counters = nullptr;
  // Spare write-log block buffers, shared by the mount's InodeDevices (null: none kept).
  std::shared_ptr<BlockBufferPool> block_buffers;
};

class DataPath {
 public:
  explicit DataPath(const DataContext& ctx);
  ~DataPath();
  DataPath(const DataPath&) = delete;
  DataPath& operator=(const DataPath&) = delete;

  // Starts the flusher and pack threads (options.background).
  void Start();
  const DataContext& ctx() const { return ctx_; }

  // Opens the data of a regular file for one more handle, creating its FileData or reusing a
  // cached one; *keep_cache is true when nobody else changed the file since this mount last
  // saw it (the kernel may keep its cached pages): for a cached FileData, when Revalidate finds
  // no other mount's change; for a new one, while this mount is the volume's only writer
  // (every change of the file went through this mount, so through the kernel, which keeps its
  // pages in step: a write, truncate, punched hole or copy into the file updates or drops
  // them). *seen is the metadata's inode as the caller read it; a newer read replaces it
  // (FileData::Revalidate). `chunks`: the file's chunk list
  // read in the same transaction as *seen, or null (a new FileData then reads it).
  Result<std::shared_ptr<FileData>> Open(meta::Inode* seen, const FolioPolicy& policy,
                                         bool* keep_cache,
                                         const std::vector<uint32_t>* chunks = nullptr);
  // The last close of one handle.
  Status Close(const std::shared_ptr<FileData>& data);
  std::shared_ptr<FileData> Find(InodeId ino) const;
  // No FileData of ino, or one with no handle and nothing uncommitted.
  bool IdleOrAbsent(InodeId ino) const;
  // Whether `data` has a handle open on this mount.
  bool HasHandles(const FileData& data) const;

  // Whether a handle of ino is open on this mount; if so, marks its FileData sustained so its
  // last close frees the inode, and records the mark in `marks`. Unlink calls this inside its
  // transaction: the mark and the open count change under one lock, so a close racing the
  // unlink either sees the mark or made the unlink see no handle. The mark is pending until
  // the transaction returns (SettleSustainMarks): a last close meanwhile waits for it, so it
  // never frees a file whose unlink then failed.
  bool MarkSustainedIfOpen(InodeId ino, SustainMarks& marks);
  // The end of a marking transaction: the marks in `kept` (the run that committed) hold, those
  // in `undone` are taken back; a last close waiting for them goes on.
  void SettleSustainMarks(const std::vector<std::shared_ptr<FileData>>& kept,
                          const std::vector<std::shared_ptr<FileData>>& undone);
  // Applies this mount's uncommitted size / times / mode of ino to *inode (no-op if none).
  void Overlay(meta::Inode* inode) const;
  // Overlay of every regular file of `inodes`, with one look at the open files (readdirplus).
  void OverlayAll(std::span<meta::Inode> inodes) const;
  // FileData::AddWrittenPages of ino's FileData, if this mount has one.
  void AddWrittenPages(InodeId ino, cache::PageRangeSet* pages) const;
  // The inode lost its last link: drop a cached FileData of it that no handle holds.
  void ForgetIfClosed(InodeId ino);
  // truncate(2) by path or handle: through the file's FileData (opened for the call if needed).
  Status Truncate(const Cred& cred, const meta::Inode& inode, uint64_t size);

  // Commits every file's dirty data and the open pack (sync(2)). Durable on return.
  Status SyncAll();
  // SyncAll, stops the threads, drops every FileData. REQUIRES: no handle open any more.
  Status Shutdown();
  // Background work: commits of files dirty for longer than sync_interval_ms, the close
  // queue, compaction, pack rewriting, and the deletion queue.
  Status Maintenance();

  // Another mount cleaned this mount's session (a pause past the session timeout), so it may
  // have mounted the volume and written: from now on a new FileData never keeps the kernel's
  // pages (Open).
  void LoseSoleWriter() { sole_writer_.store(false, std::memory_order_release); }
  // Shared mounts: writes the records of the files open here again, after another mount
  // cleaned this session as dead (SessionKeeper::Heartbeat's DataLoss). A file that mount
  // freed meanwhile stays gone (its reads fail).
  Status RestoreOpenRecords();
  // Frees an inode whose last link and last open are gone (the kInode item `key`, or 0), in
  // one transaction. NotFound when it is already gone.
  Status FreeInode(InodeId ino, uint64_t key);
  // Processes the due items of the deletion queue. Returns the first error.
  Status RunDeletions(int64_t now_ns);
  // What this mount appended to a chunk since its last compaction (FsOptions::compact_*).
  struct Appended {
    uint64_t records = 0;
    uint64_t small_bytes = 0;  // lengths of the records shorter than a block
    uint64_t large_bytes = 0;  // lengths of the others, since the chunk was last looked at
    // Set when a look left the chunk: the small bytes that make the rewrite worth it
    // (compact_write_amp), and the large bytes that could make most of what the chunk
    // references shadowed. 0: not looked at yet.
    uint64_t need_small = 0;
    uint64_t need_large = 0;
    uint64_t last_append_ns = 0;  // MonotonicNowNs() of the newest commit that appended
  };
  // A commit appended records to a chunk: a candidate for compaction (see FsOptions).
  void NoteSlices(InodeId ino, uint32_t chunk, const Appended& added);
  // Compacts the noted chunks (compaction.cc). Returns the first error.
  Status CompactNoted();
  // Rewrites packs whose live fraction fell below options.pack_live_min.
  Status RewritePacks();

  PackCommitter* packs() const { return packs_.get(); }
  uint64_t open_files() const;
  uint64_t cached_inodes() const;
  // Closed files not settled yet (FsStats::unsettled_files).
  uint64_t unsettled_files() const;
  Result<meta::SliceId> NewSliceId();

 private:
  void FlusherLoop();
  // Syncs a closed file and moves it to the LRU when it is clean. A closed file whose only
  // uncommitted change is the atime of its reads waits in atimes_ for CommitAtimes instead
  // (unshared mounts).
  void SettleClosed(const std::shared_ptr<FileData>& data);
  // Commits the atimes waiting in atimes_, up to kAtimeBatch files per transaction (a file that
  // has more than its atime to commit by then is left to its own commit), and settles the
  // files. Maintenance runs it every pass (so an atime waits about a second), SyncAll first.
  Status CommitAtimes();
  static constexpr size_t kAtimeBatch = 256;
  void EvictLocked(std::vector<std::shared_ptr<FileData>>* out);
  Status ReleaseSustained(const std::shared_ptr<FileData>& data);
  // Shared mounts (FsOptions::shared; no-ops otherwise). RecordOpen: a handle of `data` is
  // open here, so the sustained table must hold (this session, its inode): added unless it
  // does already. ENOENT when the inode is gone (freed by another mount). ReleaseOpenRecord:
  // `data` has no handle here any more: the record goes, and an inode another mount unlinked
  // meanwhile that no other session holds is queued and freed, as at a last close.
  // Context: take data->record_mu, then transactions; not under mu_.
  Status RecordOpen(const std::shared_ptr<FileData>& data);
  Status ReleaseOpenRecord(const std::shared_ptr<FileData>& data);
  Status CompactChunk(InodeId ino, uint32_t chunk, const Appended& appended);

  const DataContext ctx_;
  std::unique_ptr<PackCommitter> packs_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable marks_cv_;  // a FileData's pending_marks fell (SettleSustainMarks)
  std::unordered_map<uint64_t, std::shared_ptr<FileData>> files_;  // GUARDED_BY(mu_)
  std::list<uint64_t> lru_;         // GUARDED_BY(mu_): closed, clean files, oldest first
  // A read-write unshared mount until LoseSoleWriter: the volume's only writer.
  std::atomic<bool> sole_writer_;
  std::deque<std::shared_ptr<FileData>> closing_;  // GUARDED_BY(mu_): to sync after close
  // Closed files with only a read's atime to commit (SettleClosed), by inode. GUARDED_BY(mu_).
  std::unordered_map<uint64_t, std::shared_ptr<FileData>> atimes_;
  std::set<std::pair<uint64_t, uint32_t>> compact_;  // GUARDED_BY(mu_): (ino, chunk)
  std::map<std::pair<uint64_t, uint32_t>, Appended> appended_;  // GUARDED_BY(mu_)
  bool stop_ = false;               // GUARDED_BY(mu_)
  std::thread flusher_;
  // Maintenance runs on one thread at a time (the background loop, or a test).
  uint64_t passes_ = 0;             // maintenance passes (pack rewriting every 60th)
  struct RewriteScan {
    uint64_t ref_cursor = 0;        // slice id the next reference scan starts after
    uint64_t inode_cursor = 0;      // inode the next inode scan starts after
    std::set<uint64_t> low;         // packs being emptied
  } rewrite_;

  std::mutex ids_mu_;
  uint64_t next_slice_ = 0;   // GUARDED_BY(ids_mu_)
  uint64_t slice_limit_ = 0;  // GUARDED_BY(ids_mu_)
};

}  // namespace folio::fs
