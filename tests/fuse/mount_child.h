// A `folio fs mount` run by a test as its child process (fork + exec of the built `folio`
// binary, in the foreground, its stderr appended to a log file), and the other `folio`
// commands a test runs to completion with their output captured.
//
// MountChild::Start returns once the mount point is a FUSE mount served by the child (its st_dev
// changed and /proc/self/mountinfo lists it); Stop is a clean `folio fs umount` (the server
// writes everything back and must exit 0); Kill9 is a crash: SIGKILL, reap, lazy unmount of the
// dead mount point. The destructor kills and detaches whatever is still running, so a failing
// test leaves nothing mounted.
//
// Thread safety: none; one test thread owns a MountChild.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "folio/status.h"

namespace folio::fuse::test {

struct CommandResult {
  int code = -1;       // exit code; 128 + signal when killed
  std::string output;  // stdout and stderr
};

// Runs argv (argv[0] is a path) to completion.
CommandResult RunCommand(const std::vector<std::string>& argv);

class MountChild {
 public:
  MountChild(std::string folio_binary, std::string meta_url, std::string mountpoint,
             std::string log_path);
  ~MountChild();
  MountChild(const MountChild&) = delete;
  MountChild& operator=(const MountChild&) = delete;

  // `folio fs mount META MOUNTPOINT ARGS...`; waits (up to 60 s) until it serves the mount.
  Status Start(const std::vector<std::string>& args);
  // `folio fs umount MOUNTPOINT`, then waits for the server, which must exit 0.
  Status Stop();
  // kill -9 of the server, reaped; then the dead mount point is detached (umount -l).
  Status Kill9();
  bool running() const { return pid_ > 0; }
  // The last lines of the log (for failure messages).
  std::string LogTail() const;

 private:
  const std::string folio_, meta_, dir_, log_;
  pid_t pid_ = -1;
};

}  // namespace folio::fuse::test
