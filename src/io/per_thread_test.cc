// PerThreadRegistry: a thread's states are found again among many registries, destroyed
// exactly once (with their registry or at their thread's exit), and none leak; registries die
// while threads still hold entries for them (run under TSan by `make test`).
#include "io/per_thread.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "base/test_seed.h"

namespace folio::io_internal {
namespace {

constexpr int kMaxStates = 1 << 17;

// Every state made by a test: how many times each was destroyed.
struct Ledger {
  std::atomic<int> next{0};
  std::atomic<int> total{0};
  std::vector<std::atomic<int>> destroyed = std::vector<std::atomic<int>>(kMaxStates);
  int made() const { return next.load(); }
  int destroyed_total() const { return total.load(); }
  // The first state destroyed other than once, or -1.
  int FirstNotOnce() const {
    for (int i = 0; i < made(); ++i) {
      if (destroyed[i].load() != 1) return i;
    }
    return -1;
  }
};

struct Counted : ThreadState {
  Counted(Ledger* l, uint64_t registry_id)
      : ledger(l), id(l->next.fetch_add(1)), registry(registry_id),
        owner(std::this_thread::get_id()) {}
  ~Counted() override {
    ledger->destroyed[id].fetch_add(1);
    ledger->total.fetch_add(1);
  }
  Ledger* ledger;
  int id;
  uint64_t registry;
  std::thread::id owner;
};

Counted* Get(PerThreadRegistry& r, Ledger* l) {
  Result<ThreadState*> s = r.GetOrCreate([&]() -> Result<std::unique_ptr<Counted>> {
    return std::make_unique<Counted>(l, r.id());
  });
  return s.ok() ? static_cast<Counted*>(*s) : nullptr;
}

// The state Find returns is this thread's state of this registry.
bool FindsOwn(const PerThreadRegistry& r, const Counted* expected) {
  auto* s = static_cast<Counted*>(r.Find());
  return s == expected && s != nullptr && s->registry == r.id() &&
         s->owner == std::this_thread::get_id();
}

TEST(PerThreadRegistry, FindIsNullBeforeFirstUseAndTheSameStateAfter) {
  Ledger ledger;
  {
    PerThreadRegistry a, b;
    EXPECT_EQ(a.Find(), nullptr);
    Counted* sa = Get(a, &ledger);
    ASSERT_NE(sa, nullptr);
    EXPECT_EQ(b.Find(), nullptr);
    Counted* sb = Get(b, &ledger);
    EXPECT_NE(sa, sb);
    EXPECT_TRUE(FindsOwn(a, sa));
    EXPECT_TRUE(FindsOwn(b, sb));
    EXPECT_EQ(Get(a, &ledger), sa);
    EXPECT_EQ(ledger.made(), 2);
  }
  EXPECT_EQ(ledger.FirstNotOnce(), -1);
  EXPECT_EQ(ledger.destroyed_total(), 2);
}

// Ten thousand live registries, then half of them destroyed in a random order while new ones
// are attached (the purges of dead entries run in between): every live one still finds its
// own state.
TEST(PerThreadRegistry, StatesOfManyRegistriesAreFoundAgain) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  Ledger ledger;
  std::vector<std::unique_ptr<PerThreadRegistry>> regs;
  std::vector<Counted*> states;
  for (int i = 0; i < 10000; ++i) {
    regs.push_back(std::make_unique<PerThreadRegistry>());
    states.push_back(Get(*regs.back(), &ledger));
  }
  for (size_t i = 0; i < regs.size(); ++i) ASSERT_TRUE(FindsOwn(*regs[i], states[i])) << i;
  int destroyed = 0;
  for (int round = 0; round < 5000; ++round) {
    size_t victim = rng() % regs.size();
    std::swap(regs[victim], regs.back());
    std::swap(states[victim], states.back());
    regs.pop_back();
    states.pop_back();
    ++destroyed;
    ASSERT_EQ(ledger.destroyed_total(), destroyed) << "round " << round;
    regs.push_back(std::make_unique<PerThreadRegistry>());
    states.push_back(Get(*regs.back(), &ledger));
    size_t probe = rng() % regs.size();
    ASSERT_TRUE(FindsOwn(*regs[probe], states[probe])) << "round " << round;
  }
  for (size_t i = 0; i < regs.size(); ++i) ASSERT_TRUE(FindsOwn(*regs[i], states[i])) << i;
  regs.clear();
  EXPECT_EQ(ledger.FirstNotOnce(), -1);
  EXPECT_EQ(ledger.destroyed_total(), ledger.made());
}

// A thread's exit destroys its states of live registries and leaves other threads' states.
TEST(PerThreadRegistry, ThreadExitDestroysOnlyItsOwnStates) {
  Ledger ledger;
  std::vector<std::unique_ptr<PerThreadRegistry>> regs;
  std::vector<Counted*> mine;
  for (int i = 0; i < 300; ++i) {
    regs.push_back(std::make_unique<PerThreadRegistry>());
    mine.push_back(Get(*regs.back(), &ledger));
  }
  std::thread t([&] {
    for (auto& r : regs) EXPECT_NE(Get(*r, &ledger), nullptr);
  });
  t.join();
  EXPECT_EQ(ledger.made(), 600);
  EXPECT_EQ(ledger.destroyed_total(), 300);
  for (size_t i = 0; i < regs.size(); ++i) {
    EXPECT_TRUE(FindsOwn(*regs[i], mine[i])) << i;
    int visited = 0;
    regs[i]->ForEach([&](ThreadState& s) {
      ++visited;
      EXPECT_EQ(&s, mine[i]);
    });
    EXPECT_EQ(visited, 1) << i;
  }
  regs.clear();
  EXPECT_EQ(ledger.FirstNotOnce(), -1);
  EXPECT_EQ(ledger.destroyed_total(), 600);
}

// Several threads create and destroy registries of their own and share long-lived ones; half
// of the shared ones die while the threads still hold entries for them, and the threads go on
// (their purges drop those entries) and exit. Every state is destroyed exactly once.
TEST(PerThreadRegistry, ManyRegistriesOnSeveralThreads) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  constexpr int kThreads = 4, kShared = 64, kRounds = 12, kPrivate = 300;
  Ledger ledger;
  std::vector<std::unique_ptr<PerThreadRegistry>> shared;
  for (int i = 0; i < kShared; ++i) shared.push_back(std::make_unique<PerThreadRegistry>());
  std::barrier sync(kThreads + 1);
  std::atomic<int> failures{0};
  auto private_rounds = [&](std::mt19937_64& rng) {
    for (int round = 0; round < kRounds; ++round) {
      std::vector<std::unique_ptr<PerThreadRegistry>> regs;
      std::vector<Counted*> states;
      for (int i = 0; i < kPrivate; ++i) {
        regs.push_back(std::make_unique<PerThreadRegistry>());
        states.push_back(Get(*regs.back(), &ledger));
        if (rng() % 3 == 0) {  // some die at once, between attaches
          regs.pop_back();
          states.pop_back();
        }
      }
      for (size_t i = 0; i < regs.size(); ++i) {
        if (!FindsOwn(*regs[i], states[i])) failures.fetch_add(1);
      }
    }
  };
  auto worker = [&](int t) {
    std::mt19937_64 rng(seed + t);
    std::vector<Counted*> mine;
    for (auto& r : shared) mine.push_back(Get(*r, &ledger));
    private_rounds(rng);
    for (int i = 0; i < kShared; ++i) {
      if (!FindsOwn(*shared[i], mine[i])) failures.fetch_add(1);
    }
    sync.arrive_and_wait();  // the main thread destroys the odd shared registries
    sync.arrive_and_wait();
    private_rounds(rng);
    for (int i = 0; i < kShared; i += 2) {
      if (!FindsOwn(*shared[i], mine[i]) || Get(*shared[i], &ledger) != mine[i]) {
        failures.fetch_add(1);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  sync.arrive_and_wait();
  for (int i = 1; i < kShared; i += 2) shared[i].reset();
  sync.arrive_and_wait();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  // The threads' exits destroyed their states of the surviving shared registries.
  for (int i = 0; i < kShared; i += 2) {
    int visited = 0;
    shared[i]->ForEach([&](ThreadState&) { ++visited; });
    EXPECT_EQ(visited, 0) << "shared registry " << i;
  }
  shared.clear();
  EXPECT_EQ(ledger.FirstNotOnce(), -1);
  EXPECT_EQ(ledger.destroyed_total(), ledger.made());
  EXPECT_GT(ledger.made(), kThreads * kShared);
}

}  // namespace
}  // namespace folio::io_internal
