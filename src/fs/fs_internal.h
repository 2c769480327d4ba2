// Helpers shared by the FileSystem's implementation files: errno statuses, the wall clock,
// reading inodes inside a transaction, and the per-handle records.
//
// Thread safety: the functions are pure or use only their Txn; OpenFile / DirHandle say theirs.
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "folio/page_cache.h"
#include "fs/fs_types.h"
#include "meta/meta_engine.h"

namespace folio::fs {

class FileData;

// A Status with errno err: "<what>: <strerror>".
inline Status Errno(int err, std::string_view what) { return Status::FromErrno(err, what); }
std::string InodeText(InodeId ino);  // "inode 12"

// CLOCK_REALTIME in nanoseconds (file times).
int64_t WallNs();

// What a regular file of `size` bytes adds to the used-bytes counter (meta::Counter::kUsedBytes):
// its size rounded up to whole 4 KiB blocks.
inline int64_t Round4k(uint64_t size) {
  return static_cast<int64_t>((size + 4095) / 4096 * 4096);
}

// The inode, or ENOENT naming it.
Result<meta::Inode> GetInodeOrEnoent(meta::Txn& txn, InodeId ino);
// The directory, or ENOENT / ENOTDIR; a removed directory (nlink 0) is ENOENT.
Result<meta::Inode> GetLiveDir(meta::Txn& txn, InodeId ino);

// Removes every xattr of ino (freeing an inode).
Status DeleteXattrs(meta::Txn& txn, InodeId ino);

// One open(2) of a regular file. The FileData is shared by every handle of the inode.
struct OpenFile {
  InodeId ino{0};
  int flags = 0;             // open(2) flags
  Cred cred;                 // the opener (suid clearing on write)
  std::shared_ptr<FileData> data;
  std::mutex mu;
  bool took_flock = false;   // GUARDED_BY(mu)
  uint64_t flock_owner = 0;  // GUARDED_BY(mu)
  // The kernel's writeback cache places this handle's writes and reads through it
  // (FileSystem::SetKernelWritebackCache): O_APPEND does not move them, O_WRONLY does not
  // forbid reads.
  bool kernel_cache = false;

  bool readable() const { return (flags & 3) != 1 || kernel_cache; }   // O_WRONLY = 1
  bool writable() const { return (flags & 3) != 0; }   // O_RDONLY = 0
};

// One opendir(2): where the listing is, in bounded memory.
struct DirHandle {
  InodeId ino{0};
  std::mutex mu;
  // The (offset, name) of the entries of the last two pages returned, to resume from an
  // offset the kernel hands back. GUARDED_BY(mu)
  std::vector<std::pair<uint64_t, std::string>> recent;
};

}  // namespace folio::fs
