// Helpers shared by the FileSystem's implementation files: errno statuses, the wall clock,
// reading inodes inside a transaction, and the per-handle records.
//
// Thread safety: the functions are pure or use only their Txn; OpenFile / DirHandle say theirs.
#pragma once

#include <algorithm>
#include <atomic>
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

// The size a commit of this mount's data leaves in the metadata, which holds `committed`:
// unchanged when this mount did not change the size (`dirty` false); exactly `size` when a
// truncate of this mount set it (`exact`); else the larger of the two, since writes only grow
// a file and the committed size may be another mount's growth since this one looked.
inline uint64_t CommitSize(uint64_t committed, uint64_t size, bool dirty, bool exact) {
  if (!dirty) return committed;
  return exact ? size : std::max(committed, size);
}
// The ctime a commit of changed data writes over `committed`: its own (`mine`), and always
// later than the one it replaces, so that another mount sees the change (FileData::Revalidate)
// even when its clock is behind or its change kept the size and mtime.
inline int64_t CommitCtime(int64_t committed, int64_t mine) {
  return std::max(committed + 1, mine);
}

// Whether `now` holds a change of the file's data since `base` was read or committed: its
// mtime, size or ctime differ (every data commit moves the ctime, CommitCtime).
inline bool InodeChangedSince(const meta::Inode& now, const meta::Inode& base) {
  return now.mtime_ns != base.mtime_ns || now.size_bytes != base.size_bytes ||
         now.ctime_ns != base.ctime_ns;
}

// The inode, or ENOENT naming it.
Result<meta::Inode> GetInodeOrEnoent(meta::Txn& txn, InodeId ino);
// The directory, or ENOENT / ENOTDIR; a removed directory (nlink 0) is ENOENT.
Result<meta::Inode> GetLiveDir(meta::Txn& txn, InodeId ino);

// Puts ino on the deletion queue as a kInode item due now (the data path frees it). Returns
// the item's key.
Result<uint64_t> QueueInodeDeletion(meta::Txn& txn, InodeId ino);
// QueueInodeDeletion when ino has no link left and no session holds it (the sustained table);
// else nothing. Returns the item's key, or 0.
Result<uint64_t> QueueInodeIfFree(meta::Txn& txn, InodeId ino);

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
  // A flock or POSIX lock was granted through this handle since it was opened.
  std::atomic<bool> held_locks{false};
  // This mount's session was cleaned by another mount (paused past the session timeout) while
  // the handle held locks: they are gone, so its I/O fails with EIO until it is closed.
  std::atomic<bool> locks_lost{false};
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
  // The offset of the last entry of a listing that reached the end of the directory (0: none
  // did yet): reading on from it returns nothing without asking the metadata. GUARDED_BY(mu)
  uint64_t end_offset = 0;
};

}  // namespace folio::fs
