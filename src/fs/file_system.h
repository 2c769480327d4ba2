// FileSystem: the POSIX core of Folio FS, over a MetaEngine (meta/), a BlockStore (fs/store/)
// and the shared PageCache (cache/).
//
// Every namespace operation is one MetaEngine transaction (lookup, mkdir, rename ...): the
// engine makes it atomic and serializable, this class holds the POSIX rules (permissions as
// the kernel checks them, link counts, the rename cycle check, which timestamps change). File
// data lives in the page cache while a file is open (one address space per inode over an
// InodeDevice that turns cache writeback into slices and cache misses into store reads; see
// file_data.h), and in the store as immutable blocks named by committed slices.
//
// Error codes: every Status carries the errno the system call would fail with (ToErrno()).
//
// Sessions: a mounted FileSystem is a session in the metadata (heartbeat every few seconds).
// Files unlinked while open are kept (the sustained table) until their last close; flock and
// POSIX locks live in the metadata with the session as part of the owner, so another mount
// sees them; a dead session's locks and sustained files are cleaned by the next mount.
//
// Consistency (one mount): every operation sees every earlier operation of this mount. Data
// written is visible to reads at once (the page cache); it is durable after Fsync, and
// committed to the metadata (visible to another mount, surviving a crash) after Fsync, after
// the last close's background commit, or within sync_interval_ms.
//
// Consistency (several mounts, FsOptions::shared; docs/fs.md "Several mounts on one volume"):
// namespace operations and attributes are every mount's at once (no caches here); a close of a
// writable handle commits the file's data, and an open on another mount after it sees the data
// and attributes (close-to-open); a file open on any mount outlives an unlink elsewhere until
// its last close there; locks conflict across mounts.
//
// Thread safety: every method is thread-safe; a FUSE server calls them from all its workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "folio/page_cache.h"
#include "fs/fs_types.h"
#include "meta/cached_engine.h"
#include "meta/meta_engine.h"

namespace folio::store {
class BlockStore;
}  // namespace folio::store

