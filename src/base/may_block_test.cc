#include "base/may_block.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace folio {
namespace {

void Count(void* arg) { ++*static_cast<int*>(arg); }

TEST(MayBlockTest, WithoutAHookItDoesNothing) {
  MayBlock();  // no hook installed on this thread: must not crash
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  WaitWithHint(cv, lock, [] { return true; });
  EXPECT_TRUE(lock.owns_lock());
}

TEST(MayBlockTest, HooksNestAndAreRestored) {
  int outer = 0, inner = 0;
  {
    ScopedMayBlockHook a(&Count, &outer);
    MayBlock();
    {
      ScopedMayBlockHook b(&Count, &inner);
      MayBlock();
      MayBlock();
    }
    MayBlock();
  }
  MayBlock();  // both scopes ended: nothing counts
  EXPECT_EQ(outer, 2);
  EXPECT_EQ(inner, 2);
}

TEST(MayBlockTest, TheHookIsPerThread) {
  int here = 0, there = 0;
  ScopedMayBlockHook h(&Count, &here);
  std::thread t([&] {
    MayBlock();  // this thread has no hook
    ScopedMayBlockHook own(&Count, &there);
    MayBlock();
  });
  t.join();
  EXPECT_EQ(here, 0);
  EXPECT_EQ(there, 1);
}

TEST(MayBlockTest, WaitWithHintHintsOnlyWhenTheWaitBlocks) {
  int hints = 0;
  ScopedMayBlockHook h(&Count, &hints);
  std::mutex mu;
  std::condition_variable cv;
  bool ready = true;
  {
    std::unique_lock<std::mutex> lock(mu);
    WaitWithHint(cv, lock, [&] { return ready; });  // holds already: returns, no hint
    ASSERT_TRUE(lock.owns_lock());
  }
  EXPECT_EQ(hints, 0);

  ready = false;
  std::thread setter;
  {
    std::unique_lock<std::mutex> lock(mu);
    setter = std::thread([&] {
      std::lock_guard<std::mutex> l(mu);  // runs once the waiter released mu in cv.wait
      ready = true;
      cv.notify_all();
    });
    WaitWithHint(cv, lock, [&] { return ready; });
    EXPECT_TRUE(ready);
    EXPECT_TRUE(lock.owns_lock());
  }
  setter.join();
  EXPECT_EQ(hints, 1);  // one hint for one wait, however many wakeups it took
}

}  // namespace
}  // namespace folio
