// RequestLoop: serves a FUSE session's requests with one reading thread at a time.
//
// libfuse's multi-threaded loop leaves every idle worker blocked in read() on /dev/fuse, and
// the kernel wakes them in turn: a client's next request (and the FORGET that follows each
// UNLINK) wakes a thread that is not running. On this 2-core VM that cost about 20 us of
// mount CPU per extra context switch (docs/fs.md, "Worker threads": 5.0 switches and 126-152 us
// of CPU per unlink with 16 threads, 3.1 and 80-118 us with one). Here the thread that read a request serves it and then reads the next itself,
// so back-to-back requests that never wait are served by one running thread. The reading moves
// to another thread only when the request may wait:
//
//   - a hint: code below calls MayBlock() (base/may_block.h) before a wait (store I/O, a lock
//     another request may release, an fsync, a server's round trip); the reading thread then
//     wakes a waiting worker (or starts one, up to max_threads) to read the next request, and
//     goes on with its own; when it is done it waits to read again;
//   - the watchdog: a request that has run stall_ns without a hint hands the reading on the
//     same way, so a wait the hints miss (or a lock wait whose release is another request)
//     delays the requests behind it by about stall_ns, never forever.
//
//        reader A: read, serve, read, serve ── MayBlock() ──┐ (B reads from here on)
//        worker B: (waiting) ───────────────────────── woken: read, serve, read ...
//        A, its request done: waits until the reading is free again
//
// Several threads may read at once for a moment (a handoff racing the reader's next read);
// that is what libfuse does all the time, so it is only slower, never wrong.
//
// Thread safety: Run() once, from one thread; stats() from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace folio::fuse {

// Where the requests come from (libfuse's session, or a test's queue).
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // A worker's own state (libfuse: its receive buffer), made on its thread before its first
  // Receive and freed on it after its last.
  virtual void* NewWorker() = 0;
  virtual void FreeWorker(void* worker) = 0;
  // Blocks until a request is in the worker's state: > 0 one is, 0 the session ended, -EINTR
  // try again, any other negative errno ends the loop with that error.
  virtual int Receive(void* worker) = 0;
  // Serves the request Receive left in the worker's state.
  virtual void Process(void* worker) = 0;
};

struct RequestLoopOptions {
  uint32_t max_threads = 16;     // threads serving requests, the reader included
  uint64_t stall_ns = 2'000'000;  // a request running this long without a hint hands on
};

struct RequestLoopStats {
  uint64_t requests = 0;
  uint64_t handoffs_hinted = 0;   // by MayBlock()
  uint64_t handoffs_stalled = 0;  // by the watchdog
  uint64_t threads = 0;           // started so far
};

class RequestLoop {
 public:
  RequestLoop(RequestSource* source, const RequestLoopOptions& options);
  ~RequestLoop();
  RequestLoop(const RequestLoop&) = delete;
  RequestLoop& operator=(const RequestLoop&) = delete;

  // Serves until Receive reports the end (returns 0) or an error (returns it, a negative
  // errno). On an error the threads still blocked in Receive are cancelled there, as libfuse's
  // loop does. Context: blocks; called once.
  int Run();

  RequestLoopStats stats() const;

 private:
  struct Reader;
  static void OnMayBlock(void* arg);

  // Reads and serves until the reading is handed off or the session ends.
  void Serve(void* worker, uint64_t epoch, std::atomic<bool>* in_receive);
  // Gives the reading up if `epoch` still holds it (a hint), or if the request that started
  // at `since` still runs (the watchdog).
  void HandOff(uint64_t epoch, bool hinted);
  void StealIfStalled(uint64_t since);
  void HandOffLocked(bool hinted);  // REQUIRES: mu_ held
  void StartThreadLocked();         // REQUIRES: mu_ held
  void Finish(int rc);
  void Watch();

  RequestSource* const source_;
  const RequestLoopOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // workers waiting to read
  bool reading_ = false;        // GUARDED_BY(mu_): a thread holds the reading
  bool done_ = false;           // GUARDED_BY(mu_)
  int error_ = 0;               // GUARDED_BY(mu_)
  uint32_t waiting_ = 0;        // GUARDED_BY(mu_): workers in cv_.wait
  std::vector<std::thread> threads_;             // GUARDED_BY(mu_)
  std::vector<std::atomic<bool>*> in_receive_;   // GUARDED_BY(mu_): per thread, for cancelling
  std::condition_variable all_done_;

  // Changes at every grant and handoff of the reading: a reader whose epoch is no longer
  // current has been handed off.
  std::atomic<uint64_t> epoch_{0};
  // When the current reader's request started (MonotonicNowNs), 0 while it reads.
  std::atomic<uint64_t> busy_since_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> handoffs_hinted_{0}, handoffs_stalled_{0};

  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool watch_stop_ = false;           // GUARDED_BY(watch_mu_)
  std::atomic<bool> watch_asleep_{false};  // the watchdog waits for the next request
  std::thread watchdog_;
};

}  // namespace folio::fuse
