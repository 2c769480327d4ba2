#include "fuse/request_loop.h"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "base/clock.h"
#include "base/may_block.h"

namespace folio::fuse {

namespace {

// With no request for this long the watchdog stops polling until the next one starts.
constexpr uint64_t kQuietNs = 100'000'000;

}  // namespace

struct RequestLoop::Reader {
  RequestLoop* loop;
  uint64_t epoch;
};

RequestLoop::RequestLoop(RequestSource* source, const RequestLoopOptions& options)
    : source_(source), options_(options) {}

RequestLoop::~RequestLoop() = default;

void RequestLoop::OnMayBlock(void* arg) {
  auto* r = static_cast<Reader*>(arg);
  r->loop->HandOff(r->epoch, /*hinted=*/true);
}

int RequestLoop::Run() {
  {
    std::lock_guard<std::mutex> l(mu_);
    StartThreadLocked();
  }
  watchdog_ = std::thread([this] { Watch(); });
  {
    std::unique_lock<std::mutex> l(mu_);
    all_done_.wait(l, [&] { return done_; });
    // The workers still blocked in Receive: when the connection ends the kernel wakes them
    // all, but not when one reader saw an error; cancelled there (the only place where their
    // cancellation is enabled), as libfuse's loop does.
    for (size_t i = 0; i < threads_.size(); ++i) {
      if (in_receive_[i]->load()) pthread_cancel(threads_[i].native_handle());
    }
    cv_.notify_all();
  }
  // No thread starts once done_ is set, so threads_ is stable here.
  for (std::thread& t : threads_) t.join();
  {
    std::lock_guard<std::mutex> l(watch_mu_);
    watch_stop_ = true;
  }
  watch_cv_.notify_all();
  watchdog_.join();
  for (std::atomic<bool>* f : in_receive_) delete f;
  in_receive_.clear();
  std::lock_guard<std::mutex> l(mu_);
  return error_;
}

RequestLoopStats RequestLoop::stats() const {
  RequestLoopStats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.handoffs_hinted = handoffs_hinted_.load(std::memory_order_relaxed);
  s.handoffs_stalled = handoffs_stalled_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(mu_);
  s.threads = threads_.size();
  return s;
}

void RequestLoop::StartThreadLocked() {
  if (done_ || threads_.size() >= std::max<uint32_t>(options_.max_threads, 1)) return;
  auto* in_receive = new std::atomic<bool>(false);
  in_receive_.push_back(in_receive);
  threads_.emplace_back([this, in_receive] {
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, nullptr);
    void* w = source_->NewWorker();
    struct FreeAtExit {  // also when cancelled in Receive (the unwind runs destructors)
      RequestSource* s;
      void* w;
      ~FreeAtExit() { s->FreeWorker(w); }
    } free_at_exit{source_, w};
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      ++waiting_;
      cv_.wait(l, [&] { return !reading_ || done_; });
      --waiting_;
      if (done_) return;
      reading_ = true;
      const uint64_t epoch = epoch_.fetch_add(1) + 1;
      l.unlock();
      Serve(w, epoch, in_receive);
      l.lock();
    }
  });
}

void RequestLoop::Serve(void* w, uint64_t epoch, std::atomic<bool>* in_receive) {
  Reader reader{this, epoch};
  ScopedMayBlockHook hook(&OnMayBlock, &reader);
  for (;;) {
    in_receive->store(true);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, nullptr);
    const int rc = source_->Receive(w);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, nullptr);
    in_receive->store(false);
    if (rc == -EINTR) continue;
    if (rc <= 0) {
      Finish(rc);
      return;
    }
    requests_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t start = MonotonicNowNs() | 1;  // never 0, which means "reading"
    busy_since_.store(start);
    if (watch_asleep_.load()) {
      std::lock_guard<std::mutex> l(watch_mu_);
      watch_cv_.notify_one();
    }
    source_->Process(w);
    uint64_t mine = start;  // a handoff cleared it, and the next reader may have set its own
    busy_since_.compare_exchange_strong(mine, 0);
    if (epoch_.load() != epoch) return;  // handed off: another thread reads now
  }
}

void RequestLoop::HandOff(uint64_t epoch, bool hinted) {
  if (epoch_.load() != epoch) return;  // already handed off (a second hint in one request)
  std::lock_guard<std::mutex> l(mu_);
  if (epoch_.load() != epoch || done_ || !reading_) return;
  HandOffLocked(hinted);
}

void RequestLoop::StealIfStalled(uint64_t since) {
  std::lock_guard<std::mutex> l(mu_);
  if (busy_since_.load() != since || done_ || !reading_) return;
  HandOffLocked(/*hinted=*/false);
}

void RequestLoop::HandOffLocked(bool hinted) {
  epoch_.fetch_add(1);
  reading_ = false;
  busy_since_.store(0);  // the old reader's request is no longer the reading's stall
  (hinted ? handoffs_hinted_ : handoffs_stalled_).fetch_add(1, std::memory_order_relaxed);
  if (waiting_ > 0) {
    cv_.notify_one();
  } else {
    StartThreadLocked();  // at max_threads: the next worker done with its request reads
  }
}

void RequestLoop::Finish(int rc) {
  std::lock_guard<std::mutex> l(mu_);
  if (!done_) {
    done_ = true;
    error_ = rc < 0 ? rc : 0;
  }
  reading_ = false;
  cv_.notify_all();
  all_done_.notify_all();
}

void RequestLoop::Watch() {
  const auto poll = std::chrono::nanoseconds(std::max<uint64_t>(options_.stall_ns / 2, 1000));
  std::unique_lock<std::mutex> l(watch_mu_);
  uint64_t seen = requests_.load();
  uint64_t quiet_since = MonotonicNowNs();
  while (!watch_stop_) {
    watch_cv_.wait_for(l, poll);
    if (watch_stop_) break;
    const uint64_t now = MonotonicNowNs();
    const uint64_t since = busy_since_.load();
    if (since != 0 && now - since >= options_.stall_ns) {
      l.unlock();
      StealIfStalled(since);
      l.lock();
    }
    const uint64_t n = requests_.load();
    if (n != seen) {
      seen = n;
      quiet_since = now;
      continue;
    }
    if (since == 0 && now - quiet_since >= kQuietNs) {
      // Idle: no polling until a request starts (its reader wakes us, once).
      watch_asleep_.store(true);
      if (busy_since_.load() == 0 && requests_.load() == seen && !watch_stop_) watch_cv_.wait(l);
      watch_asleep_.store(false);
      seen = requests_.load();
      quiet_since = MonotonicNowNs();
    }
  }
}

}  // namespace folio::fuse
