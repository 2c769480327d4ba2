// The values the Folio FS core takes and returns: who asks (Cred), what stat(2) shows (Attr),
// what a setattr changes, directory pages, locks, statfs.
//
// The core (file_system.h) speaks these and Status; it knows nothing of FUSE. Error codes
// follow POSIX: every Status the core returns carries the errno a system call would fail with
// (Status::FromErrno / ToErrno), e.g. ENOENT, EEXIST, ENOTEMPTY, EACCES, EPERM.
//
// Thread safety: plain values.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "meta/meta_types.h"

namespace folio::fs {

using meta::FileType;
using meta::InodeId;
using meta::kRootInode;
using meta::Raw;

// The caller of an operation: what the kernel's permission checks look at.
struct Cred {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // supplementary groups
  uint32_t pid = 0;

  bool IsRoot() const { return uid == 0; }
  bool InGroup(uint32_t g) const;
  static Cred Root() { return Cred{}; }
  static Cred User(uint32_t uid, uint32_t gid) { return Cred{uid, gid, {}, 0}; }
};

// What stat(2) shows.
struct Attr {
  meta::Inode inode;
  uint64_t blocks_512 = 0;  // st_blocks: allocated data in 512-byte units

  InodeId ino() const { return inode.ino; }
  // S_IF* | permission bits.
  mode_t StatMode() const;
};

mode_t StatTypeBits(FileType type);
// The FileType of S_IF* bits; InvalidArgument for bits that name no type.
bool FileTypeOfMode(mode_t mode, FileType* out);

// UTIME_NOW / UTIME_OMIT for a time of a setattr.
enum class TimeSet { kOmit, kNow, kValue };

struct SetAttrRequest {
  bool set_mode = false;
  uint32_t mode = 0;  // permission bits (07777)
  bool set_uid = false;
  uint32_t uid = 0;
  bool set_gid = false;
  uint32_t gid = 0;
  bool set_size = false;
  uint64_t size_bytes = 0;
  TimeSet atime = TimeSet::kOmit;
  int64_t atime_ns = 0;
  TimeSet mtime = TimeSet::kOmit;
  int64_t mtime_ns = 0;
  // The open file the request came through (ftruncate, futimens): the permission to write was
  // checked at open. 0 = by path.
  uint64_t fh = 0;
};

// rename(2) / renameat2(2) flags.
inline constexpr unsigned kRenameNoReplace = 1u << 0;  // RENAME_NOREPLACE
inline constexpr unsigned kRenameExchange = 1u << 1;   // RENAME_EXCHANGE

// setxattr(2) flags.
inline constexpr int kXattrCreate = 1;   // XATTR_CREATE
inline constexpr int kXattrReplace = 2;  // XATTR_REPLACE

// One entry of a directory page. `offset` is where the listing resumes after this entry.
struct DirEntryOut {
  std::string name;
  InodeId ino{0};
  FileType type = FileType::kRegular;
  uint64_t offset = 0;
  Attr attr;  // with ReadDirPlus only
};

struct StatFs {
  uint32_t block_bytes = 4096;
  uint64_t blocks = 0;
  uint64_t blocks_free = 0;
  uint64_t files = 0;
  uint64_t files_free = 0;
  uint32_t name_max_bytes = 255;
};

// A POSIX byte-range lock as fcntl(2) speaks it: [start, end] inclusive.
struct PosixLock {
  meta::LockType type = meta::LockType::kUnlock;
  uint64_t start = 0;
  uint64_t end = UINT64_MAX;
  uint32_t pid = 0;
};

// lseek(2) whence values the core implements.
enum class Whence { kData, kHole };

// The xattr that holds a file's or directory's folio policy ("4k", "fixed:64K", "dynamic");
// new files and directories inherit it from their parent directory.
inline constexpr std::string_view kPolicyXattr = "user.folio.policy";

inline constexpr uint32_t kNameMaxBytes = 255;
inline constexpr uint32_t kSymlinkMaxBytes = 4095;
inline constexpr uint64_t kMaxFileBytes = 16ull << 40;  // 16 TiB (EFBIG past it)

}  // namespace folio::fs