namespace folio::fs {

class DataPath;
class SustainMarks;
class SessionKeeper;
struct FsCounters;
struct OpenFile;
struct DirHandle;

enum class AtimeMode { kRelatime, kNoatime, kStrict };

struct FsOptions {
  std::string mountpoint;     // for the session record
  bool read_only = false;     // every change is EROFS
  FolioPolicy policy;         // the default folio policy of files (xattr user.folio.policy wins)
  AtimeMode atime = AtimeMode::kRelatime;
  // Background threads: session heartbeat, periodic commit of dirty files, compaction, the
  // deletion queue. Tests turn them off and call RunMaintenance() themselves.
  bool background = true;
  uint64_t sync_interval_ms = 5000;     // dirty data of open files is committed this often
  // With an engine whose commits are not synced one by one (SQLite sqlite_synchronous =
  // "normal", the mount's -o meta_durability=fsync): the metadata is made durable
  // (MetaEngine::Sync) at every fsync, fsyncdir, syncfs and unmount, before the deletion
  // queue deletes objects, and at least this often (ext4's commit=5 default).
  uint64_t meta_sync_interval_ms = 5000;
  uint64_t maintenance_interval_ms = 1000;
  // Several mounts on one volume (-o shared; docs/fs.md "Several mounts on one volume"). A
  // mount without it is refused while another live session has the volume mounted read-write,
  // and refuses others while it has. Shared mounts may run together, read-write, on any
  // number of hosts with a server engine (Redis, PostgreSQL) and a store they all reach (dir:
  // on a file system they share, rados:); with SQLite only on the host of the database file;
  // never on a dev: store (one process owns its log). A shared mount records in the metadata
  // every file it has open (the sustained table), so an unlink on another mount keeps the
  // file until its last close here.
  bool shared = false;
  // A read-write mount without `shared` answers lookups and attribute reads from a cache of
  // inode and entry records when it can (meta/cached_engine.h: it is the volume's only writer,
  // so its own writes keep the cache exact); shared and read-only mounts never cache.
  bool meta_cache = true;
  // Closed, clean files whose FileData (and so their cached pages in Folio's cache) the mount
  // keeps for a reopen, least recently closed evicted first; 0 (the default): as many as a
  // quarter of the page cache's capacity pays for in heap (ClosedFilesFor), at least 4096.
  // Each costs about kClosedFileHeapBytes of heap besides its pages. That quarter bounds the
  // kept files' own heap, not the mount's RSS: a burst of 10000 small files grows it by ~200
  // MB whatever the limit (pack building, I/O buffers, freed memory the allocator keeps;
  // docs/fs.md "Open files"). With a fixed 4096, 10000
  // small files written and read back in order (`folio fs bench`'s smallfiles phases) missed
  // on nearly every packed one: each read's last, partial page went to the store, although
  // the 512 MiB cache had room for all of them. An evicted file's pages in the kernel's page
  // cache stay valid on an unshared read-write mount (DataPath::Open).
  size_t closed_files_cached = 0;
  // Compaction of a chunk (rewriting what it shows as one slice) waits for this mount to have
  // appended compact_slices records to it since it was last compacted, and then for the bytes
  // of those shorter than a block, times compact_write_amp, to reach the bytes the rewrite
  // writes (what the chunk shows), for most of what the list references to be shadowed, or for
  // compact_slices_max records: random 4 KiB writes over a 64 MiB chunk are compacted after
  // 8 MiB of them (at most 8 bytes written per byte appended) instead of after every 64 (1024
  // bytes per byte appended), while a small file's appends still are after 64.
  uint32_t compact_slices = 64;
  uint32_t compact_slices_max = 4096;
  uint32_t compact_write_amp = 8;
  // A chunk this mount appended records to less than compact_quiet_ms ago is left for a later
  // pass (unless it has compact_slices_max records): while a file is being rewritten, its next
  // writes may shadow what a compaction would copy, and the compaction's reads and puts would
  // compete with them. 0: compact at the first pass.
  uint32_t compact_quiet_ms = 2000;
  // Packs whose live fraction is below this are rewritten.
  double pack_live_min = 0.5;
  // With a store that defers durability (BlockStore::DefersSync(): dir:), a file's blocks are
  // put without an fsync each and made durable together: by the flush that commits them, and
  // in the background once this many bytes of a file's blocks wait (a block keeps its buffer
  // until it is durable, so a failed sync puts it again: this bounds those buffers).
  uint64_t store_sync_batch_bytes = 16ull << 20;
  // The largest readahead window of a file in Folio's page cache (capped at an eighth of the
  // cache; 0: the cache's PageCacheOptions::readahead_max_bytes, 2 MiB). A window of large
  // folios is read as one ranged get per folio, those of one merged request (at most a chunk,
  // InodeDevice) in flight together: 16 MiB is one batch of eight 2 MiB gets. On RADOS
  // (bluestore) that took 1 GiB read in 1 MiB calls from a median of 0.48x `rados bench seq`
  // (2 MiB, 5 runs) to 0.80x (8 runs) with 8 MiB requests, and to 0.86x (4 runs) with one
  // batch per window; 32 MiB was slower (0.63x). docs/fs.md "Readahead", "One batch per window".
  uint64_t readahead_bytes = 16ull << 20;
};

// The heap one cached closed file costs besides its pages: a mount's RSS grew 37 MiB while 4000
// one-byte files were created, written and closed (9.3 KiB each: the FileData, its InodeDevice
// and address space, the page index's directory, 2 KiB for a file under 256 MiB, and its first
// segment, ~200 bytes for a file of up to 64 KiB, and per-thread request queues).
inline constexpr uint64_t kClosedFileHeapBytes = 10 << 10;
// FsOptions::closed_files_cached when it is 0: the files whose heap makes a quarter of a page
// cache of cache_bytes, at least 4096 (13107 for 512 MiB).
size_t ClosedFilesFor(uint64_t cache_bytes);

// Counters of the core, for .stats.
struct FsStats {
  uint64_t open_files = 0;
  uint64_t cached_inodes = 0;
  // Closed files whose data or attributes are not committed yet (being settled, waiting for a
  // pack or an atime batch): 0 once everything closed is in the metadata.
  uint64_t unsettled_files = 0;
  uint64_t commits = 0;             // slice commit transactions
  uint64_t slices_committed = 0;
  uint64_t atime_files = 0;         // closed files whose read atime went in a batch (below)
  uint64_t atime_commits = 0;       // transactions of those batches (DataPath::CommitAtimes)
  uint64_t packed_files = 0;        // files written as one pack entry
  uint64_t packs_written = 0;
  uint64_t pack_bytes = 0;
  uint64_t packs_rewritten = 0;
  uint64_t chunks_compacted = 0;
  uint64_t compaction_bytes = 0;
  uint64_t compactions_deferred = 0;  // looked at, left for more appends (compact_write_amp)
  uint64_t compaction_kept_bytes = 0;  // bytes compacted by keeping the slices that held them
  uint64_t compactions_hot = 0;  // looks at a chunk left because it was written to lately
  uint64_t deletions_done = 0;      // store objects deleted from the deletion queue
  uint64_t deletions_deferred = 0;  // queue items still in their grace period at the last pass
  uint64_t inodes_freed = 0;
  uint64_t checksum_failures = 0;
  uint64_t read_bytes = 0;          // read() bytes served
  uint64_t write_bytes = 0;
  uint64_t store_get_requests = 0;
  uint64_t store_get_bytes = 0;
  uint64_t store_put_requests = 0;
  uint64_t store_put_bytes = 0;
  uint64_t store_delete_requests = 0;
};

class FileSystem {
 public:
  // Mounts a formatted volume: checks the format record, registers a session (refusing a
  // volume another live session has mounted read-write, unless both are options.shared),
  // cleans dead sessions, and starts the background threads.
  // REQUIRES: meta, store and cache outlive the FileSystem.
  // Errors: InvalidArgument for an unformatted volume (naming the URL and `folio fs format`),
  // NotSupported for a newer format version, Busy for a volume mounted elsewhere (naming the
  // host, pid and mount point), NotSupported for options.shared on a dev: store or on SQLite
  // with a live session of another host, IOError from the engine or the store.
  static Result<std::unique_ptr<FileSystem>> Mount(meta::MetaEngine* meta,
                                                   store::BlockStore* store, PageCache* cache,
                                                   const FsOptions& options);
  // Unmounts if Unmount() was not called (errors are logged to nowhere: call Unmount).
  ~FileSystem();
  FileSystem(const FileSystem&) = delete;
  FileSystem& operator=(const FileSystem&) = delete;

