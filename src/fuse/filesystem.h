// Filesystem: the FUSE-free interface a file system implements to be served over FUSE.
//
// The adapter (lowlevel_ops.cc, the only user of fuse_lowlevel.h) turns each kernel request
// into one call here and sends exactly one reply built from the result: a value, or the errno
// of the returned Status (Status::ToErrno()). Implementations never see a fuse_req_t, so they
// cannot reply twice or forget to reply, and they can be tested without a mount.
//
// Lookup counts (the kernel's references to inodes) are kept by the adapter: every successful
// Lookup reply (and every entry of a ReadDirPage with attributes, and Create, Mknod, Mkdir,
// Symlink, Link) adds one to the inode's count, Forget subtracts, and a Forget of more than was
// looked up aborts (a bug in the kernel protocol handling, never an operating error). Forget is
// passed on so a file system with dynamic inodes can free them when the count reaches zero.
//
// Who is asking: CallerContext() is the request's context (uid, gid, pid, umask, the lock
// owner) while the adapter runs a call; its supplementary groups are read only when asked
// (a /proc read). Outside an adapter call (tests) it is root's.
//
// The operations past the core set (namespace changes, directories, xattrs, locks, lseek,
// copy_file_range) have defaults that refuse them (EPERM for namespace changes, ENOSYS or
// EOPNOTSUPP otherwise), so a file system with a fixed namespace (the export) implements only
// the core.
//
// Thread safety: the adapter calls every method concurrently from its worker threads;
// implementations must be thread-safe.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cerrno>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "folio/status.h"

namespace folio::fuse {

// An inode number as the kernel knows it. 1 is the root directory.
enum class InodeId : uint64_t {};
inline constexpr InodeId kRootInode{1};

// What stat(2) shows for a node.
struct NodeAttr {
  InodeId ino{0};
  mode_t mode = 0;  // type and permission bits (S_IFREG | 0644)
  uint32_t nlink = 1;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size_bytes = 0;
  uint64_t rdev = 0;
  uint32_t blksize_bytes = 4096;
  uint64_t blocks_512 = 0;
  timespec atime{};
  timespec mtime{};
  timespec ctime{};
};

// The reply to a successful Lookup: the attributes and how long the kernel may cache them.
struct EntryReply {
  NodeAttr attr;
  double entry_timeout_s = 1.0;
  double attr_timeout_s = 1.0;
};

// The reply to a successful Open. `fh` comes back in every request on this open file.
struct OpenReply {
  uint64_t fh = 0;
  bool direct_io = false;   // FOPEN_DIRECT_IO: bypass the kernel page cache
  bool keep_cache = false;  // FOPEN_KEEP_CACHE: do not drop the kernel's cached pages
  bool nonseekable = false;
};

struct DirEntry {
  std::string name;
  InodeId ino{0};
  mode_t mode = 0;  // only the type bits matter
};

// One entry of a directory page: `offset` is where the listing resumes after it; `entry` is
// filled for readdirplus.
struct DirPageEntry {
  std::string name;
  InodeId ino{0};
  mode_t mode = 0;
  uint64_t offset = 0;
  EntryReply entry;
};

// The parts of a setattr request; `has_*` says which fields the caller wants changed.
struct SetAttrRequest {
  bool has_size = false;
  uint64_t size_bytes = 0;
  bool has_mode = false;
  mode_t mode = 0;
  bool has_owner = false;  // uid and/or gid
  bool has_uid = false;
  uint32_t uid = 0;
  bool has_gid = false;
  uint32_t gid = 0;
  bool has_times = false;  // atime and/or mtime
  bool has_atime = false;  // with atime_now: UTIME_NOW, else the value
  bool atime_now = false;
  timespec atime{};
  bool has_mtime = false;
  bool mtime_now = false;
  timespec mtime{};
  bool has_fh = false;     // through an open file (ftruncate, futimens)
  uint64_t fh = 0;
};

enum class SyncKind { kData, kDataAndMetadata };  // fdatasync, fsync

struct FsStatfs {
  uint32_t block_bytes = 4096;
  uint64_t blocks = 0;
  uint64_t blocks_free = 0;
  uint64_t files = 0;
  uint64_t files_free = 0;
  uint32_t name_max_bytes = 255;
};

// Facts about the kernel connection, given to Init once it is negotiated.
struct ConnectionInfo {
  uint32_t protocol_major = 0;
  uint32_t protocol_minor = 0;
  uint32_t max_write_bytes = 0;
  uint32_t max_readahead_bytes = 0;
  uint32_t max_background = 0;
  bool writeback_cache = false;  // the kernel caches writes (FUSE_CAP_WRITEBACK_CACHE)
};

// An fcntl(2) lock as the kernel describes it: l_type F_RDLCK / F_WRLCK / F_UNLCK, the
// inclusive range [start, end] (end UINT64_MAX: to the end of file), the owner's pid.
struct FileLock {
  short type = 0;
  uint64_t start = 0;
  uint64_t end = UINT64_MAX;
  uint32_t pid = 0;
};

// The context of the request being served (see the header comment).
struct RequestContext {
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t pid = 0;
  mode_t umask = 0;
  uint64_t lock_owner = 0;     // flush, release, locks
  bool flock_release = false;  // release: drop the owner's flock
  // write: the kernel writing back its page cache (FUSE_WRITE_CACHE: a shared writable mmap,
  // or every write with writeback_cache). The data goes at the offset sent, whatever flags
  // the handle it comes through was opened with (O_APPEND).
  bool writepage = false;
  // The caller's supplementary groups (read on first use); empty when unknown.
  std::vector<uint32_t> Groups() const;
  // Whether the kernel interrupted the request (a blocking lock gives up with EINTR).
  bool Interrupted() const;

