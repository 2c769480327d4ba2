// What `folio export` and `folio fs mount` share around their FUSE server: where a start-up
// failure goes (stderr in the foreground, the waiting parent with --daemon), running in the
// foreground or as a daemon, serving until unmounted with SIGINT / SIGTERM turned into an
// unmount, and unmounting a mount point and waiting for its server to exit.
//
// Thread safety: everything here runs on the command's main thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "folio/status.h"
#include "fuse/daemon.h"
#include "fuse/session.h"
#include "fuse/shutdown_signals.h"

namespace folio::cli {

// Where a start-up failure or the ready message goes.
class ServeOutcome {
 public:
  // daemon: null in the foreground. prefix: the command ("folio export"), for stderr lines.
  ServeOutcome(std::string_view prefix, fuse::Daemon* daemon) : prefix_(prefix), daemon_(daemon) {}
  // Reports s (one line) and returns its exit code.
  int Fail(const Status& s);
  // Mounted and serving: the parent of a daemon prints message and exits 0; in the foreground
  // it is logged.
  Status Ready(const std::string& log_path, const std::string& message);

 private:
  const std::string prefix_;
  fuse::Daemon* const daemon_;
};

// serve(nullptr) in the foreground; with daemon, forks: the parent waits for the child's
// verdict (ready or one failure line) and returns its exit code, the child runs serve(daemon).
int RunForegroundOrDaemon(std::string_view prefix, bool daemon,
                          const std::function<int(fuse::Daemon*)>& serve);

// Serves until the mount is gone: SIGINT / SIGTERM request an unmount, the ready message is
// reported (a daemon whose log cannot be opened logs why on the old stderr and unmounts
// cleanly), and after the loop a second signal only says the server is shutting down.
// Returns the serving loop's status.
Status ServeUntilUnmounted(fuse::FuseServer* server, fuse::ShutdownSignals* signals,
                           ServeOutcome* out, const std::string& log_path,
                           const std::string& ready_message);

// How an unmount ended, for the command's own messages.
enum class UnmountEnd { kNotMounted, kFailed, kDone, kDetached, kServerStillRunning };
struct UnmountResult {
  UnmountEnd end = UnmountEnd::kDone;
  Status status;  // kFailed: why; kServerStillRunning: what the wait says
  int pid = 0;    // the server process, when known
};
// Unmounts mountpoint (lazily: detached, the server exits after the last user closes) and,
// unless lazy, waits up to timeout_ms for its server process to exit.
UnmountResult UnmountAndWait(const std::string& mountpoint, bool lazy, uint64_t timeout_ms);

}  // namespace folio::cli
