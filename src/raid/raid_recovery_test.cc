// Recovery paths in the orders operators run them (issue 8's confirmed cases): a crash that
// leaves a stripe torn (data landed, parity did not), then assembly with members missing,
// resync / rebuild / check resumed from stored checkpoints, members replaced while a rebuild
// runs, and member flush errors at a sync checkpoint. Each test names the case it covers.
//
// A torn stripe is made exactly: write through the array and flush (the bitmap bit is durable
// and stays set: the clear delay is long), then put the old parity back on the raw member.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "folio/raid.h"
#include "io/io_test_util.h"
#include "raid/raid_device_impl.h"
#include "raid/raid_test_util.h"

namespace folio::raid_test {
namespace {

constexpr uint64_t kChunk = 16 << 10;

// Bits stay set until a resync clears them, unless `clear_delay_ms` says otherwise.
RaidOptions Opts(uint64_t clear_delay_ms = 1000000) {
  RaidOptions o;
  o.bitmap_clear_delay_ms = clear_delay_ms;
  return o;
}

std::unique_ptr<RaidDevice> Create(std::vector<RaidMember> members, RaidLevel level,
                                   bool assume_clean = true, uint64_t clear_delay_ms = 1000000) {
  RaidCreateOptions co;
  co.level = level;
  co.chunk_bytes = kChunk;
  co.assume_clean = assume_clean;
  co.bitmap_region_bytes = kChunk;  // one stripe per region
  auto dev = RaidDevice::Create(std::move(members), co, Opts(clear_delay_ms));
  EXPECT_TRUE(dev.ok()) << dev.status().ToString();
  return dev.ok() ? std::move(dev).value() : nullptr;
}

std::unique_ptr<RaidDevice> Assemble(std::vector<RaidMember> members) {
  auto dev = RaidDevice::Assemble(std::move(members), Opts());
  EXPECT_TRUE(dev.ok()) << dev.status().ToString();
  return dev.ok() ? std::move(dev).value() : nullptr;
}

std::vector<char> RawRead(Members& m, uint32_t member, uint64_t member_pos, uint64_t len) {
  std::vector<char> out(len);
  EXPECT_TRUE(ReadBytes(m.raw(member), kDataOffset + member_pos, out.data(), len).ok());
  return out;
}

void RawWrite(Members& m, uint32_t member, uint64_t member_pos, const std::vector<char>& v) {
  EXPECT_TRUE(WriteBytes(m.raw(member), kDataOffset + member_pos, v.data(), v.size()).ok());
}

// Writes `len` new bytes at array offset `off` (flushed), then puts back the old contents of
// `parity_member`'s chunk of stripe `stripe`: the data landed, that parity did not.
void TornWrite(RaidDevice* dev, Members& m, std::vector<char>& data, uint64_t off, uint64_t len,
               uint32_t parity_member, uint64_t stripe, uint64_t seed) {
  const std::vector<char> old = RawRead(m, parity_member, stripe * kChunk, kChunk);
  std::mt19937_64 rng(seed);
  std::vector<char> w(len);
  Fill(rng, w.data(), w.size());
  ASSERT_TRUE(WriteBytes(dev, off, w.data(), len).ok());
  ASSERT_TRUE(dev->Flush().ok());
  std::memcpy(&data[off], w.data(), len);
  RawWrite(m, parity_member, stripe * kChunk, old);
}

// Power loss: every member drops what was not flushed; the array is gone.
void Crash(std::unique_ptr<RaidDevice>& dev, Members& m, const std::vector<uint32_t>& members) {
  for (uint32_t i : members) m.faults(i)->Crash(CrashMode::kDropUnflushed, 1);
  (void)dev->Stop();
  dev.reset();
}

// Reads [off, off + len): OK with the reference bytes, or an error; never other bytes.
::testing::AssertionResult ReadIsRightOrError(RaidDevice* dev, const std::vector<char>& data,
                                              uint64_t off, uint64_t len, bool* ok = nullptr) {
  std::vector<char> got(len);
  const Status st = ReadBytes(dev, off, got.data(), len);
  if (ok != nullptr) *ok = st.ok();
  if (!st.ok()) return ::testing::AssertionSuccess();
  if (std::memcmp(got.data(), &data[off], len) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "read at " << off << " returned wrong bytes";
}

uint64_t CheckMismatches(RaidDevice* dev) {
  auto r = dev->Sync(RaidSyncAction::kCheck, {});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->mismatches : ~uint64_t{0};
}

// Case 1: RAID 5 of 3, stripe 0 torn (D0 new, P old), the member of D1 missing at assembly.
// A resync cannot make the stripe consistent: it must not count it as resynced, and the
// degraded read of D1 must stay refused (before the fix the resync cleared the region and
// the read returned D0_new ^ P_old).
TEST(RaidRecovery, DirtyDegradedRaid5ResyncKeepsRegionUnreadable) {
  Members m(3, kMemberBytes);
  auto dev = Create(m.WrapFirst(3), RaidLevel::kRaid5);
  ASSERT_NE(dev, nullptr);
  std::vector<char> data = FillArray(dev.get(), 1);
  // Left-symmetric, 3 members, stripe 0: D0 on m0, D1 on m1, P on m2.
  TornWrite(dev.get(), m, data, 0, kChunk, /*parity_member=*/2, /*stripe=*/0, 2);
  Crash(dev, m, {0, 1, 2});
  dev = Assemble(m.WrapAll({0, 2}));
  ASSERT_NE(dev, nullptr);
  bool ok = true;
  EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, kChunk, kChunk, &ok));
  EXPECT_FALSE(ok) << "degraded read of a dirty stripe must be refused";
  auto r = dev->Sync(RaidSyncAction::kResync, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->unsynced, 0u) << "the torn stripe cannot be made consistent without m1";
  EXPECT_GT(dev->Describe().resync_regions, 0u);
  EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, kChunk, kChunk, &ok));
  EXPECT_FALSE(ok);
  EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, 0, kChunk, &ok));
  EXPECT_TRUE(ok) << "D0 is on a present member";
  // The same through a stop and a second assembly (the export resyncs by itself).
  ASSERT_TRUE(dev->Stop().ok());
  dev = Assemble(m.WrapAll({0, 2}));
  ASSERT_NE(dev, nullptr);
  EXPECT_GT(dev->Describe().resync_regions, 0u);
  EXPECT_FALSE(dev->Describe().clean);
  EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, kChunk, kChunk, &ok));
  EXPECT_FALSE(ok);
}

