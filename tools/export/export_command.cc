// `folio export`: flag parsing and validation into an ExportConfig / UnmountConfig; the work
// is in export_run.cc.
#include "export/export_command.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/units.h"
#include "cli/cache_flags.h"
#include "cli/cli_util.h"
#include "cli/export_control.h"
#include "export/export_run.h"
#include "fuse/export_names.h"
#include "fuse/mount_point.h"

namespace folio::cli {

namespace {

struct ExportArgs {
  std::string mount;
  std::string unmount;
  bool lazy = false;
  double timeout_s = 120;
  std::string policy = "dynamic";
  std::string cache = "1G";
  std::vector<std::string> names;
  bool kernel_cache = false;
  bool daemon = false;
  std::string log;
  uint32_t threads = 16;
  uint32_t poll_us = kDefaultPollUs;
  bool allow_other = false;
  bool debug = false;
  std::vector<std::string> specs;
  CacheWritebackFlags writeback;
};

uint64_t PhysicalMemoryBytes() {
  struct sysinfo si;
  if (sysinfo(&si) != 0) return 0;
  return static_cast<uint64_t>(si.totalram) * si.mem_unit;
}

Status CheckName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name == fuse::kStatsName ||
      name == fuse::kControlName || name.find('/') != std::string::npos || name.size() > 255) {
    return Status::InvalidArgument("--name '" + name + "': not a usable file name; give a " +
                                   "name without '/' (not " + fuse::kStatsName + " or " +
                                   fuse::kControlName + ")");
  }
  return Status::OK();
}

Status BuildNames(const ExportArgs& a, ExportConfig* c) {
  if (a.names.size() > c->specs.size()) {
    return Status::InvalidArgument("--name given " + std::to_string(a.names.size()) +
                                   " times for " + std::to_string(c->specs.size()) +
                                   " device(s); give at most one per device, in order");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < c->specs.size(); ++i) {
    std::string name = i < a.names.size() ? a.names[i] : DefaultVolumeName(c->specs[i], i);
    FOLIO_RETURN_IF_ERROR(CheckName(name));
    if (!seen.insert(name).second) {
      return Status::InvalidArgument("two devices would both be named '" + name +
                                     "'; tell them apart with --name (once per device)");
    }
    c->names.push_back(std::move(name));
  }
  return Status::OK();
}

Status BuildExportConfig(const ExportArgs& a, ExportConfig* c) {
  if (a.mount.empty()) {
    return Status::InvalidArgument("--mount DIR is required (or --unmount DIR)");
  }
  if (a.specs.empty()) {
    return Status::InvalidArgument(
        "no DEVICE_SPEC given; e.g. folio export --mount /mnt/v "
        "file:/data/disk.img");
  }
  if (a.lazy) return Status::InvalidArgument("--lazy goes with --unmount");
  Result<FolioPolicy> policy = FolioPolicy::Parse(a.policy);
  if (!policy.ok())
    return Status::InvalidArgument("--policy " + std::string(policy.status().message()));
  c->policy = *policy;
  Result<uint64_t> cache = ParseSize(a.cache, "--cache");
  if (!cache.ok()) {
    return Status::InvalidArgument("--cache " + a.cache + ": not a size; use e.g. 256M or 4G");
  }
  const uint64_t memory = PhysicalMemoryBytes();
  if (*cache < (16ull << 20) || (memory != 0 && *cache > memory)) {
    return Status::InvalidArgument("--cache " + a.cache + ": use between 16M and the " +
                                   FormatSize(memory) + " of memory this machine has");
  }
  c->cache_bytes = *cache;
  c->cache_options.memory_bytes = *cache;  // the shares are of --cache
  FOLIO_RETURN_IF_ERROR(ApplyCacheWritebackFlags(a.writeback, &c->cache_options));
  if (a.threads < 1 || a.threads > 256) {
    return Status::InvalidArgument("--threads " + std::to_string(a.threads) + ": use 1 to 256");
  }
  c->threads = a.threads;
  if (a.poll_us > kMaxPollUs) {
    return Status::InvalidArgument("--poll-us " + std::to_string(a.poll_us) +
                                   ": use 0 (never poll) to " + std::to_string(kMaxPollUs));
  }
  c->poll_us = a.poll_us;
  if (!a.log.empty() && !a.daemon) return Status::InvalidArgument("--log goes with --daemon");
  for (const std::string& text : a.specs) {
    // Paths made absolute now: a --daemon changes to "/" before it opens them.
    FOLIO_ASSIGN_OR_RETURN(DeviceSpec spec, ParseDeviceSpec(text));
    FOLIO_RETURN_IF_ERROR(ResolveDevicePaths(&spec));
    c->specs.push_back(std::move(spec));
  }
  FOLIO_RETURN_IF_ERROR(BuildNames(a, c));
  // The mount point and /dev/fuse are checked again when mounting; checking them here lets a
  // --daemon report them before it forks.
  FOLIO_RETURN_IF_ERROR(fuse::CheckMountPoint("--mount", a.mount));
  FOLIO_RETURN_IF_ERROR(fuse::CheckFuseDevice());
  char buf[PATH_MAX];
  if (realpath(a.mount.c_str(), buf) == nullptr) return Status::FromErrno(errno, a.mount);
  c->mountpoint = buf;
  c->kernel_cache = a.kernel_cache;
  c->daemon = a.daemon;
  if (!a.log.empty()) {
    if (realpath(a.log.c_str(), buf) != nullptr) {
      c->log_path = buf;
    } else {
      c->log_path = a.log[0] == '/' ? a.log : std::string(getcwd(buf, sizeof(buf))) + "/" + a.log;
    }
    // Open it now (append, created if missing) so a bad path is a usage error before mounting.
    const int fd = ::open(c->log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      return Status::InvalidArgument("--log " + a.log + ": " + std::strerror(errno) +
                                     "; give a writable file in an existing directory");
    }
    ::close(fd);
  }
  c->allow_other = a.allow_other;
  c->debug = a.debug;
  return Status::OK();
}