  void* request = nullptr;  // the adapter's request handle (null outside the adapter)
};

// The context of the call being served on this thread.
const RequestContext& CallerContext();

class Filesystem {
 public:
  virtual ~Filesystem() = default;

  // Called once, from a worker thread, when the kernel connection is set up.
  virtual void Init(const ConnectionInfo& /*conn*/) {}

  // Returns the entry `name` in directory `parent` (NotFound: ENOENT).
  virtual Result<EntryReply> Lookup(InodeId parent, std::string_view name) = 0;
  // The kernel dropped `nlookup` references to ino; `remaining` is what the adapter still
  // counts after subtracting them.
  virtual void Forget(InodeId /*ino*/, uint64_t /*nlookup*/, uint64_t /*remaining*/) {}

  virtual Result<NodeAttr> GetAttr(InodeId ino) = 0;
  virtual Result<NodeAttr> SetAttr(InodeId ino, const SetAttrRequest& request) = 0;

  // `flags` are open(2)'s flags (O_ACCMODE, O_DIRECT, O_TRUNC, ...).
  virtual Result<OpenReply> Open(InodeId ino, int flags) = 0;
  // Returns the bytes read into out (short only at end of file).
  virtual Result<size_t> Read(InodeId ino, uint64_t fh, uint64_t pos, std::span<char> out) = 0;
  // Returns the bytes written (short only at the end of a fixed-size file).
  virtual Result<size_t> Write(InodeId ino, uint64_t fh, uint64_t pos,
                               std::span<const char> in) = 0;
  // Each close(2) of a descriptor of the open file (CallerContext().lock_owner is the
  // closer's POSIX lock owner). The result is close(2)'s.
  virtual Status Flush(InodeId ino, uint64_t fh) = 0;
  // The last close of the open file (its fh is not used again). The result is ignored by the
  // kernel: an implementation must not lose data here.
  virtual Status Release(InodeId ino, uint64_t fh) = 0;
  virtual Status Fsync(InodeId ino, uint64_t fh, SyncKind kind) = 0;
  // fallocate(2): `mode` is its FALLOC_FL_* bits.
  virtual Status Fallocate(InodeId ino, uint64_t fh, int mode, uint64_t pos, uint64_t len) = 0;