// Case 1, RAID 6: 4 members, stripe 0 = Q on m0, D0 on m1, D1 on m2, P on m3. D0 written,
// P torn. With Q's member missing, every data block is readable: the resync recomputes P
// (the other parity), and the stripe is resynced. With a data member missing (D1's), P and
// Q disagree and nothing says which is right: the stripe stays unsynced.
TEST(RaidRecovery, DirtyDegradedRaid6RecomputesTheOtherParity) {
  for (const uint32_t missing : {0u, 2u}) {
    SCOPED_TRACE("missing m" + std::to_string(missing));
    Members m(4, kMemberBytes);
    auto dev = Create(m.WrapFirst(4), RaidLevel::kRaid6);
    ASSERT_NE(dev, nullptr);
    std::vector<char> data = FillArray(dev.get(), 3);
    TornWrite(dev.get(), m, data, 0, kChunk, /*parity_member=*/3, /*stripe=*/0, 4);
    Crash(dev, m, {0, 1, 2, 3});
    std::vector<uint32_t> present;
    for (uint32_t i = 0; i < 4; ++i) {
      if (i != missing) present.push_back(i);
    }
    dev = Assemble(m.WrapAll(present));
    ASSERT_NE(dev, nullptr);
    auto r = dev->Sync(RaidSyncAction::kResync, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (missing == 0) {
      EXPECT_EQ(r->unsynced, 0u);
      EXPECT_EQ(dev->Describe().resync_regions, 0u);
      // P is right now: with D1's member failed too, D1 comes back from D0 and P.
      ASSERT_TRUE(dev->FailMember(2).ok());
      bool ok = false;
      EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, 0, 2 * kChunk, &ok));
      EXPECT_TRUE(ok);
    } else {
      EXPECT_GT(r->unsynced, 0u);
      EXPECT_GT(dev->Describe().resync_regions, 0u);
      bool ok = true;
      EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, kChunk, kChunk, &ok));
      EXPECT_FALSE(ok);
    }
    EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, 0, dev->size_bytes()));
  }
}

