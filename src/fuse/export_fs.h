// ExportFs: the file system `folio export` serves. Its root directory holds one regular file
// per exported volume (a single file or a RAID volume), read and written through Folio's page
// cache (one AddressSpace per volume, called directly from the FUSE worker threads), a
// read-only `.stats` file of live JSON and, when the owner takes commands, a write-only
// `.control` file: each write is one command line handed to ExportOptions::control (the
// export uses it to fail and replace RAID members of a running volume).
//
//   /            ino 1   dr-xr-xr-x
//   /.stats      ino 2   r--r--r--  size 0, opened direct_io; each open snapshots the JSON
//   /.control    ino 3   -w-------  size 0, direct_io; only when ExportOptions::control is set
//   /<volume>    ino 4+  rw-r--r--  size = the volume's size; cannot grow, shrink or move
//
// Semantics of a volume file, like a block device's:
//   read / write      AddressSpace::Read / Write; a write past the end is cut short, one that
//                     starts at or past it gets ENOSPC
//   fsync, fdatasync  AddressSpace::Fsync(cursor of this open file): writeback of every dirty
//                     folio, then a device flush; writeback errors follow errseq: every open
//                     file open when one happened gets it (with its errno: ENOSPC stays
//                     ENOSPC) at its next fsync, once; a file opened later gets an error
//                     nobody has seen yet
//   close             nothing is lost: dirty data stays in the cache (background writeback);
//                     the release of the last open handle writes it back (WriteBack: its
//                     errors are logged and left for the next fsync of any handle, never
//                     marked seen)
//   fallocate         PUNCH_HOLE|KEEP_SIZE: partial pages zeroed through the cache, whole
//                     pages written back, dropped and trimmed (reads return zeros); EOPNOTSUPP
//                     when the device cannot trim. Mode 0 / KEEP_SIZE inside the file: done
//                     (a device is fully allocated). Other modes: EOPNOTSUPP
//   truncate          to the current size only (EINVAL otherwise); O_TRUNC is ignored, as on
//                     a block device
//   open              FOPEN_DIRECT_IO unless kernel_cache (then keep_cache, so the kernel's
//                     copy survives reopening: only this server writes the volume)
//
// Thread safety: every method is thread-safe; volume state is atomics, the page cache is
// thread-safe, and the node table is fixed at construction.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "folio/page_cache.h"
#include "fuse/export_names.h"
#include "fuse/filesystem.h"
#include "fuse/request_stats.h"

namespace folio::fuse {

inline constexpr InodeId kStatsInode{2};
inline constexpr InodeId kControlInode{3};

struct ExportVolume {
  std::string name;                  // file name in the mount root
  std::string device_spec;           // as the user gave it, for .stats
  AddressSpace* mapping = nullptr;   // the volume's address space (its device is behind it)
  // More live statistics for .stats (e.g. the RAID status), under the key "raid"; may be empty.
  std::function<nlohmann::ordered_json()> raid_stats;
};

struct ExportOptions {
  bool kernel_cache = false;  // serve files without FOPEN_DIRECT_IO (keep_cache instead)
  uid_t uid = 0;              // owner of every node
  gid_t gid = 0;
  std::string mountpoint;     // for .stats
  // Runs one `.control` command line (trailing newline removed); its error is the write's.
  // Empty: no .control file.
  std::function<Status(std::string_view line)> control;
};

class ExportFs : public Filesystem {
 public:
  // REQUIRES: cache and every volume's mapping outlive this object; names are unique, not
  // empty, contain no '/', and are none of ".", "..", ".stats", ".control".
  ExportFs(PageCache* cache, std::vector<ExportVolume> volumes, const ExportOptions& options);
  ~ExportFs() override;

  // The server's request counters, shown in .stats (may be set after construction).
  void SetRequestStats(const RequestStats* stats) { request_stats_.store(stats); }

  // Writes back and flushes every volume, reporting to no open file (errors stay unseen).
  // Returns the first error (after trying them all).
  Status SyncAll();
  // Bytes written to the volumes that never reached their devices (their writeback failed and
  // nothing wrote them over), logging one line for each volume that has any.
  uint64_t ReportUnwritten() const;
  // The JSON .stats shows now.
  nlohmann::ordered_json StatsJson() const;

  Result<EntryReply> Lookup(InodeId parent, std::string_view name) override;
  Result<NodeAttr> GetAttr(InodeId ino) override;
  Result<NodeAttr> SetAttr(InodeId ino, const SetAttrRequest& request) override;
  Result<OpenReply> Open(InodeId ino, int flags) override;
  Result<size_t> Read(InodeId ino, uint64_t fh, uint64_t pos, std::span<char> out) override;
  Result<size_t> Write(InodeId ino, uint64_t fh, uint64_t pos,
                       std::span<const char> in) override;
  Status Flush(InodeId ino, uint64_t fh) override;
  Status Release(InodeId ino, uint64_t fh) override;
  Status Fsync(InodeId ino, uint64_t fh, SyncKind kind) override;
  Status Fallocate(InodeId ino, uint64_t fh, int mode, uint64_t pos, uint64_t len) override;
  Result<std::vector<DirEntry>> ReadDir(InodeId dir) override;
  Result<FsStatfs> StatFs() override;

 private:
  struct VolumeNode {
    ExportVolume volume;
    std::atomic<uint32_t> open_handles{0};
    std::atomic<int64_t> mtime_ns{0};
  };
  // One open file of a volume (one kernel struct file): what it has seen of the volume's
  // writeback errors.
  struct VolumeHandle {
    VolumeNode* node = nullptr;
    WritebackErrorCursor cursor;  // only through AddressSpace::Fsync (its own lock)
  };
  std::shared_ptr<VolumeHandle> HandleOf(uint64_t fh) const;
  VolumeNode* VolumeOf(InodeId ino) const;
  NodeAttr AttrOf(InodeId ino) const;
  Status PunchHole(VolumeNode* v, uint64_t pos, uint64_t len);

  PageCache* const cache_;
  const ExportOptions options_;
  const timespec start_time_;
  const uint64_t start_ns_;
  std::vector<std::unique_ptr<VolumeNode>> volumes_;  // ino = index + 3
  std::atomic<const RequestStats*> request_stats_{nullptr};

  Result<size_t> WriteControl(std::span<const char> in);

  mutable std::mutex handles_mu_;
  uint64_t next_volume_fh_ = 1;  // GUARDED_BY(handles_mu_)
  std::unordered_map<uint64_t, std::shared_ptr<VolumeHandle>> handles_;  // GUARDED_BY(handles_mu_)

  // Open .stats files: the JSON text each took at open, by fh.
  mutable std::mutex stats_mu_;
  uint64_t next_stats_fh_ = 1;                                 // GUARDED_BY(stats_mu_)
  std::unordered_map<uint64_t, std::string> stats_handles_;  // GUARDED_BY(stats_mu_)
  uint64_t control_commands_ = 0;                            // GUARDED_BY(stats_mu_)
  std::string control_last_;                                 // GUARDED_BY(stats_mu_)
  std::string control_last_result_;                          // GUARDED_BY(stats_mu_)
};

}  // namespace folio::fuse