  // Every entry of a directory, "." and ".." first (file systems with small fixed
  // directories implement this; ReadDirPage's default pages through it).
  virtual Result<std::vector<DirEntry>> ReadDir(InodeId /*dir*/) {
    return Status::FromErrno(ENOSYS, "readdir");
  }
  virtual Result<FsStatfs> StatFs() = 0;

  // ---- Namespace changes (default: EPERM) -------------------------------------------------
  // mode: type and permission bits after the caller's umask.
  virtual Result<EntryReply> Mknod(InodeId parent, std::string_view name, mode_t mode,
                                   dev_t rdev);
  virtual Result<EntryReply> Mkdir(InodeId parent, std::string_view name, mode_t mode);
  virtual Status Unlink(InodeId parent, std::string_view name);
  virtual Status Rmdir(InodeId parent, std::string_view name);
  virtual Result<EntryReply> Symlink(std::string_view target, InodeId parent,
                                     std::string_view name);
  virtual Result<std::string> ReadLink(InodeId ino);
  // flags: RENAME_NOREPLACE, RENAME_EXCHANGE.
  virtual Status Rename(InodeId parent, std::string_view name, InodeId new_parent,
                        std::string_view new_name, unsigned flags);
  virtual Result<EntryReply> Link(InodeId ino, InodeId new_parent, std::string_view new_name);
  struct CreateReply {
    EntryReply entry;
    OpenReply open;
  };
  virtual Result<CreateReply> Create(InodeId parent, std::string_view name, mode_t mode,
                                     int flags);

  // ---- Directories ------------------------------------------------------------------------
  // Default: handle 0, pages cut from ReadDir(dir) (offset = index + 1).
  virtual Result<uint64_t> OpenDir(InodeId /*ino*/, int /*flags*/) { return uint64_t{0}; }
  // At most max_entries entries from `offset` (0 = the start; else an offset a previous
  // entry carried); with plus, each entry's EntryReply ("." and ".." need none).
  virtual Result<std::vector<DirPageEntry>> ReadDirPage(InodeId ino, uint64_t fh,
                                                        uint64_t offset, size_t max_entries,
                                                        bool plus);
  virtual Status ReleaseDir(InodeId /*ino*/, uint64_t /*fh*/) { return Status::OK(); }
  virtual Status FsyncDir(InodeId /*ino*/, uint64_t /*fh*/, SyncKind /*kind*/) {
    return Status::OK();
  }

  // ---- Extended attributes (default: EOPNOTSUPP) -------------------------------------------
  virtual Result<std::string> GetXattr(InodeId ino, std::string_view name);
  // flags: XATTR_CREATE, XATTR_REPLACE.
  virtual Status SetXattr(InodeId ino, std::string_view name, std::string_view value, int flags);
  virtual Result<std::vector<std::string>> ListXattr(InodeId ino);
  virtual Status RemoveXattr(InodeId ino, std::string_view name);

  // access(2) (only without default_permissions). Default: allowed.
  virtual Status Access(InodeId /*ino*/, int /*mask*/) { return Status::OK(); }

  // ---- Locks (default: ENOSYS; the owner is CallerContext().lock_owner) --------------------
  // flock(2): op is LOCK_SH / LOCK_EX / LOCK_UN, with LOCK_NB when it must not wait.
  virtual Status Flock(InodeId ino, uint64_t fh, int op);
  virtual Result<FileLock> GetLk(InodeId ino, uint64_t fh, const FileLock& lock);
  virtual Status SetLk(InodeId ino, uint64_t fh, const FileLock& lock, bool wait);

  // ---- Data extras ------------------------------------------------------------------------
  // lseek(2) with SEEK_DATA / SEEK_HOLE (default: ENOSYS, the kernel then serves what it can).
  virtual Result<uint64_t> Lseek(InodeId ino, uint64_t fh, uint64_t pos, int whence);
  // copy_file_range(2). Returns the bytes copied. Default: ENOSYS (the kernel copies).
  virtual Result<uint64_t> CopyFileRange(InodeId ino_in, uint64_t fh_in, uint64_t pos_in,
                                         InodeId ino_out, uint64_t fh_out, uint64_t pos_out,
                                         uint64_t len);
};

}  // namespace folio::fuse