  // Commits every file's data, stops the background threads, frees what this session held
  // (sustained files, locks) and removes the session. Returns the first error.
  Status Unmount();
  // Commits the data of every open or recently closed file and makes all metadata durable
  // (sync(2), syncfs(2)).
  Status SyncAll();
  // Makes every metadata operation done so far durable (fsyncdir; also what Fsync does after
  // committing the file's data).
  Status SyncMetadata();
  // Test hook: a simulated crash. Stops the background threads and drops every FileData
  // without committing anything (uncommitted data is lost, objects already put stay as
  // garbage) and leaves the session record behind for the next mount to clean. After this the
  // object may only be destroyed.
  void CrashForTesting();
  // Test hook: write-log block buffers kept for reuse (BlockBufferPool::spares).
  size_t BlockBufferSparesForTesting() const;
  // One pass of the background work: heartbeat, dead sessions, commit of old dirty data,
  // compaction, pack rewriting and the deletion queue. Returns the first error.
  Status RunMaintenance();

  const meta::FormatRecord& format() const { return format_; }
  meta::SessionId session() const;
  meta::MetaEngine* meta() const { return meta_; }
  store::BlockStore* store() const { return store_; }
  PageCache* cache() const { return cache_; }
  const FsOptions& options() const { return options_; }

