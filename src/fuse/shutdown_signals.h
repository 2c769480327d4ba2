// ShutdownSignals: SIGINT, SIGTERM and SIGHUP delivered to one watcher thread instead of
// interrupting whichever thread the kernel picks (an io_uring wait, a FUSE worker, a page
// cache writeback thread), so no other code of the process ever sees EINTR from them.
//
// Start() blocks the three signals in the calling thread, so it must run before the process
// creates any other thread (threads inherit the mask). SIGPIPE is ignored. The watcher calls
// the handler once per signal; a signal that arrives before a handler is set is remembered and
// handed to the handler when it is set.
//
// Thread safety: SetHandler and received() from any thread; the handler runs on the watcher.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "folio/status.h"

namespace folio::fuse {

class ShutdownSignals {
 public:
  using Handler = std::function<void(int signo)>;

  // REQUIRES: no other thread of the process exists yet (or they all block the signals).
  static Result<std::unique_ptr<ShutdownSignals>> Start();
  ~ShutdownSignals();
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  void SetHandler(Handler handler);
  // The last signal received, or 0.
  int received() const { return received_.load(std::memory_order_acquire); }

 private:
  ShutdownSignals(int signal_fd, int stop_fd);
  void Watch();

  const int signal_fd_;
  const int stop_fd_;
  std::atomic<int> received_{0};
  std::mutex mu_;
  Handler handler_;     // GUARDED_BY(mu_)
  int pending_ = 0;     // GUARDED_BY(mu_): received before a handler was set
  std::thread thread_;
};

}  // namespace folio::fuse
