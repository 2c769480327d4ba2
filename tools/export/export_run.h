// `folio export`: serving volumes over FUSE (RunExport) and unmounting an export from another
// shell (RunUnmount). Flag parsing lives in export_command.cc; these take validated configs.
//
// Serving, in order: (fork when --daemon) -> block shutdown signals -> lock and open every
// device -> page cache + one address space per volume -> mount -> serve until unmounted ->
// write everything back -> stop RAID volumes (marked clean) -> release the locks. Every
// failure before serving leaves nothing mounted and nothing locked.
//
// Exit codes: 0 served and shut down cleanly; 2 bad input (mount point, /dev/fuse, spec,
// permission); 1 I/O failure (including a failed final writeback, written data that never
// reached a device because its writeback failed, or a device in use).
//
// Thread safety: called once from main's thread, before any other thread exists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/poll_wait.h"
#include "export/export_volume.h"
#include "folio/page_cache.h"

namespace folio::cli {

// What every message of `folio export` starts with (cli_util.h: "folio export: ...").
inline constexpr char kExportPrefix[] = "folio export";

struct ExportConfig {
  std::string mountpoint;          // absolute
  std::vector<DeviceSpec> specs;   // paths absolute
  std::vector<std::string> names;  // one per spec
  FolioPolicy policy;
  uint64_t cache_bytes = 1ull << 30;
  PageCacheOptions cache_options;  // writeback knobs (--dirty-*); memory and policy from above
  bool kernel_cache = false;
  bool daemon = false;
  std::string log_path;  // --daemon: where stderr goes
  uint32_t threads = 16;
  uint32_t poll_us = kDefaultPollUs;  // --poll-us (fuse::MountOptions::poll_us)
  bool allow_other = false;
  bool debug = false;
};

int RunExport(const ExportConfig& config);

struct UnmountConfig {
  std::string mountpoint;
  bool lazy = false;
  uint64_t timeout_ms = 120000;  // wait for the export process to finish writing back
};

int RunUnmount(const UnmountConfig& config);

}  // namespace folio::cli