  // ---- Namespace ------------------------------------------------------------------------
  Result<Attr> Lookup(const Cred& cred, InodeId parent, std::string_view name);
  Result<Attr> GetAttr(InodeId ino);
  Result<Attr> SetAttr(const Cred& cred, InodeId ino, const SetAttrRequest& req);
  // mode: permission bits after the caller's umask (the kernel applies it).
  Result<Attr> Mknod(const Cred& cred, InodeId parent, std::string_view name, FileType type,
                     uint32_t mode, uint64_t rdev);
  Result<Attr> Mkdir(const Cred& cred, InodeId parent, std::string_view name, uint32_t mode);
  Result<Attr> Symlink(const Cred& cred, InodeId parent, std::string_view name,
                       std::string_view target);
  Result<Attr> Link(const Cred& cred, InodeId ino, InodeId new_parent, std::string_view new_name);
  Status Unlink(const Cred& cred, InodeId parent, std::string_view name);
  Status Rmdir(const Cred& cred, InodeId parent, std::string_view name);
  // flags: kRenameNoReplace, kRenameExchange.
  Status Rename(const Cred& cred, InodeId parent, std::string_view name, InodeId new_parent,
                std::string_view new_name, unsigned flags);
  Result<std::string> ReadLink(InodeId ino);
  // access(2): mask of kMay* bits (0 = existence).
  Status Access(const Cred& cred, InodeId ino, int mask);
  Result<fs::StatFs> StatFs();

  // ---- Files ----------------------------------------------------------------------------
  struct Opened {
    Attr attr;
    uint64_t fh = 0;
    // The file's data may be cached by the kernel from an earlier open: nothing changed it
    // since (FOPEN_KEEP_CACHE).
    bool keep_cache = false;
  };
  // open(2) flags: O_ACCMODE, O_CREAT (Create only), O_EXCL, O_TRUNC, O_APPEND.
  Result<Opened> Create(const Cred& cred, InodeId parent, std::string_view name, uint32_t mode,
                        int flags);
  Result<Opened> Open(const Cred& cred, InodeId ino, int flags);
  // Returns the bytes read: short only at end of file.
  Result<size_t> Read(uint64_t fh, uint64_t pos, std::span<char> out);
  // O_APPEND handles write at the end of file whatever pos says (but see
  // SetKernelWritebackCache).
  Result<size_t> Write(uint64_t fh, uint64_t pos, std::span<const char> in);
  // The kernel caches writes (FUSE writeback_cache, as negotiated when the mount starts): it
  // places O_APPEND writes itself (the offsets it sends are those of its dirty pages) and
  // fills its page cache through any handle of the file, write-only ones included. Handles
  // opened after this call then write at the offset given even with O_APPEND, and read even
  // when opened write-only (the kernel refuses a user's read on those before it gets here).
  void SetKernelWritebackCache(bool on) { kernel_writeback_cache_ = on; }
  // A write of the kernel's page cache (the writeback of a shared writable mapping, which
  // goes through whichever writable handle of the file the kernel picks): at pos, even when
  // that handle was opened with O_APPEND.
  Result<size_t> WriteCached(uint64_t fh, uint64_t pos, std::span<const char> in);
  // close(2) of one descriptor: releases the POSIX locks of lock_owner; reports a writeback
  // error this handle has not seen. On a shared mount, a writable handle's close commits the
  // file's data first (close-to-open: another mount's next open sees it).
  Status Flush(uint64_t fh, uint64_t lock_owner);
  // The last close of the handle: its flocks go, the data is committed in the background
  // (small files into a pack), a file unlinked while open is freed after its last close.
  Status Release(uint64_t fh);
  Status Fsync(uint64_t fh, bool datasync);
  // fallocate(2) mode bits: 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | KEEP_SIZE,
  // FALLOC_FL_ZERO_RANGE [| KEEP_SIZE]; others EOPNOTSUPP.
  Status Fallocate(uint64_t fh, int mode, uint64_t pos, uint64_t len);
  // SEEK_DATA / SEEK_HOLE (ENXIO at or past the end of file).
  Result<uint64_t> Lseek(uint64_t fh, uint64_t pos, Whence whence);
  // copy_file_range(2), through the page cache (1 MiB at a time). Returns the bytes copied.
  Result<uint64_t> CopyFileRange(uint64_t fh_in, uint64_t pos_in, uint64_t fh_out,
                                 uint64_t pos_out, uint64_t len);