// A member wrapper that runs a hook (once) before the first write at or past a member
// position: here, a replace while the rebuild writes there.
class HookDevice : public io_test::ForwardingDevice {
 public:
  HookDevice(std::unique_ptr<BlockDevice> inner, uint64_t at, std::function<void()> hook)
      : ForwardingDevice(inner.get()),
        inner_(std::move(inner)),
        at_(at),
        hook_(std::move(hook)) {}
  Status Submit(std::span<IoRequest* const> batch) override {
    for (IoRequest* r : batch) {
      if (hook_ && r->op == IoOp::kWrite && r->offset >= at_) {
        auto h = std::move(hook_);
        hook_ = nullptr;
        h();
      }
    }
    return inner_->Submit(batch);
  }

 private:
  std::unique_ptr<BlockDevice> inner_;
  const uint64_t at_;
  std::function<void()> hook_;
};

struct ReplaceCase {
  RaidLevel level;
  uint32_t members;
  std::vector<uint32_t> rebuilding;  // replaced before the rebuild starts
  uint32_t hooked;                   // the rebuilding member whose write triggers the replace
  uint32_t replaced;                 // the slot failed and replaced mid-rebuild
};

// Case 2: a member replaced while a rebuild runs (the rebuilding one, or another). The
// replacement is marked in sync only once every range was rebuilt onto it.
TEST(RaidRecovery, ReplaceDuringRebuildRebuildsTheNewMemberFromZero) {
  const std::vector<ReplaceCase> cases = {
      {RaidLevel::kRaid5, 4, {2}, 2, 2},
      {RaidLevel::kRaid6, 5, {1, 3}, 3, 3},
      {RaidLevel::kRaid6, 5, {1}, 1, 3},
      {RaidLevel::kRaid1, 3, {1}, 1, 1},
  };
  for (const ReplaceCase& c : cases) {
    SCOPED_TRACE(std::string(RaidLevelName(c.level)) + " replace slot " +
                 std::to_string(c.replaced));
    Members m(c.members, kMemberBytes);
    auto dev = Create(m.WrapFirst(c.members), c.level);
    ASSERT_NE(dev, nullptr);
    const std::vector<char> data = FillArray(dev.get(), 5);
    RaidDevice* raw = dev.get();
    const uint32_t late = m.Add(kMemberBytes);
    for (uint32_t s : c.rebuilding) {
      ASSERT_TRUE(dev->FailMember(s).ok());
      const uint32_t fresh = m.Add(kMemberBytes);
      RaidMember rm = m.Wrap(fresh);
      if (s == c.hooked) {
        rm.device = std::make_unique<HookDevice>(
            std::move(rm.device), kDataOffset + (256 << 10), [&m, raw, late, &c] {
              if (raw->Describe().members[c.replaced].health != MemberHealth::kFailed) {
                ASSERT_TRUE(raw->FailMember(c.replaced).ok());
              }
              ASSERT_TRUE(raw->ReplaceMember(c.replaced, m.Wrap(late)).ok());
            });
      }
      ASSERT_TRUE(dev->ReplaceMember(s, std::move(rm)).ok());
    }
    RaidSyncOptions o;
    o.window_bytes = kChunk;  // one unit at a time: the hook fires in the middle
    for (int i = 0; i < 3; ++i) {
      auto r = dev->Sync(RaidSyncAction::kRebuild, o);
      if (!r.ok()) break;  // "no member is being rebuilt"
    }
    for (const RaidMemberStatus& ms : dev->Describe().members) {
      EXPECT_EQ(ms.health, MemberHealth::kInSync) << "slot " << ms.slot;
    }
    EXPECT_EQ(CheckMismatches(dev.get()), 0u);
    // The replacement must hold what the array would reconstruct for it.
    ASSERT_TRUE(dev->FailMember(c.replaced == 0 ? 1 : 0).ok());
    bool ok = false;
    EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, 0, data.size(), &ok));
    EXPECT_TRUE(ok);
  }
}

