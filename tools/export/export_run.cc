#include "export/export_run.h"

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "base/units.h"
#include "cli/cli_util.h"
#include "cli/export_control.h"
#include "cli/fuse_serve.h"
#include "export/raid_volume.h"
#include "fuse/daemon.h"
#include "fuse/export_fs.h"
#include "fuse/log.h"
#include "fuse/mount_point.h"
#include "fuse/session.h"
#include "fuse/shutdown_signals.h"

namespace folio::cli {

namespace {

// Everything an export holds, declared so that destruction runs top-down: the server first,
// then the file system, the address spaces, the cache, and the volumes (devices and locks)
// last.
struct ExportState {
  std::vector<OpenedVolume> volumes;
  std::unique_ptr<PageCache> cache;
  std::vector<std::unique_ptr<AddressSpace>> mappings;
  std::unique_ptr<fuse::ExportFs> fs;
  std::unique_ptr<fuse::FuseServer> server;
};

Status Interrupted(const fuse::ShutdownSignals& signals) {
  if (signals.received() == 0) return Status::OK();
  return Status::Again("interrupted by signal " + std::to_string(signals.received()) +
                       " before mounting; nothing was mounted");
}

// One `.control` command (cli/export_control.h) on the RAID volume that has the (old) member.
Status RunControl(const std::vector<OpenedVolume>& volumes, std::string_view line) {
  FOLIO_ASSIGN_OR_RETURN(const ControlCommand c, ParseControlCommand(line));
  const std::string member = ResolvedPath(c.member);
  for (const OpenedVolume& v : volumes) {
    if (!v.raid || !v.raid->HasMember(member)) continue;
    if (c.verb == ControlCommand::Verb::kFail) return v.raid->Fail(member);
    return v.raid->Replace(member, ResolvedPath(c.new_member));
  }
  return Status::NotFound(c.member + ": not a member of an exported RAID volume");
}

Status OpenAll(const ExportConfig& c, const fuse::ShutdownSignals& signals, ExportState* st) {
  for (const DeviceSpec& spec : c.specs) {
    FOLIO_ASSIGN_OR_RETURN(OpenedVolume v, OpenVolume(spec));
    st->volumes.push_back(std::move(v));
    FOLIO_RETURN_IF_ERROR(Interrupted(signals));
  }
  PageCacheOptions po = c.cache_options;
  po.memory_bytes = c.cache_bytes;
  po.policy = c.policy;
  po.prefault_in_background = true;  // mount now; the arena fills in behind
  FOLIO_ASSIGN_OR_RETURN(st->cache, PageCache::Create(po));
  std::vector<fuse::ExportVolume> exported;
  for (size_t i = 0; i < st->volumes.size(); ++i) {
    OpenedVolume& v = st->volumes[i];
    AddressSpaceOptions ao;
    ao.name = c.names[i];
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<AddressSpace> as, st->cache->Open(v.device.get(), ao));
    fuse::ExportVolume ev{c.names[i], v.spec.Canonical(), as.get(), nullptr};
    if (v.raid) ev.raid_stats = [raid = v.raid] { return raid->StatsJson(); };
    exported.push_back(std::move(ev));
    st->mappings.push_back(std::move(as));
  }
  FOLIO_RETURN_IF_ERROR(Interrupted(signals));
  fuse::ExportOptions eo;
  eo.kernel_cache = c.kernel_cache;
  eo.uid = getuid();
  eo.gid = getgid();
  eo.mountpoint = c.mountpoint;
  for (const OpenedVolume& v : st->volumes) {
    if (v.raid) eo.control = [st](std::string_view line) { return RunControl(st->volumes, line); };
  }
  st->fs = std::make_unique<fuse::ExportFs>(st->cache.get(), std::move(exported), eo);
  return Status::OK();
}

std::string ServingMessage(const ExportConfig& c) {
  std::string names;
  for (const std::string& n : c.names) names += (names.empty() ? "" : ", ") + n;
  return "serving " + names + " at " + c.mountpoint + " (pid " + std::to_string(getpid()) +
         ", policy " + c.policy.ToString() + ", cache " + FormatSize(c.cache_bytes) +
         "); stop with Ctrl-C or 'folio export --unmount " + c.mountpoint + "'";
}

// After the mount is gone: write back, stop the volumes, release everything. Returns the
// exit code.
int Shutdown(ExportState* st, const Status& loop) {
  int code = kExitOk;
  if (!loop.ok()) {
    fuse::Log("serving loop failed: " + loop.ToString());
    code = kExitRuntime;
  }
  fuse::Log("unmounted; writing back dirty data");
  if (!st->fs->SyncAll().ok()) code = kExitRuntime;
  // Data whose writeback failed (a full file system under a file device, a dead member) is
  // not on the devices: say how much, and fail the exit.
  const uint64_t lost_bytes = st->fs->ReportUnwritten();
  if (lost_bytes != 0) code = kExitRuntime;
  st->server.reset();
  st->fs.reset();
  st->mappings.clear();
  st->cache.reset();
  for (OpenedVolume& v : st->volumes) {
    if (!v.raid) continue;
    v.raid->StopSync();  // a background sync stops at a checkpoint and resumes next time
    Status s = AsRaid(v.device.get())->Stop();
    if (!s.ok()) {
      fuse::Log(v.spec.text + ": stopping the RAID volume failed: " + s.ToString());
      code = kExitRuntime;
    } else {
      fuse::Log(v.spec.text + ": RAID volume stopped clean");
    }
  }
  st->volumes.clear();  // devices closed, locks released
  if (code == kExitOk) {
    fuse::Log("done: all data written back");
  } else if (lost_bytes != 0) {
    fuse::Log("done: " + std::to_string(lost_bytes) + " bytes (" + FormatSize(lost_bytes) +
              ") of written data could not be written back and are lost (see above)");
  } else {
    fuse::Log("done, with errors (see above)");
  }
  return code;
}

int Serve(const ExportConfig& c, fuse::Daemon* daemon) {
  ServeOutcome out(kExportPrefix, daemon);
  // Before any thread exists, so every thread inherits the blocked shutdown signals.
  Result<std::unique_ptr<fuse::ShutdownSignals>> signals = fuse::ShutdownSignals::Start();
  if (!signals.ok()) return out.Fail(signals.status());
  ExportState st;
  Status s = OpenAll(c, **signals, &st);
  if (!s.ok()) return out.Fail(s);

  fuse::MountOptions mo;
  mo.mountpoint = c.mountpoint;
  mo.max_threads = c.threads;
  mo.poll_us = c.poll_us;
  mo.allow_other = c.allow_other;
  mo.debug = c.debug;
  Result<std::unique_ptr<fuse::FuseServer>> server = fuse::FuseServer::Mount(st.fs.get(), mo);
  if (!server.ok()) return out.Fail(server.status());
  st.server = std::move(server.value());
  st.fs->SetRequestStats(&st.server->stats());

  Status loop = ServeUntilUnmounted(st.server.get(), signals->get(), &out, c.log_path, ServingMessage(c));
  return Shutdown(&st, loop);
}

}  // namespace

