// Several threads drive one RaidDevice at once, each with its own requests in flight, on
// blocks interleaved with the other threads' blocks so that they contend for the same stripe
// heads; a check runs concurrently and, because stripe heads are locked while parity is
// computed, never sees a mismatch. Each thread verifies its own blocks against its model.
// Runs under TSan in `make test`.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "folio/raid.h"
#include "base/test_seed.h"
#include "raid/raid_test_util.h"

namespace folio::raid_test {
namespace {

constexpr uint64_t kMemberBytes = (1 << 20) + (256 << 10);

struct Slot {
  IoRequest req;
  AlignedBuffer buf{4096};
  uint64_t block = 0;
  uint64_t value = 0;
};

void Worker(RaidDevice* dev, uint32_t t, uint32_t threads, uint64_t seed, int ops,
            std::atomic<int>* failures) {
  std::mt19937_64 rng(seed + t);
  const uint64_t blocks = dev->size_bytes() / 4096;
  std::vector<uint64_t> model(blocks, 0);  // value stamped in each of my blocks (0 = zeros)
  auto mine = [&](uint64_t i) { return i * threads + t; };
  const uint64_t my_blocks = blocks / threads;
  for (int op = 0; op < ops; ++op) {
    // A batch of up to 4 writes or reads of distinct blocks of mine.
    const bool write = rng() % 2;
    std::vector<std::unique_ptr<Slot>> batch;
    std::vector<IoRequest*> ptrs;
    for (int i = 0; i < 4; ++i) {
      auto s = std::make_unique<Slot>();
      s->block = mine(rng() % my_blocks);
      bool dup = false;
      for (auto& o : batch) dup |= o->block == s->block;
      if (dup) continue;
      if (write) {
        s->value = rng() | 1;
        for (int w = 0; w < 512; ++w) std::memcpy(s->buf.data() + 8 * w, &s->value, 8);
      }
      s->req.Reset(write ? IoOp::kWrite : IoOp::kRead, s->block * 4096, 4096, s->buf.data());
      ptrs.push_back(&s->req);
      batch.push_back(std::move(s));
    }
    if (!dev->Submit(ptrs).ok()) {
      ++*failures;
      return;
    }
    for (auto& s : batch) {
      while (!s->req.completed.load()) {
        if (!dev->Poll(1).ok()) {
          ++*failures;
          return;
        }
      }
      if (!s->req.status.ok()) {
        ++*failures;
        continue;
      }
      if (write) {
        model[s->block] = s->value;
        continue;
      }
      uint64_t got;
      std::memcpy(&got, s->buf.data(), 8);
      if (got != model[s->block]) ++*failures;
    }
  }
}

TEST(RaidConcurrency, ThreadsShareStripesWhileCheckRuns) {
  const uint64_t seed = TestSeed();
  struct Case {
    RaidLevel level;
    uint64_t unit;
  };
  for (const Case& c : {Case{RaidLevel::kRaid5, 0}, Case{RaidLevel::kRaid5, 16 << 10},
                        Case{RaidLevel::kRaid6, 0}, Case{RaidLevel::kRaid1, 16 << 10}}) {
    {
      const RaidLevel level = c.level;
      const uint64_t unit = c.unit;
      SCOPED_TRACE(std::string(RaidLevelName(level)) + " unit=" + std::to_string(unit) +
                   " " + SeedTrace(seed));
      Members m(4, kMemberBytes);
      RaidCreateOptions co;
      co.level = level;
      co.chunk_bytes = 16 << 10;
      co.unit_bytes = unit;
      co.assume_clean = true;
      RaidOptions o;
      o.stripe_cache_bytes = 1 << 20;  // small: operations wait for buffers too
      auto dev = RaidDevice::Create(m.WrapFirst(4), co, o);
      ASSERT_TRUE(dev.ok()) << dev.status().ToString();
      std::atomic<int> failures{0};
      std::atomic<bool> stop{false};
      uint64_t mismatches = 0;
      int checks = 0;
      std::thread checker([&] {
        while (!stop.load()) {
          auto r = (*dev)->Sync(RaidSyncAction::kCheck, {});
          if (!r.ok()) {
            ++failures;
            return;
          }
          mismatches += r->mismatches;
          ++checks;
        }
      });
      std::vector<std::thread> workers;
      for (uint32_t t = 0; t < 3; ++t) {
        workers.emplace_back(Worker, dev->get(), t, 3u, seed, 60, &failures);
      }
      for (auto& w : workers) w.join();
      stop.store(true);
      checker.join();
      EXPECT_EQ(failures.load(), 0);
      EXPECT_EQ(mismatches, 0u);
      EXPECT_GT(checks, 0);
      auto final_check = (*dev)->Sync(RaidSyncAction::kCheck, {});
      ASSERT_TRUE(final_check.ok());
      EXPECT_EQ(final_check->mismatches, 0u);
    }
  }
}

}  // namespace
}  // namespace folio::raid_test
