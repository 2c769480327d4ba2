// Model tests: a RaidDevice and a plain byte vector driven side by side by a seeded PRNG
// (random reads and writes of any aligned size and position, several in flight per batch,
// flushes), for every level, with fixed and dynamic units, healthy, degraded, and with a
// member failed and replaced mid-run. Check must find no mismatch at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "folio/raid.h"
#include "base/test_seed.h"
#include "raid/raid_test_util.h"

namespace folio::raid_test {
namespace {

struct Config {
  RaidLevel level;
  uint32_t members;
  uint64_t chunk_bytes;
  uint64_t unit_bytes;  // 0 = dynamic
};

std::string Describe(const Config& c) {
  return std::string(RaidLevelName(c.level)) + " members=" + std::to_string(c.members) +
         " chunk=" + std::to_string(c.chunk_bytes) + " unit=" +
         (c.unit_bytes ? std::to_string(c.unit_bytes) : "dynamic");
}

struct Req {
  IoRequest req;
  AlignedBuffer buf;
  uint64_t offset = 0;
  uint64_t length = 0;
};

class Model {
 public:
  Model(RaidDevice* dev, uint64_t seed) : dev_(dev), rng_(seed), ref_(dev->size_bytes(), 0) {}

  void set_device(RaidDevice* dev) { dev_ = dev; }

  // A random aligned range: mostly small, sometimes several stripes.
  void RandomRange(uint64_t* off, uint64_t* len) {
    const uint64_t blocks = ref_.size() / 4096;
    const uint64_t max_blocks = std::min<uint64_t>(blocks, rng_() % 4 == 0 ? 96 : 8);
    const uint64_t n = 1 + rng_() % max_blocks;
    *off = (rng_() % (blocks - n + 1)) * 4096;
    *len = n * 4096;
  }

  void WriteBatch(Status expect = Status::OK()) {
    std::vector<std::unique_ptr<Req>> reqs;
    const int n = 1 + static_cast<int>(rng_() % 4);
    for (int i = 0; i < n; ++i) {
      auto r = std::make_unique<Req>();
      RandomRange(&r->offset, &r->length);
      bool overlap = false;
      for (auto& o : reqs) {
        overlap |= r->offset < o->offset + o->length && o->offset < r->offset + r->length;
      }
      if (overlap) continue;
      r->buf = AlignedBuffer(r->length);
      Fill(rng_, r->buf.data(), r->length);
      r->req.Reset(IoOp::kWrite, r->offset, r->length, r->buf.data());
      reqs.push_back(std::move(r));
    }
    Run(reqs);
    for (auto& r : reqs) {
      ASSERT_EQ(r->req.status.code(), expect.code()) << r->req.status.ToString();
      if (r->req.status.ok()) std::memcpy(&ref_[r->offset], r->buf.data(), r->length);
    }
  }

  void ReadBatch() {
    std::vector<std::unique_ptr<Req>> reqs;
    const int n = 1 + static_cast<int>(rng_() % 4);
    for (int i = 0; i < n; ++i) {
      auto r = std::make_unique<Req>();
      RandomRange(&r->offset, &r->length);
      r->buf = AlignedBuffer(r->length);
      r->req.Reset(IoOp::kRead, r->offset, r->length, r->buf.data());
      reqs.push_back(std::move(r));
    }
    Run(reqs);
    for (auto& r : reqs) {
      ASSERT_TRUE(r->req.status.ok()) << r->req.status.ToString();
      ASSERT_EQ(0, std::memcmp(r->buf.data(), &ref_[r->offset], r->length))
          << "read at " << r->offset << " length " << r->length;
    }
  }

  void Flush() { ASSERT_TRUE(dev_->Flush().ok()); }

  void RandomOps(int count) {
    for (int i = 0; i < count && !::testing::Test::HasFatalFailure(); ++i) {
      const uint64_t dice = rng_() % 10;
      if (dice < 5) {
        WriteBatch();
      } else if (dice < 9) {
        ReadBatch();
      } else {
        Flush();
      }
    }
  }

  void VerifyAll() {
    const uint64_t step = 256 << 10;
    std::vector<char> got(step);
    for (uint64_t off = 0; off < ref_.size(); off += step) {
      const uint64_t len = std::min<uint64_t>(step, ref_.size() - off);
      ASSERT_TRUE(ReadBytes(dev_, off, got.data(), len).ok());
      ASSERT_EQ(0, std::memcmp(got.data(), &ref_[off], len)) << "array bytes at " << off;
    }
  }

  std::mt19937_64& rng() { return rng_; }
  std::vector<char>& ref() { return ref_; }

 private:
  void Run(std::vector<std::unique_ptr<Req>>& reqs) {
    std::vector<IoRequest*> ptrs;
    for (auto& r : reqs) ptrs.push_back(&r->req);
    ASSERT_TRUE(dev_->Submit(ptrs).ok());
    for (auto& r : reqs) {
      while (!r->req.completed.load()) {
        auto n = dev_->Poll(1);
        ASSERT_TRUE(n.ok()) << n.status().ToString();
      }
    }
    ASSERT_EQ(dev_->InFlight(), 0u);
  }