int RunExport(const ExportConfig& config) {
  fuse::SetLogPrefix(kExportPrefix);
  return RunForegroundOrDaemon(kExportPrefix, config.daemon,
                               [&](fuse::Daemon* daemon) { return Serve(config, daemon); });
}

int RunUnmount(const UnmountConfig& c) {
  fuse::SetLogPrefix(kExportPrefix);
  const std::string flag = "--unmount " + c.mountpoint;
  const UnmountResult r = UnmountAndWait(c.mountpoint, c.lazy, c.timeout_ms);
  switch (r.end) {
    case UnmountEnd::kNotMounted:
      return UsageError(kExportPrefix, flag + ": not a FUSE mount point; nothing to unmount");
    case UnmountEnd::kFailed:
      return ExitWithStatus(kExportPrefix, r.status);
    case UnmountEnd::kDetached:
      PrintError(kExportPrefix, c.mountpoint + ": detached; process " + std::to_string(r.pid) +
                              " writes back and exits when the last user closes its files");
      return kExitOk;
    case UnmountEnd::kServerStillRunning:
      return RuntimeError(kExportPrefix, c.mountpoint + ": unmounted, but " +
                                             std::string(r.status.message()) +
                                             " (still writing back?); wait for it or check its log");
    case UnmountEnd::kDone:
      break;
  }
  return kExitOk;
}

}  // namespace folio::cli