  // ---- Directories ----------------------------------------------------------------------
  Result<uint64_t> OpenDir(const Cred& cred, InodeId ino);
  // Entries from `offset` (0 = the start; else an offset an earlier entry returned), at most
  // max_entries, "." and ".." first; with plus, each entry's attributes too. Bounded memory for
  // any directory size: the handle keeps only the last page's names.
  Result<std::vector<DirEntryOut>> ReadDir(uint64_t dh, uint64_t offset, size_t max_entries,
                                           bool plus);
  Status ReleaseDir(uint64_t dh);

  // ---- Extended attributes --------------------------------------------------------------
  // Namespaces user., trusted. (root only), security.; system.posix_acl_* are EOPNOTSUPP.
  // user.folio.policy holds a folio policy ("4k", "fixed:64K", "dynamic"), inherited by new
  // files and directories below a directory that has it.
  Result<std::string> GetXattr(const Cred& cred, InodeId ino, std::string_view name);
  Status SetXattr(const Cred& cred, InodeId ino, std::string_view name, std::string_view value,
                  int flags);
  Result<std::vector<std::string>> ListXattr(const Cred& cred, InodeId ino);
  Status RemoveXattr(const Cred& cred, InodeId ino, std::string_view name);

  // ---- Locks (owner: the kernel's lock owner of the open file) ----------------------------
  // flock(2): type kRead (LOCK_SH), kWrite (LOCK_EX), kUnlock. wait: block until granted or
  // interrupted() returns true (EINTR). A conflict without wait: EAGAIN (EWOULDBLOCK).
  Status Flock(uint64_t fh, uint64_t owner, meta::LockType type, bool wait,
               const std::function<bool()>& interrupted);
  // F_GETLK: the first conflicting lock, or one of type kUnlock.
  Result<PosixLock> GetLk(uint64_t fh, uint64_t owner, const PosixLock& lock);
  // F_SETLK / F_SETLKW.
  Status SetLk(uint64_t fh, uint64_t owner, const PosixLock& lock, bool wait,
               const std::function<bool()>& interrupted);

  // ---- Statistics -----------------------------------------------------------------------
  FsStats Stats() const;
  // The folio policy a file uses (for .stats and tests).
  Result<FolioPolicy> PolicyOf(InodeId ino);
  nlohmann::ordered_json StatsJson() const;

 private:
  FileSystem(std::unique_ptr<meta::CachedEngine> cached, meta::MetaEngine* meta,
             store::BlockStore* store, PageCache* cache, const FsOptions& options,
             meta::FormatRecord format);

  struct Background;

