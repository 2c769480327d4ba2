// FsAdapter: Folio FS (fs::FileSystem, the POSIX core) served over FUSE. It implements the
// adapter's Filesystem interface (filesystem.h) by translating each call to the core: the
// caller's credentials from CallerContext(), fuse attributes from fs::Attr, lock and setattr
// requests into the core's types. The core checks permissions itself; with
// default_permissions the kernel checks them too, from the same attributes.
//
// Inode numbers are the core's (the root is 1). One extra file, `.stats` in the root, is
// served here: live JSON of the core (metadata operations and latency per op, page cache per
// folio order, store requests and bytes, checksum failures, packing, compaction and deletion)
// and of the FUSE requests. It is found by lookup but not listed by readdir (so `tar`, `diff -r`
// and `git` never see it); each open takes a snapshot that its reads return.
//
// Thread safety: every method is thread-safe (the core is; the .stats snapshots have a lock).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "fs/file_system.h"
#include "fuse/filesystem.h"
#include "fuse/request_stats.h"

namespace folio::fuse {

struct FsAdapterOptions {
  double entry_timeout_s = 1.0;  // how long the kernel may cache a name -> inode
  double attr_timeout_s = 1.0;   // how long the kernel may cache attributes
  // The kernel may keep a file's cached pages across opens when nothing changed it
  // (FOPEN_KEEP_CACHE, as the core reports it).
  bool keep_cache = true;
};

class FsAdapter final : public Filesystem {
 public:
  // The inode of `.stats` (above every inode id the core hands out, which are < 2^63).
  static constexpr uint64_t kStatsIno = (1ull << 63) + 1;
  static constexpr char kStatsName[] = ".stats";

  // REQUIRES: fs outlives the adapter.
  FsAdapter(fs::FileSystem* fs, const FsAdapterOptions& options);
  // The server's request counters, shown in .stats (null: none).
  void SetRequestStats(const RequestStats* stats) { request_stats_ = stats; }
  std::string StatsText() const;

  // With the kernel's writeback cache, the core's handles leave O_APPEND to the kernel and
  // serve its page-cache fills on write-only handles (FileSystem::SetKernelWritebackCache).
  void Init(const ConnectionInfo& conn) override;
  Result<EntryReply> Lookup(InodeId parent, std::string_view name) override;
  Result<NodeAttr> GetAttr(InodeId ino) override;
  Result<NodeAttr> SetAttr(InodeId ino, const SetAttrRequest& request) override;
  Result<OpenReply> Open(InodeId ino, int flags) override;
  Result<size_t> Read(InodeId ino, uint64_t fh, uint64_t pos, std::span<char> out) override;
  Result<size_t> Write(InodeId ino, uint64_t fh, uint64_t pos, std::span<const char> in) override;
  Status Flush(InodeId ino, uint64_t fh) override;
  Status Release(InodeId ino, uint64_t fh) override;
  Status Fsync(InodeId ino, uint64_t fh, SyncKind kind) override;
  Status FsyncDir(InodeId ino, uint64_t fh, SyncKind kind) override;
  Status Fallocate(InodeId ino, uint64_t fh, int mode, uint64_t pos, uint64_t len) override;
  Result<FsStatfs> StatFs() override;

  Result<EntryReply> Mknod(InodeId parent, std::string_view name, mode_t mode,
                           dev_t rdev) override;
  Result<EntryReply> Mkdir(InodeId parent, std::string_view name, mode_t mode) override;
  Status Unlink(InodeId parent, std::string_view name) override;
  Status Rmdir(InodeId parent, std::string_view name) override;
  Result<EntryReply> Symlink(std::string_view target, InodeId parent,
                             std::string_view name) override;
  Result<std::string> ReadLink(InodeId ino) override;
  Status Rename(InodeId parent, std::string_view name, InodeId new_parent,
                std::string_view new_name, unsigned flags) override;
  Result<EntryReply> Link(InodeId ino, InodeId new_parent, std::string_view new_name) override;
  Result<CreateReply> Create(InodeId parent, std::string_view name, mode_t mode,
                             int flags) override;

  Result<uint64_t> OpenDir(InodeId ino, int flags) override;
  Result<std::vector<DirPageEntry>> ReadDirPage(InodeId ino, uint64_t fh, uint64_t offset,
                                                size_t max_entries, bool plus) override;
  Status ReleaseDir(InodeId ino, uint64_t fh) override;

  Result<std::string> GetXattr(InodeId ino, std::string_view name) override;
  Status SetXattr(InodeId ino, std::string_view name, std::string_view value, int flags) override;
  Result<std::vector<std::string>> ListXattr(InodeId ino) override;
  Status RemoveXattr(InodeId ino, std::string_view name) override;
  Status Access(InodeId ino, int mask) override;

  Status Flock(InodeId ino, uint64_t fh, int op) override;
  Result<FileLock> GetLk(InodeId ino, uint64_t fh, const FileLock& lock) override;
  Status SetLk(InodeId ino, uint64_t fh, const FileLock& lock, bool wait) override;
  Result<uint64_t> Lseek(InodeId ino, uint64_t fh, uint64_t pos, int whence) override;
  Result<uint64_t> CopyFileRange(InodeId ino_in, uint64_t fh_in, uint64_t pos_in,
                                 InodeId ino_out, uint64_t fh_out, uint64_t pos_out,
                                 uint64_t len) override;

 private:
  EntryReply Entry(const fs::Attr& a) const;
  NodeAttr StatsAttr() const;

  fs::FileSystem* const fs_;
  const FsAdapterOptions options_;
  const RequestStats* request_stats_ = nullptr;

  std::mutex stats_mu_;
  uint64_t next_stats_fh_ = 1;                                // GUARDED_BY(stats_mu_)
  std::unordered_map<uint64_t, std::string> stats_handles_;  // GUARDED_BY(stats_mu_)
};

// The fuse attributes of a core inode.
NodeAttr ToNodeAttr(const fs::Attr& a);

}  // namespace folio::fuse
