// `folio fs mount` and `folio fs umount`.
//
// Mounting, in order: (fork when --daemon) -> block shutdown signals -> open the metadata, the
// format record and the store -> page cache -> FileSystem::Mount (the session: refused when
// another process has the volume mounted read-write) -> FUSE mount -> serve until unmounted
// (umount, `folio fs umount`, SIGINT / SIGTERM) -> FileSystem::Unmount (every file's data
// committed, the session removed). Every failure before serving leaves nothing mounted and
// nothing written (the session is removed again when the FUSE mount fails).
#include <unistd.h>

#include <memory>
#include <string>

#include "base/progress.h"
#include "base/units.h"
#include "cli/cli_util.h"
#include "cli/fuse_serve.h"
#include "fs/fs_cli.h"
#include "fs/fs_volume.h"
#include "fuse/daemon.h"
#include "fuse/fs_adapter.h"
#include "fuse/log.h"
#include "fuse/mount_point.h"
#include "fuse/session.h"
#include "fuse/shutdown_signals.h"

namespace folio::cli {

namespace {

constexpr char kMountPrefix[] = "folio fs mount";

// Everything a mount holds, declared so that destruction runs top-down: the server, the
// adapter, the file system, the cache, and the volume (engine and store) last.
struct MountState {
  FsVolume volume;
  std::unique_ptr<PageCache> cache;
  std::unique_ptr<fs::FileSystem> fs;
  std::unique_ptr<fuse::FsAdapter> adapter;
  std::unique_ptr<fuse::FuseServer> server;
};

Status OpenAll(const FsMountConfig& c, MountState* st) {
  // The engine is opened read-write even for -o ro: the session record is written.
  meta::MetaOpenOptions mo;
  mo.sqlite_synchronous = c.meta_sync_each ? "full" : "normal";
  FOLIO_ASSIGN_OR_RETURN(st->volume,
                         OpenFsVolume(c.meta_url, /*read_only=*/false, StoreAccess::kOpen, mo));
  PageCacheOptions po;
  po.memory_bytes = c.cache_bytes;
  po.policy = c.policy;
  po.prefault_in_background = true;
  FOLIO_ASSIGN_OR_RETURN(st->cache, PageCache::Create(po));
  fs::FsOptions fo;
  fo.mountpoint = c.mountpoint;
  fo.read_only = c.read_only;
  fo.shared = c.shared;
  fo.policy = c.policy;
  fo.atime = c.atime;
  fo.meta_sync_interval_ms = c.meta_commit_ms;
  fo.meta_cache = c.meta_cache;
  fo.readahead_bytes = c.readahead_bytes;
  FOLIO_ASSIGN_OR_RETURN(st->fs, fs::FileSystem::Mount(st->volume.meta.get(),
                                                       st->volume.store.get(), st->cache.get(),
                                                       fo));
  fuse::FsAdapterOptions ao;
  ao.entry_timeout_s = c.entry_timeout_s;
  ao.attr_timeout_s = c.attr_timeout_s;
  st->adapter = std::make_unique<fuse::FsAdapter>(st->fs.get(), ao);
  return Status::OK();
}

std::string ServingMessage(const FsMountConfig& c, const meta::FormatRecord& f) {
  return "volume '" + f.name + "' mounted at " + c.mountpoint + " (pid " +
         std::to_string(getpid()) + ", " + (c.read_only ? "read-only, " : "") +
         (c.shared ? "shared, " : "") + "policy " +
         c.policy.ToString() + ", cache " + FormatSize(c.cache_bytes) +
         (c.meta_sync_each ? "" : ", metadata durable at fsync and every " +
                                      FormatElapsed(c.meta_commit_ms)) +
         ", store " +
         f.store_url + "); stop with Ctrl-C or 'folio fs umount " + c.mountpoint + "'";
}

// After the mount is gone: commit everything and end the session. Returns the exit code.
int Shutdown(MountState* st, const Status& loop) {
  int code = kExitOk;
  if (!loop.ok()) {
    fuse::Log("serving loop failed: " + loop.ToString());
    code = kExitRuntime;
  }
  fuse::Log("unmounted; committing every file's data");
  st->server.reset();
  st->adapter.reset();
  Status s = st->fs->Unmount();
  if (!s.ok()) {
    fuse::Log("unmount of the volume failed: " + s.ToString() +
              "; data not committed is lost, run 'folio fs fsck'");
    code = kExitRuntime;
  }
  st->fs.reset();
  st->cache.reset();
  fuse::Log(code == kExitOk ? "done: all data committed" : "done, with errors (see above)");
  return code;
}

int Serve(const FsMountConfig& c, fuse::Daemon* daemon) {
  ServeOutcome out(kMountPrefix, daemon);
  // Before any thread exists, so every thread inherits the blocked shutdown signals.
  Result<std::unique_ptr<fuse::ShutdownSignals>> signals = fuse::ShutdownSignals::Start();
  if (!signals.ok()) return out.Fail(signals.status());
  MountState st;
  Status s = OpenAll(c, &st);
  if (!s.ok()) {
    if (st.fs) (void)st.fs->Unmount();
    return out.Fail(s);
  }
  if ((*signals)->received() != 0) {
    (void)st.fs->Unmount();
    return out.Fail(Status::Again("interrupted by a signal before mounting; nothing was mounted"));
  }
  fuse::MountOptions mo;
  mo.mountpoint = c.mountpoint;
  mo.subtype = "folio-fs";
  mo.max_threads = c.threads;
  mo.allow_other = c.allow_other;
  mo.read_only = c.read_only;
  mo.debug = c.debug;
  mo.default_permissions = true;
  mo.locks = true;
  mo.readdirplus = true;
  mo.parallel_dirops = true;
  mo.writeback_cache = c.writeback_cache;
  mo.attr_timeout_s = c.attr_timeout_s;
  mo.poll_us = c.poll_us;
  Result<std::unique_ptr<fuse::FuseServer>> server = fuse::FuseServer::Mount(st.adapter.get(), mo);
  if (!server.ok()) {
    (void)st.fs->Unmount();  // the session goes again: nothing is left behind
    return out.Fail(server.status());
  }
  st.server = std::move(server.value());
  st.adapter->SetRequestStats(&st.server->stats());

  Status loop = ServeUntilUnmounted(st.server.get(), signals->get(), &out, c.log_path,
                                    ServingMessage(c, st.volume.format));
  return Shutdown(&st, loop);
}

}  // namespace

int RunFsMount(const FsMountConfig& c) {
  fuse::SetLogPrefix(kMountPrefix);
  return RunForegroundOrDaemon(kMountPrefix, c.daemon,
                               [&](fuse::Daemon* daemon) { return Serve(c, daemon); });
}

int RunFsUmount(const FsUmountConfig& c) {
  constexpr char kUmount[] = "folio fs umount";
  fuse::SetLogPrefix(kUmount);
  const UnmountResult r = UnmountAndWait(c.mountpoint, c.lazy, c.timeout_ms);
  switch (r.end) {
    case UnmountEnd::kNotMounted:
      return UsageError(kUmount, c.mountpoint + ": not a FUSE mount point; nothing to unmount");
    case UnmountEnd::kFailed:
      return ExitWithStatus(kUmount, r.status);
    case UnmountEnd::kServerStillRunning:
      return RuntimeError(kUmount, c.mountpoint + ": unmounted, but " + std::string(r.status.message()) +
                                       " (still committing?); wait for it or check its log");
    case UnmountEnd::kDetached:
    case UnmountEnd::kDone:
      break;
  }
  return kExitOk;
}

}  // namespace folio::cli