  RaidDevice* dev_;
  std::mt19937_64 rng_;
  std::vector<char> ref_;
};

// The slow variant (label slow) runs ten times the operations over several seeds.
#ifdef FOLIO_RAID_SLOW
constexpr int kScale = 10;
constexpr int kSeeds = 4;
#else
constexpr int kScale = 1;
constexpr int kSeeds = 1;
#endif

std::unique_ptr<RaidDevice> CreateArray(Members& m, const Config& c, bool assume_clean = true) {
  RaidCreateOptions co;
  co.level = c.level;
  co.chunk_bytes = c.chunk_bytes;
  co.unit_bytes = c.unit_bytes;
  co.assume_clean = assume_clean;
  RaidOptions o;
  o.bitmap_clear_delay_ms = 0;
  auto dev = RaidDevice::Create(m.WrapFirst(c.members), co, o);
  EXPECT_TRUE(dev.ok()) << dev.status().ToString();
  return dev.ok() ? std::move(dev).value() : nullptr;
}

void ExpectClean(RaidDevice* dev) {
  if (dev->Describe().level == RaidLevel::kRaid0) return;
  auto report = dev->Sync(RaidSyncAction::kCheck, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->completed);
  EXPECT_EQ(report->mismatches, 0u);
  EXPECT_GT(report->stripes, 0u);
}

const Config kConfigs[] = {
    {RaidLevel::kRaid0, 3, 16 << 10, 0},      {RaidLevel::kRaid1, 2, 16 << 10, 4 << 10},
    {RaidLevel::kRaid1, 3, 16 << 10, 0},      {RaidLevel::kRaid5, 3, 16 << 10, 4 << 10},
    {RaidLevel::kRaid5, 4, 16 << 10, 0},      {RaidLevel::kRaid5, 5, 32 << 10, 8 << 10},
    {RaidLevel::kRaid6, 4, 16 << 10, 0},      {RaidLevel::kRaid6, 6, 16 << 10, 4 << 10},
};

TEST(RaidDeviceModel, EveryLevelAgainstReference) {
  for (int round = 0; round < kSeeds; ++round) {
    const uint64_t seed = TestSeed() + round;
    for (const Config& c : kConfigs) {
      SCOPED_TRACE(Describe(c) + " " + SeedTrace(seed));
      Members m(c.members, kMemberBytes);
      auto dev = CreateArray(m, c);
      ASSERT_NE(dev, nullptr);
      Model model(dev.get(), seed);
      model.RandomOps(100 * kScale);
      ASSERT_NO_FATAL_FAILURE(model.VerifyAll());
      ASSERT_NO_FATAL_FAILURE(ExpectClean(dev.get()));
      const RaidStats st = dev->raid_stats();
      if (c.level == RaidLevel::kRaid5 || c.level == RaidLevel::kRaid6) {
        EXPECT_GT(st.rmw_writes + st.rcw_writes, 0u);
      }
      ASSERT_TRUE(dev->Stop().ok());
    }
  }
}

// A member fails mid-run (reads reconstruct, writes go degraded), a fresh member replaces it
// (written while it is rebuilt), the rebuild completes, and everything still matches.
TEST(RaidDeviceModel, MemberFailedAndReplacedMidRun) {
  for (int round = 0; round < kSeeds; ++round) {
    const uint64_t seed = TestSeed() + round;
    for (const Config& c : kConfigs) {
      if (c.level == RaidLevel::kRaid0) continue;
      SCOPED_TRACE(Describe(c) + " " + SeedTrace(seed));
      Members m(c.members, kMemberBytes);
      auto dev = CreateArray(m, c);
      ASSERT_NE(dev, nullptr);
      Model model(dev.get(), seed);
      model.RandomOps(40 * kScale);
      const uint32_t fail_count = c.level == RaidLevel::kRaid6 ? 2 : 1;
      std::vector<uint32_t> failed;
      for (uint32_t i = 0; i < fail_count; ++i) {
        const uint32_t slot = static_cast<uint32_t>((seed + 2 * i) % c.members);
        if (std::find(failed.begin(), failed.end(), slot) != failed.end()) continue;
        ASSERT_TRUE(dev->FailMember(slot).ok());
        failed.push_back(slot);
      }
      EXPECT_EQ(dev->Describe().state, "degraded");
      model.RandomOps(60 * kScale);
      ASSERT_NO_FATAL_FAILURE(model.VerifyAll());
      for (uint32_t slot : failed) {
        const uint32_t fresh = m.Add(kMemberBytes);
        ASSERT_TRUE(dev->ReplaceMember(slot, m.Wrap(fresh)).ok());
      }
      model.RandomOps(40 * kScale);
      auto rebuild = dev->Sync(RaidSyncAction::kRebuild, {});
      ASSERT_TRUE(rebuild.ok()) << rebuild.status().ToString();
      EXPECT_TRUE(rebuild->completed);
      const RaidStatus st = dev->Describe();
      EXPECT_EQ(st.state, "active");
      for (const auto& mem : st.members) EXPECT_EQ(mem.health, MemberHealth::kInSync);
      model.RandomOps(40 * kScale);
      ASSERT_NO_FATAL_FAILURE(model.VerifyAll());
      ASSERT_NO_FATAL_FAILURE(ExpectClean(dev.get()));
    }
  }
}

// The initial resync (no --assume-clean) over members full of garbage makes parity
// consistent; writes during the pending resync use reconstruct-write.
TEST(RaidDeviceModel, InitialResyncOverGarbage) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (RaidLevel level : {RaidLevel::kRaid1, RaidLevel::kRaid5, RaidLevel::kRaid6}) {
    const Config c{level, 5, 16 << 10, 0};
    Members m(c.members, kMemberBytes);
    std::vector<char> junk(kMemberBytes);
    for (uint32_t i = 0; i < c.members; ++i) {
      Fill(rng, junk.data(), junk.size());
      ASSERT_TRUE(WriteBytes(m.raw(i), 0, junk.data(), junk.size()).ok());
    }
    auto dev = CreateArray(m, c, /*assume_clean=*/false);
    ASSERT_NE(dev, nullptr);
    EXPECT_GT(dev->Describe().resync_regions, 0u);
    auto check = dev->Sync(RaidSyncAction::kCheck, {});
    ASSERT_TRUE(check.ok());
    EXPECT_GT(check->mismatches, 0u) << "garbage members must disagree";
    // Writes before the resync, then the resync, then the model must hold.
    Model model(dev.get(), seed);
    std::vector<char> all(dev->size_bytes());
    ASSERT_TRUE(ReadBytes(dev.get(), 0, all.data(), all.size()).ok());
    model.ref() = all;
    // RAID 1 mirrors of garbage disagree: until the resync, reads come from the first mirror,
    // the one the resync copies, so what a read returns does not change.
    model.RandomOps(30 * kScale);
    auto resync = dev->Sync(RaidSyncAction::kResync, {});
    ASSERT_TRUE(resync.ok()) << resync.status().ToString();
    EXPECT_TRUE(resync->completed);
    EXPECT_EQ(dev->Describe().resync_regions, 0u);
    ASSERT_NO_FATAL_FAILURE(ExpectClean(dev.get()));
    ASSERT_NO_FATAL_FAILURE(model.VerifyAll());
  }
}

// An array given no arena makes its own: stripe buffers are arena folios, not heap memory.
TEST(RaidDeviceModel, StripeCacheUsesAnArenaOfItsOwn) {
  const Config c{RaidLevel::kRaid5, 4, 64 << 10, 0};
  Members m(c.members, kMemberBytes);
  auto dev = CreateArray(m, c);
  ASSERT_NE(dev, nullptr);
  Model model(dev.get(), 7);
  model.RandomOps(200);
  const RaidStats st = dev->raid_stats();
  EXPECT_TRUE(st.stripe_cache_in_arena);
  EXPECT_GT(st.rmw_writes + st.rcw_writes + st.full_stripe_writes, 0u);
  EXPECT_EQ(st.stripe_buffers_from_heap, 0u);
  ASSERT_NO_FATAL_FAILURE(model.VerifyAll());
}

// speed_limit_max holds from the first second of a sync: the speed meter once measured the
// first second against the time since boot (a near-zero speed), so a sync ran unthrottled in
// it. An upper bound only: a slow machine is slower still.
TEST(RaidSync, SpeedLimitMaxHoldsFromTheStart) {
  constexpr uint64_t kData = 56ull << 20;
  Members m(3, (1 << 20) + kData);
  RaidCreateOptions co;
  co.level = RaidLevel::kRaid5;
  co.chunk_bytes = 64 << 10;
  co.assume_clean = true;
  auto dev = RaidDevice::Create(m.WrapFirst(3), co, {});
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  RaidSyncOptions o;
  o.speed_limit_max_kib = 20000;  // ~20 MB/s per member
  o.max_seconds = 1.0;
  auto r = (*dev)->Sync(RaidSyncAction::kCheck, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_GT(r->window_bytes, 0u);
  // The throttle holds new requests while the measured speed is above the limit, so the
  // bytes done overshoot the limit by at most a few windows (one per speed mark).
  const double allowed = 20000.0 * 1024 * r->seconds + 4.0 * static_cast<double>(r->window_bytes);
  EXPECT_LE(static_cast<double>(r->done_bytes), allowed)
      << r->done_bytes << " bytes in " << r->seconds << " s, window " << r->window_bytes;
  EXPECT_LT(r->done_bytes, kData) << "a 1 s run at 20 MB/s cannot visit 56M";
  EXPECT_GT(r->done_bytes, 0u);
}

}  // namespace
}  // namespace folio::raid_test
