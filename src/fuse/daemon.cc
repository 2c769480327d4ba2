#include "fuse/daemon.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace folio::fuse {

Result<Daemon> Daemon::Fork() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return Status::FromErrno(err, "fork");
  }
  if (pid > 0) {
    close(fds[1]);
    return Daemon(Side::kParent, fds[0]);
  }
  close(fds[0]);
  setsid();
  return Daemon(Side::kChild, fds[1]);
}

Daemon::Daemon(Daemon&& other) noexcept : side_(other.side_), fd_(other.fd_) { other.fd_ = -1; }

Daemon::~Daemon() {
  if (fd_ >= 0) close(fd_);
}

DaemonVerdict Daemon::WaitForVerdict() {
  std::string data;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n > 0) {
      data.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  DaemonVerdict v;
  const size_t nl = data.find('\n');
  if (nl == std::string::npos) {
    v.exit_code = 1;
    v.message = "the daemon exited during start-up without saying why (see its log)";
    return v;
  }
  v.exit_code = std::atoi(data.substr(0, nl).c_str());
  v.message = data.substr(nl + 1);
  return v;
}

void Daemon::Send(int exit_code, std::string_view message) {
  if (fd_ < 0) return;
  std::string data = std::to_string(exit_code) + "\n" + std::string(message);
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  close(fd_);
  fd_ = -1;
}

Status Daemon::ReportReady(const std::string& log_path, std::string_view message) {
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) return Status::FromErrno(errno, "/dev/null");
  int err_fd = null_fd;
  if (!log_path.empty()) {
    err_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (err_fd < 0) {
      const int err = errno;
      close(null_fd);
      return Status::FromErrno(err, "--log " + log_path);
    }
  }
  Send(0, message);
  dup2(null_fd, STDIN_FILENO);
  dup2(null_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  if (err_fd != null_fd) close(err_fd);
  close(null_fd);
  if (chdir("/") != 0) return Status::FromErrno(errno, "chdir /");
  return Status::OK();
}

void Daemon::ReportFailure(int exit_code, std::string_view message) { Send(exit_code, message); }

}  // namespace folio::fuse
