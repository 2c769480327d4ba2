#include "fuse/shutdown_signals.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace folio::fuse {

namespace {

sigset_t ShutdownSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

Result<std::unique_ptr<ShutdownSignals>> ShutdownSignals::Start() {
  signal(SIGPIPE, SIG_IGN);
  sigset_t set = ShutdownSet();
  const int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr);
  if (rc != 0) return Status::FromErrno(rc, "pthread_sigmask");
  const int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) return Status::FromErrno(errno, "signalfd");
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) {
    const int err = errno;
    close(sfd);
    return Status::FromErrno(err, "eventfd");
  }
  std::unique_ptr<ShutdownSignals> s(new ShutdownSignals(sfd, efd));
  s->thread_ = std::thread([p = s.get()] { p->Watch(); });
  return s;
}

ShutdownSignals::ShutdownSignals(int signal_fd, int stop_fd)
    : signal_fd_(signal_fd), stop_fd_(stop_fd) {}

ShutdownSignals::~ShutdownSignals() {
  const uint64_t one = 1;
  ssize_t n = write(stop_fd_, &one, sizeof(one));
  (void)n;
  if (thread_.joinable()) thread_.join();
  close(signal_fd_);
  close(stop_fd_);
}

void ShutdownSignals::SetHandler(Handler handler) {
  int pending = 0;
  Handler h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = std::move(handler);
    pending = pending_;
    pending_ = 0;
    h = handler_;
  }
  if (pending != 0 && h) h(pending);
}

void ShutdownSignals::Watch() {
  pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    signalfd_siginfo info;
    while (read(signal_fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
      const int signo = static_cast<int>(info.ssi_signo);
      received_.store(signo, std::memory_order_release);
      Handler h;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!handler_) {
          pending_ = signo;
          continue;
        }
        h = handler_;
      }
      h(signo);
    }
  }
}

}  // namespace folio::fuse