  Result<InodeId> NewInodeId();
  void BackgroundLoop();
  // `policy`: the file's folio policy when the caller read it in its own transaction (a
  // create, an open); nullopt: PolicyOf looks it up. `chunks`: the file's chunk list read in
  // that transaction too (empty for a new file), so a FileData made for the open needs no
  // transaction of its own; null: it reads the list.
  Result<Opened> OpenInode(const Cred& cred, const meta::Inode& inode, int flags,
                           bool check_access, std::optional<FolioPolicy> policy,
                           const std::vector<uint32_t>* chunks = nullptr);
  // The policy the value of a file's policy xattr names (the mount's when none or invalid).
  FolioPolicy PolicyFromXattr(const std::optional<std::string>& value) const;
  // close(2) drops the caller's POSIX locks on the file; the last close its flock.
  Status ReleasePosixLocks(const OpenFile& f, uint64_t owner);
  Status ReleaseFlock(OpenFile& f);
  // Creates an inode of `proto`'s type named `name` in parent (mknod, mkdir, symlink, create).
  // `policy` (may be null): set to the policy xattr the new inode inherited (none: nullopt)
  // when it was created, left alone when the name existed.
  Result<Attr> CreateNode(const Cred& cred, InodeId parent, std::string_view name,
                          meta::Inode proto, std::string_view symlink_target, bool exclusive,
                          bool* existed, std::optional<std::string>* policy = nullptr);
  // Drops one link of `victim` (unlink, rmdir, rename over it) inside txn. *freed_file (may
  // be null) is set when a regular file without data was freed in txn itself. A last link of
  // a file open here marks it sustained; `marks` (null only for directories) records that so
  // SustainMarks::Transact takes it back when the transaction does not commit.
  Status DropLink(meta::Txn& txn, meta::Inode* victim, int64_t now_ns,
                  bool* freed_file = nullptr, SustainMarks* marks = nullptr);
  // The inode's attributes with this mount's uncommitted changes (size, times) applied
  // (overlay = false: the caller applied them, DataPath::OverlayAll).
  Attr AttrOf(const meta::Inode& inode, bool overlay = true) const;
  // st_blocks of a regular file that may have holes: the 4 KiB pages below its size that its
  // committed slices or this mount's writes hold data in, in 512-byte units.
  uint64_t SparseBlocks512(const meta::Inode& inode) const;
  Status CheckWritable() const;
  Result<std::shared_ptr<OpenFile>> HandleOf(uint64_t fh) const;
  // HandleOf for I/O and new locks: EIO on a handle whose locks were lost. A handle that took
  // locks beats the session first when the last beat is older than half the session timeout
  // (this mount may have been paused), so a loss is seen before the I/O, not after.
  Result<std::shared_ptr<OpenFile>> IoHandleOf(uint64_t fh);
  // Beats the session. On DataLoss (another mount cleaned it as dead) it is registered again,
  // the open files are recorded again, and every handle that took locks is marked as having
  // lost them.
  Status BeatSession();
  // Write (cached: WriteCached).
  Result<size_t> WriteAt(uint64_t fh, uint64_t pos, std::span<const char> in, bool cached);

  // The record cache in front of the engine (FsOptions::meta_cache; null without it). Declared
  // first: destroyed after everything that uses meta_.
  const std::unique_ptr<meta::CachedEngine> cached_meta_;
  meta::MetaEngine* const meta_;  // cached_meta_ when there is one, else the mount's engine
  store::BlockStore* const store_;
  PageCache* const cache_;
  const FsOptions options_;
  const meta::FormatRecord format_;

  std::unique_ptr<FsCounters> counters_;
  std::unique_ptr<Background> bg_;
  std::unique_ptr<SessionKeeper> session_;
  std::unique_ptr<DataPath> data_;

  std::mutex ids_mu_;
  uint64_t next_inode_ = 0;   // GUARDED_BY(ids_mu_)
  uint64_t inode_limit_ = 0;  // GUARDED_BY(ids_mu_)

  mutable std::mutex handles_mu_;
  uint64_t next_fh_ = 1;  // GUARDED_BY(handles_mu_)
  std::unordered_map<uint64_t, std::shared_ptr<OpenFile>> files_;   // GUARDED_BY(handles_mu_)
  std::unordered_map<uint64_t, std::shared_ptr<DirHandle>> dirs_;   // GUARDED_BY(handles_mu_)

  std::mutex beat_mu_;                     // serializes BeatSession
  std::atomic<uint64_t> last_beat_ns_{0};  // monotonic time of the last beat that reached it
  std::atomic<bool> unmounted_{false};
  std::atomic<bool> kernel_writeback_cache_{false};
};

}  // namespace folio::fs
