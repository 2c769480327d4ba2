#include "cli/fuse_serve.h"

#include <unistd.h>

#include "cli/cli_util.h"
#include "fuse/log.h"
#include "fuse/mount_point.h"

namespace folio::cli {

int ServeOutcome::Fail(const Status& s) {
  if (daemon_ == nullptr) return ExitWithStatus(prefix_, s);
  const int code = ExitCodeFor(s);
  daemon_->ReportFailure(code, OneLine(StatusLine(s)));
  return code;
}

Status ServeOutcome::Ready(const std::string& log_path, const std::string& message) {
  if (daemon_ != nullptr) return daemon_->ReportReady(log_path, message);
  fuse::Log(message);
  return Status::OK();
}

int RunForegroundOrDaemon(std::string_view prefix, bool daemon,
                          const std::function<int(fuse::Daemon*)>& serve) {
  if (!daemon) return serve(nullptr);
  Result<fuse::Daemon> d = fuse::Daemon::Fork();
  if (!d.ok()) return ExitWithStatus(prefix, d.status());
  if (d->side() == fuse::Daemon::Side::kParent) {
    fuse::DaemonVerdict v = d->WaitForVerdict();
    if (!v.message.empty()) PrintError(prefix, v.message);
    return v.exit_code;
  }
  return serve(&d.value());
}

Status ServeUntilUnmounted(fuse::FuseServer* server, fuse::ShutdownSignals* signals,
                           ServeOutcome* out, const std::string& log_path,
                           const std::string& ready_message) {
  signals->SetHandler([server](int signo) {
    fuse::Log("signal " + std::to_string(signo) + ": unmounting");
    server->RequestUnmount();
  });
  Status s = out->Ready(log_path, ready_message);
  if (!s.ok()) {
    // Only a daemon whose log cannot be opened gets here; its parent already has the verdict
    // path closed, so say it on the old stderr and shut down cleanly.
    fuse::Log(s.ToString());
    server->RequestUnmount();
  }
  Status loop = server->Run();
  signals->SetHandler(
      [](int signo) { fuse::Log("signal " + std::to_string(signo) + ": already shutting down"); });
  return loop;
}

UnmountResult UnmountAndWait(const std::string& mountpoint, bool lazy, uint64_t timeout_ms) {
  UnmountResult r;
  Result<fuse::MountEntry> m = fuse::FindFuseMount(mountpoint);
  if (!m.ok()) {
    r.end = UnmountEnd::kNotMounted;
    r.status = m.status();
    return r;
  }
  r.pid = m->pid;
  r.status = fuse::UnmountPath(mountpoint, lazy ? fuse::UnmountMode::kLazy : fuse::UnmountMode::kNormal);
  if (!r.status.ok()) {
    r.end = UnmountEnd::kFailed;
    return r;
  }
  if (r.pid <= 0 || r.pid == getpid()) return r;  // no server process to wait for
  if (lazy) {
    r.end = UnmountEnd::kDetached;
    return r;
  }
  r.status = fuse::WaitForExit(r.pid, timeout_ms);
  if (!r.status.ok()) r.end = UnmountEnd::kServerStillRunning;
  return r;
}

}  // namespace folio::cli
