#include "base/clock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace folio {
namespace {

TEST(ClockTest, SystemClockMovesForwardAndSleepsUntilTheDeadline) {
  const uint64_t t0 = MonotonicNowNs();
  SleepUntilNs(t0 + 2000000);  // 2 ms
  EXPECT_GE(MonotonicNowNs(), t0 + 2000000);
  EXPECT_GE(SystemClock().NowNs(), t0 + 2000000);
  SleepUntilNs(t0);  // a deadline in the past returns at once
}

TEST(ClockTest, AManualClockReplacesTimeEverywhereUntilTheScopeEnds) {
  ManualClock clock(5000);
  {
    ScopedClockOverride use(&clock);
    EXPECT_EQ(MonotonicNowNs(), 5000u);
    clock.AdvanceNs(2000000);
    EXPECT_EQ(MonotonicNowNs(), 2005000u);
    EXPECT_EQ(MonotonicNowMs(), 2u);
    EXPECT_DOUBLE_EQ(SecondsSince(5000), 0.002);
    // A sleeper jumps the clock to its deadline instead of waiting.
    SleepUntilNs(7000000);
    EXPECT_EQ(MonotonicNowNs(), 7000000u);
    SleepUntilNs(10);  // never backwards
    EXPECT_EQ(MonotonicNowNs(), 7000000u);
    EXPECT_GT(SystemClock().NowNs(), 0u);
    {
      ManualClock inner(1);
      ScopedClockOverride nested(&inner);
      EXPECT_EQ(MonotonicNowNs(), 1u);
    }
    EXPECT_EQ(MonotonicNowNs(), 7000000u);
  }
  // The real clock again: far past the manual one's few milliseconds on any running machine,
  // and moving.
  const uint64_t a = MonotonicNowNs();
  SleepUntilNs(a + 1000);
  EXPECT_GT(MonotonicNowNs(), a);
}

TEST(ClockTest, ManualClockSleepsFromManyThreadsEndAtTheLatestDeadline) {
  ManualClock clock(0);
  std::vector<std::thread> threads;
  for (uint64_t i = 1; i <= 8; ++i) {
    threads.emplace_back([&clock, i] { clock.SleepUntilNs(i * 1000); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(clock.NowNs(), 8000u);
}

TEST(ClockTest, ThreadCpuTimeCountsWork) {
  const uint64_t t0 = ThreadCpuNs();
  volatile uint64_t x = 0;
  for (int i = 0; i < 2000000; ++i) x = x + static_cast<uint64_t>(i);
  EXPECT_GT(ThreadCpuNs(), t0);
}

TEST(ClockTest, RusageCpuCountsTheProcessAndItsWaitedForChildren) {
  const double self0 = RusageCpuS(CpuOf::kProcess);
  const double children0 = RusageCpuS(CpuOf::kChildren);
  std::thread([] {
    const uint64_t t0 = ThreadCpuNs();
    volatile uint64_t x = 0;
    while (ThreadCpuNs() - t0 < 30'000'000) x = x + 1;  // 30 ms of CPU on another thread
  }).join();
  EXPECT_GE(RusageCpuS(CpuOf::kProcess) - self0, 0.025);
  EXPECT_EQ(RusageCpuS(CpuOf::kChildren), children0) << "no child was waited for";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const uint64_t t0 = ThreadCpuNs();
    volatile uint64_t x = 0;
    while (ThreadCpuNs() - t0 < 30'000'000) x = x + 1;
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_GE(RusageCpuS(CpuOf::kChildren) - children0, 0.025);
}

}  // namespace
}  // namespace folio
