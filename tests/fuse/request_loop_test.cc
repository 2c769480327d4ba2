// RequestLoop with a queue for a session: who reads, when the reading moves, and that a
// request waiting for a later one (a lock wait and the unlock that ends it) never hangs the
// loop, hinted or not.
#include "fuse/request_loop.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "base/may_block.h"

namespace folio::fuse {
namespace {

using Action = std::function<void()>;

// Requests are actions in a queue; an empty action ends the session (Receive returns 0).
class QueueSource final : public RequestSource {
 public:
  void Push(Action a) {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(a));
    cv_.notify_one();
  }
  void End() { Push(nullptr); }

  void* NewWorker() override { return new Action; }
  void FreeWorker(void* w) override { delete static_cast<Action*>(w); }
  int Receive(void* w) override {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !queue_.empty(); });
    if (!queue_.front()) return 0;  // stays queued: every reader sees the end
    *static_cast<Action*>(w) = std::move(queue_.front());
    queue_.pop_front();
    return 1;
  }
  void Process(void* w) override { (*static_cast<Action*>(w))(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Action> queue_;
};

// A one-shot event with a deadline, so a broken loop fails the test instead of hanging it.
class Event {
 public:
  void Set() {
    std::lock_guard<std::mutex> l(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool WaitFor(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, limit, [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

constexpr auto kLimit = std::chrono::seconds(30);

TEST(RequestLoopTest, RequestsThatNeverWaitAreAllServedByOneThread) {
  QueueSource source;
  RequestLoopOptions o;
  o.stall_ns = 60'000'000'000;  // no watchdog handoff in this test
  RequestLoop loop(&source, o);
  std::mutex mu;
  std::set<std::thread::id> servers;
  int served = 0;
  for (int i = 0; i < 1000; ++i) {
    source.Push([&] {
      std::lock_guard<std::mutex> l(mu);
      servers.insert(std::this_thread::get_id());
      ++served;
    });
  }
  source.End();
  EXPECT_EQ(loop.Run(), 0);
  EXPECT_EQ(served, 1000);
  EXPECT_EQ(servers.size(), 1u);
  const RequestLoopStats s = loop.stats();
  EXPECT_EQ(s.requests, 1000u);
  EXPECT_EQ(s.threads, 1u);
  EXPECT_EQ(s.handoffs_hinted + s.handoffs_stalled, 0u);
}

// The first request waits for the second, as a lock wait does for the unlock: it can end only
// if another thread reads on while it waits.
void RunWaitForALaterRequest(bool hint, uint64_t stall_ns, RequestLoopStats* stats) {
  QueueSource source;
  RequestLoopOptions o;
  o.stall_ns = stall_ns;
  RequestLoop loop(&source, o);
  Event unlocked;
  bool waited = false;
  std::thread::id waiter, unlocker;
  source.Push([&] {
    waiter = std::this_thread::get_id();
    if (hint) MayBlock();
    waited = unlocked.WaitFor(kLimit);
  });
  source.Push([&] {
    unlocker = std::this_thread::get_id();
    unlocked.Set();
  });
  source.End();
  EXPECT_EQ(loop.Run(), 0);
  EXPECT_TRUE(waited) << "the second request was not read while the first waited";
  EXPECT_NE(waiter, unlocker);
  *stats = loop.stats();
}

TEST(RequestLoopTest, AHintHandsTheReadingToAnotherThreadAtOnce) {
  RequestLoopStats s;
  RunWaitForALaterRequest(/*hint=*/true, /*stall_ns=*/60'000'000'000, &s);
  EXPECT_EQ(s.handoffs_hinted, 1u);
  EXPECT_EQ(s.handoffs_stalled, 0u);
  EXPECT_EQ(s.threads, 2u);
  EXPECT_EQ(s.requests, 2u);
}

TEST(RequestLoopTest, TheWatchdogHandsOnARequestThatWaitsWithoutAHint) {
  RequestLoopStats s;
  RunWaitForALaterRequest(/*hint=*/false, /*stall_ns=*/5'000'000, &s);
  EXPECT_EQ(s.handoffs_hinted, 0u);
  // At least the first request's stall; a loaded machine (qemu, sanitizers) may also hold the
  // second one past 5 ms, and the watchdog then hands on once more.
  EXPECT_GE(s.handoffs_stalled, 1u);
  EXPECT_GE(s.threads, 2u);
}

// Hints from threads that do not read (a background flusher's waits) and a second hint in one
// request change nothing.
TEST(RequestLoopTest, OnlyTheReadersFirstHintHandsOn) {
  QueueSource source;
  RequestLoopOptions o;
  o.stall_ns = 60'000'000'000;
  RequestLoop loop(&source, o);
  source.Push([] {
    std::thread([] { MayBlock(); }).join();
    MayBlock();
    MayBlock();
  });
  source.End();
  EXPECT_EQ(loop.Run(), 0);
  EXPECT_EQ(loop.stats().handoffs_hinted, 1u);
}

// Every request waits until max_threads of them wait together: the loop must reach exactly
// max_threads threads and go no further.
TEST(RequestLoopTest, ThreadsGrowToMaxThreadsAndNoFurther) {
  constexpr int kMax = 3;
  QueueSource source;
  RequestLoopOptions o;
  o.max_threads = kMax;
  o.stall_ns = 5'000'000;  // the waits below are also reached without a hint after a while
  RequestLoop loop(&source, o);
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  bool all_met = true;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < kMax; ++i) {
      source.Push([&, i] {
        if (i % 2 == 0) MayBlock();
        std::unique_lock<std::mutex> l(mu);
        const int target = (arrived / kMax + 1) * kMax;
        ++arrived;
        cv.notify_all();
        if (!cv.wait_for(l, kLimit, [&] { return arrived >= target; })) all_met = false;
      });
    }
  }
  source.End();
  EXPECT_EQ(loop.Run(), 0);
  EXPECT_TRUE(all_met);
  EXPECT_EQ(arrived, 4 * kMax);
  EXPECT_EQ(loop.stats().threads, static_cast<uint64_t>(kMax));
}

// An error from Receive ends the loop with it.
TEST(RequestLoopTest, AReceiveErrorEndsTheLoopWithIt) {
  class Failing final : public RequestSource {
   public:
    void* NewWorker() override { return nullptr; }
    void FreeWorker(void*) override {}
    int Receive(void*) override { return ++calls_ < 3 ? -EINTR : -EIO; }
    void Process(void*) override { ADD_FAILURE() << "nothing was received"; }
    int calls_ = 0;
  } source;
  RequestLoop loop(&source, RequestLoopOptions{});
  EXPECT_EQ(loop.Run(), -EIO);
  EXPECT_EQ(source.calls_, 3) << "EINTR is retried";
}

}  // namespace
}  // namespace folio::fuse