// Case 3: an initial resync interrupted at a checkpoint, then a crash tears a stripe below
// the checkpoint. The next resync must visit that region too.
TEST(RaidRecovery, ResumedResyncVisitsRegionsDirtiedBelowItsCheckpoint) {
  Members m(3, kMemberBytes);
  auto dev = Create(m.WrapFirst(3), RaidLevel::kRaid5, /*assume_clean=*/false);
  ASSERT_NE(dev, nullptr);
  std::vector<char> data = FillArray(dev.get(), 7);
  RaidSyncOptions part;
  part.max_bytes = 256 << 10;
  auto first = dev->Sync(RaidSyncAction::kResync, part);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_FALSE(first->completed);
  ASSERT_EQ(first->checkpoint_bytes, 256u << 10);
  TornWrite(dev.get(), m, data, 0, kChunk, /*parity_member=*/2, /*stripe=*/0, 8);
  Crash(dev, m, {0, 1, 2});
  dev = Assemble(m.WrapFirst(3));
  ASSERT_NE(dev, nullptr);
  auto rest = dev->Sync(RaidSyncAction::kResync, {});
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_TRUE(rest->completed);
  EXPECT_EQ(rest->start_bytes, 0u);
  EXPECT_EQ(dev->Describe().resync_regions, 0u);
  EXPECT_EQ(CheckMismatches(dev.get()), 0u);
  EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, 0, data.size()));
}

// Case 4: a replacement rebuilt through a region a crash left dirty, parity torn. The rebuild
// must not compute the new member from that parity (and the resync after it must not bless
// the result): every read is right or an error.
TEST(RaidRecovery, RebuildThroughDirtyRegionIsRefusedNotWrong) {
  Members m(4, kMemberBytes);
  auto dev = Create(m.WrapFirst(4), RaidLevel::kRaid5);
  ASSERT_NE(dev, nullptr);
  std::vector<char> data = FillArray(dev.get(), 9);
  ASSERT_TRUE(dev->FailMember(2).ok());
  const uint32_t fresh = m.Add(kMemberBytes);
  ASSERT_TRUE(dev->ReplaceMember(2, m.Wrap(fresh)).ok());
  // Stripe 0: D0 on m0, D1 on m1, D2 on the replacement, P on m3.
  TornWrite(dev.get(), m, data, 0, kChunk, /*parity_member=*/3, /*stripe=*/0, 10);
  const std::vector<uint32_t> all = {0, 1, fresh, 3};
  Crash(dev, m, all);
  dev = Assemble(m.WrapAll(all));
  ASSERT_NE(dev, nullptr);
  auto rebuild = dev->Sync(RaidSyncAction::kRebuild, {});
  if (rebuild.ok()) {
    EXPECT_GT(rebuild->unsynced, 0u);
  }
  (void)dev->Sync(RaidSyncAction::kResync, {});
  EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, 0, data.size()));
  EXPECT_NE(dev->Describe().members[2].health, MemberHealth::kInSync)
      << "stripe 0 of the replacement cannot be known";
}

// Case 4, the order that works: the dirty region is below the rebuild position, so every
// member is readable there and the resync fixes the stripe before the rebuild goes on.
TEST(RaidRecovery, DirtyRegionBelowRebuildPositionIsResyncedThenRebuilt) {
  Members m(4, kMemberBytes);
  // Bits clear at the fill's flush, so only the torn write's region is dirty at the crash.
  auto dev = Create(m.WrapFirst(4), RaidLevel::kRaid5, true, /*clear_delay_ms=*/0);
  ASSERT_NE(dev, nullptr);
  std::vector<char> data = FillArray(dev.get(), 11);
  ASSERT_TRUE(dev->FailMember(2).ok());
  const uint32_t fresh = m.Add(kMemberBytes);
  ASSERT_TRUE(dev->ReplaceMember(2, m.Wrap(fresh)).ok());
  RaidSyncOptions part;
  part.max_bytes = 128 << 10;
  auto half = dev->Sync(RaidSyncAction::kRebuild, part);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  ASSERT_FALSE(half->completed);
  TornWrite(dev.get(), m, data, 0, kChunk, /*parity_member=*/3, /*stripe=*/0, 12);
  const std::vector<uint32_t> all = {0, 1, fresh, 3};
  Crash(dev, m, all);
  dev = Assemble(m.WrapAll(all));
  ASSERT_NE(dev, nullptr);
  ASSERT_EQ(dev->Describe().resync_regions, 1u);
  auto resync = dev->Sync(RaidSyncAction::kResync, {});
  ASSERT_TRUE(resync.ok()) << resync.status().ToString();
  EXPECT_EQ(resync->unsynced, 0u);
  EXPECT_EQ(resync->mismatches, 1u) << "the torn stripe";
  auto rebuild = dev->Sync(RaidSyncAction::kRebuild, {});
  ASSERT_TRUE(rebuild.ok()) << rebuild.status().ToString();
  EXPECT_TRUE(rebuild->completed);
  EXPECT_EQ(dev->Describe().members[2].health, MemberHealth::kInSync);
  EXPECT_EQ(CheckMismatches(dev.get()), 0u);
  ASSERT_TRUE(dev->FailMember(0).ok());
  bool ok = false;
  EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, 0, data.size(), &ok));
  EXPECT_TRUE(ok);
}

