#include "base/poll_wait.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace folio {
namespace {

using Clock = std::chrono::steady_clock;

// These tests poll whatever else the machine runs (the load check is off; its reading of
// /proc/loadavg is tested below).
class PollForTest : public testing::Test {
 protected:
  void SetUp() override { SetPollLoadCheck(false); }
  void TearDown() override { SetPollLoadCheck(true); }
};

// (Steps that report progress: no yield between them, so a busy machine cannot end the
// polling early, as it may after kNothing.)
TEST_F(PollForTest, StopsWhenDoneOrGivenUp) {
  int calls = 0;
  EXPECT_TRUE(PollFor(10'000'000'000,
                      [&] { return ++calls < 5 ? PollStep::kProgress : PollStep::kDone; }));
  EXPECT_EQ(calls, 5);
  calls = 0;
  EXPECT_FALSE(PollFor(10'000'000'000,
                       [&] { return ++calls < 3 ? PollStep::kProgress : PollStep::kGiveUp; }));
  EXPECT_EQ(calls, 3);
}

TEST_F(PollForTest, ANonPositiveBudgetNeverPolls) {
  int calls = 0;
  EXPECT_FALSE(PollFor(0, [&] { return ++calls, PollStep::kDone; }));
  EXPECT_FALSE(PollFor(-1, [&] { return ++calls, PollStep::kDone; }));
  EXPECT_EQ(calls, 0);
}

// The budget runs from the start or the last progress: ten steps of 0.3 ms each outlast a 1 ms
// budget when they bring nothing (polling stops before the eleventh, at the budget or at a
// yield that ran another thread), not when each brings part of what is awaited.
TEST_F(PollForTest, TheBudgetStartsAgainAtEachProgress) {
  for (PollStep each : {PollStep::kProgress, PollStep::kNothing}) {
    int calls = 0;
    const bool done = PollFor(1'000'000, [&] {
      if (++calls > 10) return PollStep::kDone;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      return each;
    });
    if (each == PollStep::kProgress) {
      EXPECT_TRUE(done);
      EXPECT_EQ(calls, 11);
    } else {
      EXPECT_FALSE(done);
      EXPECT_LT(calls, 11);
    }
  }
}

// At most PollSlots() threads poll at once; one more returns false at once without polling,
// and polls again once a slot is free. (The pollers report progress while they wait: they
// never yield, so they hold their slots until released.)
TEST_F(PollForTest, AtMostPollSlotsThreadsPollAtOnce) {
  const int slots = PollSlots();
  ASSERT_GE(slots, 1);
  std::atomic<bool> release{false};
  std::atomic<int> polling{0};
  std::atomic<int> ended{0};
  std::vector<std::thread> pollers;
  std::vector<char> results(static_cast<size_t>(slots), 0);
  for (int i = 0; i < slots; ++i) {
    pollers.emplace_back([&, i] {
      bool counted = false;
      results[static_cast<size_t>(i)] = PollFor(60'000'000'000, [&] {
        if (!counted) polling.fetch_add(1);
        counted = true;
        return release.load() ? PollStep::kDone : PollStep::kProgress;
      });
      ended.fetch_add(1);
    });
  }
  while (polling.load() < slots && ended.load() == 0) std::this_thread::yield();
  if (polling.load() != slots) {
    release.store(true);
    for (std::thread& t : pollers) t.join();
    FAIL() << "a poller did not get a slot";
  }
  int calls = 0;
  EXPECT_FALSE(PollFor(60'000'000'000, [&] { return ++calls, PollStep::kDone; }));
  EXPECT_EQ(calls, 0);
  release.store(true);
  for (std::thread& t : pollers) t.join();
  for (char r : results) EXPECT_TRUE(r);
  EXPECT_TRUE(PollFor(60'000'000'000, [&] { return ++calls, PollStep::kDone; }));
  EXPECT_EQ(calls, 1);
}

// A poller that shares its CPU with a busy thread stops at the first yield that ran it, long
// before its budget: polling never takes a CPU from other work.
TEST_F(PollForTest, StopsWhenAYieldRanAnotherThread) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0) << "cannot pin to CPU " << cpu;
  std::atomic<bool> stop{false};
  std::thread hog([&] {  // inherits the affinity: the same CPU
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the hog is running
  int calls = 0;
  const auto start = Clock::now();
  const bool done = PollFor(60'000'000'000, [&] { return ++calls, PollStep::kNothing; });
  const auto took = Clock::now() - start;
  stop.store(true);
  hog.join();
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_FALSE(done);
  EXPECT_GE(calls, 1);
  EXPECT_LT(took, std::chrono::seconds(10)) << calls << " polls";
}

TEST(PollUsTest, ParsesDecimalMicrosecondsUpToTheMaximum) {
  EXPECT_EQ(ParsePollUs("0"), 0u);
  EXPECT_EQ(ParsePollUs("200"), 200u);
  EXPECT_EQ(ParsePollUs(std::to_string(kMaxPollUs)), kMaxPollUs);
  EXPECT_EQ(ParsePollUs(std::to_string(kMaxPollUs + 1)), std::nullopt);
  for (const char* bad : {"", "-1", "+5", " 5", "5 ", "5us", "0x10", "99999999999999999999"}) {
    EXPECT_EQ(ParsePollUs(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(PollForLoadTest, ReadsTheRunnableCountOfLoadavg) {
  EXPECT_EQ(RunnableInLoadavg("0.50 0.40 0.30 3/180 12345\n"), 3);
  EXPECT_EQ(RunnableInLoadavg("12.00 8.10 4.00 17/2048 99"), 17);
  EXPECT_EQ(RunnableInLoadavg(""), -1);
  EXPECT_EQ(RunnableInLoadavg("0.50 0.40 0.30"), -1);
  EXPECT_EQ(RunnableInLoadavg("0.50 0.40 0.30 x/180 1"), -1);
  EXPECT_EQ(RunnableInLoadavg("0.50 0.40 0.30 3"), -1);
}

}  // namespace
}  // namespace folio