int Run(const ExportArgs& a) {
  if (!a.unmount.empty()) {
    if (!a.mount.empty() || !a.specs.empty()) {
      return UsageError(kExportPrefix, "--unmount DIR takes no --mount and no DEVICE_SPEC");
    }
    if (a.timeout_s < 0) return UsageError(kExportPrefix, "--timeout: must be 0 or more seconds");
    UnmountConfig u;
    u.mountpoint = a.unmount;
    u.lazy = a.lazy;
    u.timeout_ms = static_cast<uint64_t>(a.timeout_s * 1000);
    return RunUnmount(u);
  }
  ExportConfig c;
  Status s = BuildExportConfig(a, &c);
  if (!s.ok()) return ExitWithStatus(kExportPrefix, s);
  return RunExport(c);
}

}  // namespace

Command AddExportCommand(CLI::App& root) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* sub = root.add_subcommand(
      kExportCommandName,
      "Serve devices or RAID volumes as files in a FUSE mount, read and written "
      "through Folio's page cache (for fio, mkfs, loop devices, any program).");
  sub->add_option(kExportMountFlag, a->mount, "Empty directory to mount on");
  sub->add_option("--unmount", a->unmount,
                  "Unmount the export at DIR (from any shell) and wait for its process to "
                  "write everything back and exit");
  sub->add_flag("--lazy", a->lazy,
                "With --unmount: detach even if busy; the export ends "
                "when its last user closes it");
  sub->add_option("--timeout", a->timeout_s,
                  "With --unmount: seconds to wait for the export process (default 120)");
  sub->add_option("--policy", a->policy,
                  "Folio policy: 4k, fixed:SIZE (e.g. fixed:64k), "
                  "dynamic")
      ->default_str("dynamic");
  sub->add_option("--cache", a->cache, "Page cache memory (e.g. 256M, 4G)")->default_str("1G");
  AddCacheWritebackFlags(sub, &a->writeback);
  sub->add_option("--name", a->names,
                  "File name of a device in the mount (once per device, in order); default "
                  "the device's basename (a RAID volume: its first member's), memN for mem:")
      ->allow_extra_args(false);
  sub->add_flag("--kernel-cache", a->kernel_cache,
                "Let the kernel cache file data too (default: direct I/O, one copy in Folio)");
  sub->add_flag("--daemon", a->daemon,
                "Detach once mounted (default: foreground, logs on "
                "stderr)");
  sub->add_option("--log", a->log, "With --daemon: append the log to this file");
  sub->add_option("--threads", a->threads, "FUSE worker threads (default 16)");
  sub->add_option("--poll-us", a->poll_us,
                  "How long the mount polls for the next request, yielding the CPU, before it "
                  "sleeps (microseconds; default " + std::to_string(kDefaultPollUs) +
                      ", 0: never)");
  sub->add_flag("--allow-other", a->allow_other, "Let other users use the mount");
  sub->add_flag("--debug", a->debug, "Print every FUSE request (libfuse's debug log)");
  sub->add_option("DEVICE_SPEC", a->specs, kDeviceSpecSyntax);
  sub->footer(
      "The mount root holds one file per device plus a read-only .stats (live JSON: folio "
      "sizes per order, device, RAID and FUSE request statistics). SIGINT / SIGTERM or "
      "'folio export --unmount DIR' write everything back, mark RAID volumes clean and unmount.");
  return Command{sub, [a] { return Run(*a); }};
}

}  // namespace folio::cli
