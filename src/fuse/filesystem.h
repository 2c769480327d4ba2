// Filesystem: the FUSE-free interface a file system implements to be served over FUSE.
//
// The adapter (lowlevel_ops.cc, the only user of fuse_lowlevel.h) turns each kernel request
// into one call here and sends exactly one reply built from the result: a value, or the errno
// of the returned Status (Status::ToErrno()). Implementations never see a fuse_req_t, so they
// cannot reply twice or forget to reply, and they can be tested without a mount.
//
// Lookup counts (the kernel's references to inodes) are kept by the adapter: every successful
// Lookup reply adds one to the inode's count, Forget subtracts, and a Forget of more than was
// looked up aborts (a bug in the kernel protocol handling, never an operating error). Forget is
// passed on so a file system with dynamic inodes can free them when the count reaches zero.
//
// Thread safety: the adapter calls every method concurrently from its worker threads;
// implementations must be thread-safe.
#pragma once

#include <sys/types.h>
#include <time.h>

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

// The parts of a setattr request; `has_*` says which fields the caller wants changed.
struct SetAttrRequest {
  bool has_size = false;
  uint64_t size_bytes = 0;
  bool has_mode = false;
  mode_t mode = 0;
  bool has_owner = false;  // uid and/or gid
  bool has_times = false;  // atime and/or mtime
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
};

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
  // Each close(2) of a descriptor of the open file. The result is close(2)'s.
  virtual Status Flush(InodeId ino, uint64_t fh) = 0;
  // The last close of the open file (its fh is not used again). The result is ignored by the
  // kernel: an implementation must not lose data here.
  virtual Status Release(InodeId ino, uint64_t fh) = 0;
  virtual Status Fsync(InodeId ino, uint64_t fh, SyncKind kind) = 0;
  // fallocate(2): `mode` is its FALLOC_FL_* bits.
  virtual Status Fallocate(InodeId ino, uint64_t fh, int mode, uint64_t pos, uint64_t len) = 0;

  // Every entry of a directory, "." and ".." first. The adapter pages through the list by
  // offset, so it must be stable while the directory does not change.
  virtual Result<std::vector<DirEntry>> ReadDir(InodeId dir) = 0;
  virtual Result<FsStatfs> StatFs() = 0;
};

}  // namespace folio::fuse
