// Daemon: `--daemon` for FUSE servers. The process forks before it creates any thread (the
// page cache, io_uring and FUSE workers do not survive a fork); the child does all the work
// and reports a verdict through a pipe, the parent waits for it and exits with it, so the
// shell sees the real outcome: 0 once the mount is up, or the child's exit code and its
// one-line error. The mount and its locks belong to the child, whose PID is the one the mount
// is named after.
//
// Thread safety: Fork from a single-threaded process; the rest from the child's main thread.
#pragma once

#include <string>
#include <string_view>

#include "folio/status.h"

namespace folio::fuse {

struct DaemonVerdict {
  int exit_code = 1;
  std::string message;  // the child's error line, or its "mounted" notice
};

class Daemon {
 public:
  enum class Side { kParent, kChild };

  // REQUIRES: the process has a single thread.
  static Result<Daemon> Fork();
  Daemon(Daemon&& other) noexcept;
  Daemon& operator=(Daemon&&) = delete;
  ~Daemon();

  Side side() const { return side_; }

  // Parent: waits for the child's verdict. A child that dies before reporting yields exit
  // code 1 and a message saying so.
  DaemonVerdict WaitForVerdict();

  // Child: start-up succeeded. Detaches stdin / stdout (to /dev/null) and stderr (to
  // log_path, appended, or /dev/null), changes to "/", and lets the parent exit 0 after
  // printing `message` (may be empty).
  Status ReportReady(const std::string& log_path, std::string_view message);
  // Child: start-up failed; the parent prints `message` and exits with exit_code.
  void ReportFailure(int exit_code, std::string_view message);

 private:
  Daemon(Side side, int fd) : side_(side), fd_(fd) {}
  void Send(int exit_code, std::string_view message);

  Side side_;
  int fd_;  // parent: read end; child: write end (-1 once reported)
};

}  // namespace folio::fuse
