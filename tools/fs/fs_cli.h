// `folio fs`: Folio FS from the command line. fs_command.cc parses and validates the flags of
// each subcommand into one of the configs below; fs_admin.cc (format, status, fsck, gc) and
// fs_mount.cc (mount, umount) do the work.
//
//   folio fs format META-URL NAME --storage dir:PATH|dev:SPEC [--block-size 4M]
//                   [--pack-below 64K] [--force]
//   folio fs mount META-URL MOUNTPOINT [--cache SIZE] [--policy P] [--daemon] [-o ro,...]
//   folio fs umount MOUNTPOINT
//   folio fs status META-URL [--json]
//   folio fs fsck META-URL [--repair] [--json]
//   folio fs gc META-URL [--delete] [--json]
//
// Exit codes: 0 done; 2 bad input (a flag, a URL, an unformatted or foreign database, a newer
// format, a missing or non-empty mount point); 1 runtime failure (I/O, a volume in use, fsck
// problems found). Every failure is one line on stderr naming the thing and the fix.
//
// Thread safety: each Run* is called once from main's thread, before any other thread exists.
#pragma once

#include <cstdint>
#include <string>

#include "cli/cli.h"
#include "folio/page_cache.h"
#include "fs/file_system.h"
#include "fs/format.h"
#include "fuse/session.h"

namespace folio::cli {

Command AddFsCommand(CLI::App& root);

struct FsFormatConfig {
  std::string meta_url;
  fs::FormatOptions format;
};
int RunFsFormat(const FsFormatConfig& c);

struct FsMountConfig {
  std::string meta_url;
  std::string mountpoint;  // absolute
  uint64_t cache_bytes = 1ull << 30;
  FolioPolicy policy;
  bool daemon = false;
  std::string log_path;    // --daemon: where stderr goes
  uint32_t threads = 16;
  bool read_only = false;
  bool shared = false;     // -o shared: several mounts of the volume at once (FsOptions::shared)
  bool allow_other = false;
  fs::AtimeMode atime = fs::AtimeMode::kRelatime;
  double entry_timeout_s = 1.0;
  double attr_timeout_s = 1.0;
  bool writeback_cache = false;
  // -o meta_sync=each (true): every metadata operation is durable when it returns;
  // -o meta_sync=fsync (false): durable at fsync / fsyncdir / unmount and every meta_commit_ms.
  bool meta_sync_each = true;
  bool meta_cache = true;  // -o meta_cache=on|off (fs::FsOptions::meta_cache)
  uint64_t readahead_bytes = fs::FsOptions{}.readahead_bytes;  // -o readahead=SIZE
  uint64_t meta_commit_ms = fs::FsOptions{}.meta_sync_interval_ms;  // -o meta_commit=S
  uint32_t poll_us = fuse::MountOptions{}.poll_us;  // -o poll_us=N (fuse::MountOptions::poll_us)
  bool debug = false;
};
int RunFsMount(const FsMountConfig& c);

struct FsUmountConfig {
  std::string mountpoint;
  bool lazy = false;
  uint64_t timeout_ms = 120000;
};
int RunFsUmount(const FsUmountConfig& c);

struct FsInspectConfig {
  std::string meta_url;
  bool json = false;
  bool repair = false;      // fsck
  bool delete_leaked = false;  // gc
  int64_t safety_window_ms = 3600000;  // gc
};
int RunFsStatus(const FsInspectConfig& c);
int RunFsFsck(const FsInspectConfig& c);
int RunFsGc(const FsInspectConfig& c);

}  // namespace folio::cli
