#include "base/poll_wait.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace folio {
namespace {

using Clock = std::chrono::steady_clock;

TEST(PollForTest, StopsWhenDoneOrGivenUp) {
  int calls = 0;
  EXPECT_TRUE(PollFor(10'000'000'000,
                      [&] { return ++calls < 5 ? PollStep::kNothing : PollStep::kDone; }));
  EXPECT_EQ(calls, 5);
  calls = 0;
  EXPECT_FALSE(PollFor(10'000'000'000,
                       [&] { return ++calls < 3 ? PollStep::kNothing : PollStep::kGiveUp; }));
  EXPECT_EQ(calls, 3);
}

TEST(PollForTest, ANonPositiveBudgetNeverPolls) {
  int calls = 0;
  EXPECT_FALSE(PollFor(0, [&] { return ++calls, PollStep::kDone; }));
  EXPECT_FALSE(PollFor(-1, [&] { return ++calls, PollStep::kDone; }));
  EXPECT_EQ(calls, 0);
}

// The budget runs from the start or the last progress: ten steps of 0.3 ms each outlast a 1 ms
// budget when they bring nothing, not when each brings part of what is awaited.
TEST(PollForTest, TheBudgetStartsAgainAtEachProgress) {
  for (PollStep each : {PollStep::kProgress, PollStep::kNothing}) {
    int calls = 0;
    const auto start = Clock::now();
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
      EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(1));  // the whole budget
    }
  }
}

// At most PollSlots() threads poll at once; one more returns false at once without polling,
// and polls again once a slot is free.
TEST(PollForTest, AtMostPollSlotsThreadsPollAtOnce) {
  const int slots = PollSlots();
  ASSERT_GE(slots, 1);
  std::atomic<bool> release{false};
  std::atomic<int> polling{0};
  std::vector<std::thread> pollers;
  std::vector<char> results(static_cast<size_t>(slots), 0);
  for (int i = 0; i < slots; ++i) {
    pollers.emplace_back([&, i] {
      bool counted = false;
      results[static_cast<size_t>(i)] = PollFor(60'000'000'000, [&] {
        if (!counted) polling.fetch_add(1);
        counted = true;
        return release.load() ? PollStep::kDone : PollStep::kNothing;
      });
    });
  }
  while (polling.load() < slots) std::this_thread::yield();
  int calls = 0;
  EXPECT_FALSE(PollFor(60'000'000'000, [&] { return ++calls, PollStep::kDone; }));
  EXPECT_EQ(calls, 0);
  release.store(true);
  for (std::thread& t : pollers) t.join();
  for (char r : results) EXPECT_TRUE(r);
  EXPECT_TRUE(PollFor(60'000'000'000, [&] { return ++calls, PollStep::kDone; }));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace folio