// Case 10: read-only use of an unclean array (a copy from it, status) leaves it as it was:
// not marked clean while regions wait for a resync, and no superblock written.
TEST(RaidRecovery, ReadOnlyUseOfUncleanArrayDoesNotMarkItClean) {
  Members m(3, kMemberBytes);
  auto dev = Create(m.WrapFirst(3), RaidLevel::kRaid5);
  ASSERT_NE(dev, nullptr);
  std::vector<char> data = FillArray(dev.get(), 13);
  TornWrite(dev.get(), m, data, 0, kChunk, 2, 0, 14);
  Crash(dev, m, {0, 1, 2});
  dev = Assemble(m.WrapFirst(3));
  ASSERT_NE(dev, nullptr);
  const uint64_t events = dev->Describe().events;
  EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, 0, data.size()));
  ASSERT_TRUE(dev->Stop().ok());
  dev.reset();
  auto st = RaidDevice::Inspect(m.WrapFirst(3));
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_FALSE(st->clean);
  EXPECT_GT(st->resync_regions, 0u);
  EXPECT_EQ(st->events, events) << "a read-only use wrote a superblock";
}

// Case 11(a): a flush's bitmap write (made without a member flush) must not make the image
// version durable: a concurrent first write into a clean region would then skip its own
// flushed bitmap write and issue data before its bit is on disk.
TEST(RaidRecovery, UnflushedBitmapWriteIsNotDurable) {
  Members m(3, kMemberBytes);
  auto dev = Create(m.WrapFirst(3), RaidLevel::kRaid5);
  ASSERT_NE(dev, nullptr);
  auto* impl = static_cast<raid::RaidDeviceImpl*>(dev.get());
  raid::WriteIntentBitmap* bitmap = impl->bitmap();
  const uint64_t region = 5;
  // A writer into a clean region has set its bit and must make that version durable.
  const uint64_t need = bitmap->StartWrite(region, region);
  ASSERT_NE(need, 0u);
  // Meanwhile a flush writes the bitmap out (as StartFlush does), without a member flush.
  ASSERT_TRUE(impl->PersistBitmap(0, /*flush=*/false).ok());
  const bool durable = bitmap->IsDurable(need);
  for (uint32_t i = 0; i < 3; ++i) m.faults(i)->Crash(CrashMode::kDropUnflushed, 1);
  if (durable) {
    for (uint32_t i = 0; i < 3; ++i) {
      std::vector<char> image(4096);
      ASSERT_TRUE(ReadBytes(m.raw(i), 4096, image.data(), image.size()).ok());
      EXPECT_TRUE((image[region / 8] >> (region % 8)) & 1)
          << "version " << need << " reported durable, but m" << i << " lost the bit";
    }
  }
  bitmap->EndWrite(region, region, 0);
  for (uint32_t i = 0; i < 3; ++i) m.faults(i)->Restart();
}

// Case 11(c): a member whose flush fails at a sync checkpoint may have lost the writes before
// it: it is failed, not marked in sync.
TEST(RaidRecovery, MemberFlushErrorAtCheckpointFailsTheMember) {
  Members m(4, kMemberBytes);
  auto dev = Create(m.WrapFirst(4), RaidLevel::kRaid5);
  ASSERT_NE(dev, nullptr);
  const std::vector<char> data = FillArray(dev.get(), 15);
  ASSERT_TRUE(dev->FailMember(2).ok());
  const uint32_t fresh = m.Add(kMemberBytes);
  ASSERT_TRUE(dev->ReplaceMember(2, m.Wrap(fresh)).ok());
  m.faults(fresh)->FailNthOf(IoOp::kFlush, 1);
  (void)dev->Sync(RaidSyncAction::kRebuild, {});
  EXPECT_EQ(dev->Describe().members[2].health, MemberHealth::kFailed);
  bool ok = false;
  EXPECT_TRUE(ReadIsRightOrError(dev.get(), data, 0, data.size(), &ok));
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace folio::raid_test
