// Faults a RAID array must survive, and the ones it must report: read errors corrected from
// parity, write errors that fail a member, corruption found by check and fixed by repair, two
// members lost on RAID 5 (DataLoss, never wrong data), a simulated crash followed by a bitmap
// resync, and resumable check / rebuild.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "folio/raid.h"
#include "base/test_seed.h"
#include "raid/raid_test_util.h"

namespace folio::raid_test {
namespace {

std::unique_ptr<RaidDevice> Create(Members& m, RaidLevel level, uint32_t n,
                                   uint64_t chunk = 16 << 10, uint64_t unit = 0) {
  RaidCreateOptions co;
  co.level = level;
  co.chunk_bytes = chunk;
  co.unit_bytes = unit;
  co.assume_clean = true;
  co.bitmap_region_bytes = chunk;  // fine-grained: the crash test counts dirty regions
  RaidOptions o;
  o.bitmap_clear_delay_ms = 0;
  auto dev = RaidDevice::Create(m.WrapFirst(n), co, o);
  EXPECT_TRUE(dev.ok()) << dev.status().ToString();
  return dev.ok() ? std::move(dev).value() : nullptr;
}

uint64_t Mismatches(RaidDevice* dev, RaidSyncAction action = RaidSyncAction::kCheck) {
  auto r = dev->Sync(action, {});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->mismatches : ~uint64_t{0};
}

// Slot holding P of stripe 0 for left-symmetric: the last member.
uint32_t ParitySlotOfStripe0(uint32_t members) { return members - 1; }

TEST(RaidFaults, CorruptionFoundByCheckFixedByRepair) {
  for (RaidLevel level : {RaidLevel::kRaid5, RaidLevel::kRaid6, RaidLevel::kRaid1}) {
    SCOPED_TRACE(std::string(RaidLevelName(level)));
    Members m(5, kMemberBytes);
    auto dev = Create(m, level, 5);
    ASSERT_NE(dev, nullptr);
    const std::vector<char> data = FillArray(dev.get(), 7);
    EXPECT_EQ(Mismatches(dev.get()), 0u);
    // Flip bytes in stripe 0's P chunk (RAID 1: on the last mirror) and in stripe 3 of m1.
    std::vector<char> junk(4096, 0x5a);
    const uint32_t p = ParitySlotOfStripe0(5);
    ASSERT_TRUE(WriteBytes(m.raw(p), kDataOffset + 4096, junk.data(), 4096).ok());
    ASSERT_TRUE(WriteBytes(m.raw(1), kDataOffset + 3 * (16 << 10), junk.data(), 4096).ok());
    auto check = dev->Sync(RaidSyncAction::kCheck, {});
    ASSERT_TRUE(check.ok());
    EXPECT_EQ(check->mismatches, 2u);
    EXPECT_EQ(check->mismatched_stripes, (std::vector<uint64_t>{0, 3}));
    auto repair = dev->Sync(RaidSyncAction::kRepair, {});
    ASSERT_TRUE(repair.ok());
    EXPECT_EQ(repair->mismatches, 2u);
    EXPECT_EQ(repair->repaired, 2u);
    EXPECT_EQ(Mismatches(dev.get()), 0u);
    // Parity was corrupted in stripe 0, so its data is intact; stripe 3 lost its data on m1
    // (repair trusts data, as md does) unless m1 held parity there.
    std::vector<char> got(16 << 10);
    ASSERT_TRUE(ReadBytes(dev.get(), 0, got.data(), got.size()).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), data.data(), got.size()));
  }
}

TEST(RaidFaults, ReadErrorIsReconstructedAndRewritten) {
  for (RaidLevel level : {RaidLevel::kRaid5, RaidLevel::kRaid6, RaidLevel::kRaid1}) {
    SCOPED_TRACE(std::string(RaidLevelName(level)));
    Members m(4, kMemberBytes);
    auto dev = Create(m, level, 4);
    ASSERT_NE(dev, nullptr);
    const std::vector<char> data = FillArray(dev.get(), 11);
    // Member 1 returns EIO on one data chunk that a plain read visits (stripe 0's D1 on
    // RAID 5, D0 on RAID 6; RAID 1 reads stripe 1 from mirror 1) and holds garbage there.
    const uint64_t chunk = 16 << 10;
    const uint64_t bad = kDataOffset + (level == RaidLevel::kRaid1 ? chunk : 0);
    std::vector<char> junk(chunk, 0x33);
    ASSERT_TRUE(WriteBytes(m.raw(1), bad, junk.data(), junk.size()).ok());
    m.faults(1)->FailRange(bad, chunk, /*reads=*/true, /*writes=*/false);
    std::vector<char> got(data.size());
    ASSERT_TRUE(ReadBytes(dev.get(), 0, got.data(), got.size()).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), data.data(), data.size()));
    EXPECT_GT(dev->raid_stats().read_errors_corrected, 0u);
    EXPECT_EQ(dev->Describe().failed, 0u) << "a corrected read error does not fail the member";
    m.faults(1)->ClearFailures();
    EXPECT_EQ(Mismatches(dev.get()), 0u) << "the bad range must have been rewritten";
  }
}

TEST(RaidFaults, WriteErrorFailsMemberAndArrayContinues) {
  for (RaidLevel level : {RaidLevel::kRaid5, RaidLevel::kRaid6, RaidLevel::kRaid1}) {
    SCOPED_TRACE(std::string(RaidLevelName(level)));
    Members m(4, kMemberBytes);
    auto dev = Create(m, level, 4);
    ASSERT_NE(dev, nullptr);
    std::vector<char> data = FillArray(dev.get(), 13);
    const uint64_t events = dev->Describe().events;
    m.faults(2)->FailRange(0, kMemberBytes, /*reads=*/false, /*writes=*/true);
    std::mt19937_64 rng(5);
    Fill(rng, data.data(), data.size());
    ASSERT_TRUE(WriteBytes(dev.get(), 0, data.data(), data.size()).ok());
    const RaidStatus st = dev->Describe();
    EXPECT_EQ(st.members[2].health, MemberHealth::kFailed);
    EXPECT_EQ(st.state, "degraded");
    EXPECT_GT(st.events, events);
    std::vector<char> got(data.size());
    ASSERT_TRUE(ReadBytes(dev.get(), 0, got.data(), got.size()).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), data.data(), data.size()));
    ASSERT_TRUE(dev->Stop().ok());
    dev.reset();
    // Assembled again: member 2 is stale (its superblock missed the failure).
    RaidOptions o;
    auto again = RaidDevice::Assemble(m.WrapFirst(4), o);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ((*again)->Describe().state, "degraded");
    ASSERT_TRUE(ReadBytes(again->get(), 0, got.data(), got.size()).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), data.data(), data.size()));
  }
}

TEST(RaidFaults, TwoLostOnRaid5IsDataLossNeverWrongData) {
  Members m(4, kMemberBytes);
  auto dev = Create(m, RaidLevel::kRaid5, 4);
  ASSERT_NE(dev, nullptr);
  const std::vector<char> data = FillArray(dev.get(), 17);
  ASSERT_TRUE(dev->FailMember(0).ok());
  const Status refused = dev->FailMember(1);
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused.ToString();
  m.faults(1)->FailRange(0, kMemberBytes, /*reads=*/true, /*writes=*/false);
  const uint64_t chunk = 16 << 10;
  uint64_t lost = 0, served = 0;
  std::vector<char> got(chunk);
  for (uint64_t off = 0; off < data.size(); off += chunk) {
    const Status st = ReadBytes(dev.get(), off, got.data(), chunk);
    if (st.ok()) {
      ++served;
      ASSERT_EQ(0, std::memcmp(got.data(), &data[off], chunk)) << "wrong data at " << off;
    } else {
      ++lost;
      EXPECT_TRUE(st.IsDataLoss()) << st.ToString();
    }
  }
  EXPECT_GT(lost, 0u);
  EXPECT_GT(served, 0u) << "chunks on the two healthy members are still readable";
}

// Degraded RAID 5: stripe 0's D0 lives on m0, which is failed, so a write of D0 is kept only
// by the parity (m3). When that parity write fails too, nothing holds the data any more: the
// write must say DataLoss (naming the stripe and the members), and so must a read of it.
TEST(RaidFaults, DegradedWriteWhoseParityWriteFailsIsDataLoss) {
  Members m(4, kMemberBytes);
  auto dev = Create(m, RaidLevel::kRaid5, 4);
  ASSERT_NE(dev, nullptr);
  const std::vector<char> data = FillArray(dev.get(), 29);
  ASSERT_TRUE(dev->FailMember(0).ok());
  const uint64_t chunk = 16 << 10;
  const uint32_t p = ParitySlotOfStripe0(4);
  m.faults(p)->FailRange(kDataOffset, chunk, /*reads=*/false, /*writes=*/true);
  std::vector<char> fresh(chunk, 0x6c);
  const Status st = WriteBytes(dev.get(), 0, fresh.data(), chunk);
  ASSERT_TRUE(st.IsDataLoss()) << st.ToString();
  EXPECT_NE(st.message().find("stripe 0"), std::string_view::npos) << st.ToString();
  EXPECT_NE(st.message().find("m0"), std::string_view::npos) << st.ToString();
  EXPECT_NE(st.message().find("m3"), std::string_view::npos) << st.ToString();
  EXPECT_NE(st.message().find("injected error"), std::string_view::npos) << st.ToString();
  EXPECT_EQ(dev->Describe().members[p].health, MemberHealth::kFailed);
  std::vector<char> got(chunk);
  const Status rd = ReadBytes(dev.get(), 0, got.data(), chunk);
  EXPECT_TRUE(rd.IsDataLoss()) << rd.ToString();
  // D1 and D2 of the stripe sit on healthy members: still readable, still the old data.
  ASSERT_TRUE(ReadBytes(dev.get(), chunk, got.data(), chunk).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), &data[chunk], chunk));
  ASSERT_TRUE(ReadBytes(dev.get(), 2 * chunk, got.data(), chunk).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), &data[2 * chunk], chunk));
}

// A write whose data reaches its own (healthy) member is not lost when the parity write
// fails on a degraded RAID 5: the write succeeds; only the failed member's chunk is lost.
TEST(RaidFaults, DegradedWriteToHealthyMemberSurvivesParityWriteError) {
  Members m(4, kMemberBytes);
  auto dev = Create(m, RaidLevel::kRaid5, 4);
  ASSERT_NE(dev, nullptr);
  const std::vector<char> data = FillArray(dev.get(), 31);
  ASSERT_TRUE(dev->FailMember(0).ok());
  const uint64_t chunk = 16 << 10;
  m.faults(ParitySlotOfStripe0(4))->FailRange(kDataOffset, chunk, false, true);
  std::vector<char> fresh(chunk, 0x1d);
  const Status st = WriteBytes(dev.get(), chunk, fresh.data(), chunk);  // D1, on m1
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<char> got(chunk);
  ASSERT_TRUE(ReadBytes(dev.get(), chunk, got.data(), chunk).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), fresh.data(), chunk));
  const Status rd = ReadBytes(dev.get(), 0, got.data(), chunk);  // D0, on failed m0
  EXPECT_TRUE(rd.IsDataLoss()) << rd.ToString();
}

// RAID 6 with two members failed: a write kept only by P and Q is lost when either of them
// fails its write.
TEST(RaidFaults, Raid6TwoFailedAndParityWriteErrorIsDataLoss) {
  // 6 members, left-symmetric, stripe 0: Q on m0, D0..D3 on m1..m4, P on m5.
  for (uint32_t bad : {5u, 0u}) {
    SCOPED_TRACE(bad == 5 ? "P fails" : "Q fails");
    Members m(6, kMemberBytes);
    auto dev = Create(m, RaidLevel::kRaid6, 6);
    ASSERT_NE(dev, nullptr);
    const std::vector<char> data = FillArray(dev.get(), 37 + bad);
    ASSERT_TRUE(dev->FailMember(1).ok());
    ASSERT_TRUE(dev->FailMember(2).ok());
    const uint64_t chunk = 16 << 10;
    m.faults(bad)->FailRange(kDataOffset, chunk, false, true);
    std::vector<char> fresh(chunk, 0x42);
    const Status st = WriteBytes(dev.get(), 0, fresh.data(), chunk);  // D0, on failed m1
    ASSERT_TRUE(st.IsDataLoss()) << st.ToString();
    EXPECT_NE(st.message().find("stripe 0"), std::string_view::npos) << st.ToString();
    EXPECT_NE(st.message().find("m" + std::to_string(bad)), std::string_view::npos)
        << st.ToString();
    EXPECT_EQ(dev->Describe().members[bad].health, MemberHealth::kFailed);
    std::vector<char> got(chunk);
    const Status rd = ReadBytes(dev.get(), 0, got.data(), chunk);
    EXPECT_TRUE(rd.IsDataLoss()) << rd.ToString();
    ASSERT_TRUE(ReadBytes(dev.get(), 2 * chunk, got.data(), chunk).ok());  // D2, on m3
    EXPECT_EQ(0, std::memcmp(got.data(), &data[2 * chunk], chunk));
  }
}

// RAID 5 with m0 failed and a read error on m1 in stripe 0: the stripe has two members
// unreadable, one more than parity rebuilds. Reads of what lived there say DataLoss, never
// wrong bytes; the read error does not fail m1, and once m1 reads again nothing was damaged.
TEST(RaidFaults, ReadErrorOnDegradedRaid5IsDataLoss) {
  Members m(4, kMemberBytes);
  auto dev = Create(m, RaidLevel::kRaid5, 4);
  ASSERT_NE(dev, nullptr);
  const std::vector<char> data = FillArray(dev.get(), 43);
  ASSERT_TRUE(dev->FailMember(0).ok());
  const uint64_t chunk = 16 << 10;
  m.faults(1)->FailRange(kDataOffset, chunk, /*reads=*/true, /*writes=*/false);
  std::vector<char> got(3 * chunk);
  // Stripe 0: D0 on failed m0, D1 on m1 (read error), D2 on m2, P on m3.
  for (uint64_t off : {uint64_t{0}, chunk}) {
    const Status st = ReadBytes(dev.get(), off, got.data(), chunk);
    EXPECT_TRUE(st.IsDataLoss()) << "chunk at " << off << ": " << st.ToString();
  }
  const Status whole = ReadBytes(dev.get(), 0, got.data(), 3 * chunk);
  EXPECT_TRUE(whole.IsDataLoss()) << whole.ToString();
  ASSERT_TRUE(ReadBytes(dev.get(), 2 * chunk, got.data(), chunk).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), &data[2 * chunk], chunk));
  EXPECT_EQ(dev->Describe().members[1].health, MemberHealth::kInSync);
  m.faults(1)->ClearFailures();
  ASSERT_TRUE(ReadBytes(dev.get(), 0, got.data(), 3 * chunk).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), data.data(), 3 * chunk));
}

// Writes into that stripe (m0 failed, m1 read error): parity can no longer be rebuilt from
// all the data, so a write must not leave it stale, or D0, rebuilt later from D1, D2 and P
// once m1 reads again, would come out wrong. A write whose old data and parity are readable
// updates parity by read-modify-write; one that needs the unreadable data is refused with
// DataLoss and writes nothing.
TEST(RaidFaults, WriteIntoStripeWithReadErrorOnDegradedRaid5KeepsParity) {
  Members m(4, kMemberBytes);
  auto dev = Create(m, RaidLevel::kRaid5, 4);
  ASSERT_NE(dev, nullptr);
  std::vector<char> data = FillArray(dev.get(), 47);
  ASSERT_TRUE(dev->FailMember(0).ok());
  const uint64_t chunk = 16 << 10;
  m.faults(1)->FailRange(kDataOffset, chunk, /*reads=*/true, /*writes=*/false);
  std::vector<char> fresh(4096, 0x5e);
  // D2 (on m2): old D2 and P readable.
  ASSERT_TRUE(WriteBytes(dev.get(), 2 * chunk + 4096, fresh.data(), 4096).ok());
  std::memcpy(&data[2 * chunk + 4096], fresh.data(), 4096);
  // D1 (on m1): its old data cannot be read, D0 cannot be rebuilt without it.
  const Status st = WriteBytes(dev.get(), chunk, fresh.data(), 4096);
  EXPECT_TRUE(st.IsDataLoss()) << st.ToString();
  EXPECT_NE(st.message().find("stripe 0"), std::string_view::npos) << st.ToString();
  m.faults(1)->ClearFailures();
  std::vector<char> got(3 * chunk);
  ASSERT_TRUE(ReadBytes(dev.get(), 0, got.data(), 3 * chunk).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), data.data(), chunk)) << "D0 rebuilt wrong";
  EXPECT_EQ(0, std::memcmp(&got[chunk], &data[chunk], chunk)) << "D1";
  EXPECT_EQ(0, std::memcmp(&got[2 * chunk], &data[2 * chunk], chunk)) << "D2";
}

TEST(RaidFaults, Raid6SurvivesTwoAndReportsThree) {
  Members m(6, kMemberBytes);
  auto dev = Create(m, RaidLevel::kRaid6, 6);
  ASSERT_NE(dev, nullptr);
  const std::vector<char> data = FillArray(dev.get(), 19);
  ASSERT_TRUE(dev->FailMember(1).ok());
  ASSERT_TRUE(dev->FailMember(4).ok());
  std::vector<char> got(data.size());
  ASSERT_TRUE(ReadBytes(dev.get(), 0, got.data(), got.size()).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), data.data(), data.size()));
  m.faults(2)->FailRange(0, kMemberBytes, true, false);
  const Status st = ReadBytes(dev.get(), 0, got.data(), got.size());
  EXPECT_TRUE(st.IsDataLoss()) << st.ToString();
}

// RAID 0 keeps one copy, so a member's write or read error loses that range: DataLoss naming
// the member and the array (with the member's own error), and the member is failed, so later
// I/O to any of its ranges is refused at once even when the device would serve it again.
TEST(RaidFaults, Raid0MemberErrorIsDataLossAndFailsMember) {
  for (const bool write : {true, false}) {
    SCOPED_TRACE(write ? "write error" : "read error");
    Members m(3, kMemberBytes);
    auto dev = Create(m, RaidLevel::kRaid0, 3);
    ASSERT_NE(dev, nullptr);
    const std::vector<char> data = FillArray(dev.get(), 41);
    const uint64_t chunk = 16 << 10;
    // RAID 0, 3 members: stripe s holds array chunks 3s, 3s+1, 3s+2 on m0, m1, m2.
    const uint32_t bad = write ? 1 : 2;
    m.faults(bad)->FailRange(kDataOffset, chunk, /*reads=*/!write, /*writes=*/write);
    std::vector<char> buf(3 * chunk, 0x77);
    const Status st = write ? WriteBytes(dev.get(), 0, buf.data(), buf.size())
                            : ReadBytes(dev.get(), 0, buf.data(), buf.size());
    ASSERT_TRUE(st.IsDataLoss()) << st.ToString();
    EXPECT_NE(st.message().find("raid0("), std::string_view::npos) << st.ToString();
    EXPECT_NE(st.message().find("member m" + std::to_string(bad)), std::string_view::npos)
        << st.ToString();
    EXPECT_NE(st.message().find("injected error"), std::string_view::npos) << st.ToString();
    const RaidStatus status = dev->Describe();
    EXPECT_EQ(status.members[bad].health, MemberHealth::kFailed);
    EXPECT_EQ(status.members[write ? 2 : 1].health, MemberHealth::kInSync);
    EXPECT_EQ(status.failed, 1u);

    // The device would serve I/O again, but the member stays failed: its other ranges (stripe
    // 1's chunk 3 + bad) are refused, and nothing is written to it.
    m.faults(bad)->ClearFailures();
    const uint64_t errors = m.faults(bad)->injected_errors();
    const uint64_t off = (3 + bad) * chunk;
    std::vector<char> got(chunk);
    const Status rd = ReadBytes(dev.get(), off, got.data(), chunk);
    EXPECT_TRUE(rd.IsDataLoss()) << rd.ToString();
    std::vector<char> fresh(chunk, 0x13);
    const Status wr = WriteBytes(dev.get(), off, fresh.data(), chunk);
    EXPECT_TRUE(wr.IsDataLoss()) << wr.ToString();
    ASSERT_TRUE(ReadBytes(m.raw(bad), kDataOffset + chunk, got.data(), chunk).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), &data[off], chunk)) << "a failed member was written";
    EXPECT_EQ(m.faults(bad)->injected_errors(), errors);
    // The other members still serve their ranges.
    const uint64_t good = (3 + (bad + 1) % 3) * chunk;
    ASSERT_TRUE(ReadBytes(dev.get(), good, got.data(), chunk).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), &data[good], chunk));
  }
}

// Writes, a flush, more writes, then power loss with a random subset of the unflushed member
// writes landing. After assembly the bitmap resync leaves every stripe consistent, and every
// block holds its flushed contents or one of the later writes.
TEST(RaidFaults, CrashThenBitmapResyncThenCheckIsClean) {
  const uint64_t seed = TestSeed();
  for (RaidLevel level : {RaidLevel::kRaid5, RaidLevel::kRaid6, RaidLevel::kRaid1}) {
    SCOPED_TRACE(std::string(RaidLevelName(level)) + " " + SeedTrace(seed));
    std::mt19937_64 rng(seed);
    Members m(5, kMemberBytes);
    auto dev = Create(m, level, 5);
    ASSERT_NE(dev, nullptr);
    const uint64_t blocks = dev->size_bytes() / 4096;
    std::vector<char> data = FillArray(dev.get(), seed);
    std::vector<std::set<std::string>> allowed(blocks);
    for (uint64_t b = 0; b < blocks; ++b) allowed[b].insert(std::string(&data[b * 4096], 4096));
    // Unflushed writes into a few regions.
    for (int i = 0; i < 6; ++i) {
      const uint64_t n = 1 + rng() % 12;
      const uint64_t first = rng() % (blocks - n);
      std::vector<char> w(n * 4096);
      Fill(rng, w.data(), w.size());
      ASSERT_TRUE(WriteBytes(dev.get(), first * 4096, w.data(), w.size()).ok());
      for (uint64_t b = 0; b < n; ++b) allowed[first + b].insert(std::string(&w[b * 4096], 4096));
    }
    for (uint32_t i = 0; i < 5; ++i) m.faults(i)->Crash(CrashMode::kRandomSubset, seed + i);
    EXPECT_FALSE(dev->Stop().ok());
    dev.reset();

    RaidOptions o;
    o.bitmap_clear_delay_ms = 0;
    auto again = RaidDevice::Assemble(m.WrapFirst(5), o);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    RaidDevice* d = again->get();
    const RaidStatus st = d->Describe();
    EXPECT_FALSE(st.clean);
    EXPECT_GT(st.resync_regions, 0u);
    EXPECT_LT(st.resync_regions * st.bitmap_region_bytes, st.member_data_bytes)
        << "only the dirty regions are resynced";
    auto resync = d->Sync(RaidSyncAction::kResync, {});
    ASSERT_TRUE(resync.ok()) << resync.status().ToString();
    EXPECT_TRUE(resync->completed);
    EXPECT_LT(resync->done_bytes, st.member_data_bytes);
    EXPECT_EQ(d->Describe().resync_regions, 0u);
    EXPECT_EQ(Mismatches(d), 0u);
    std::vector<char> got(d->size_bytes());
    ASSERT_TRUE(ReadBytes(d, 0, got.data(), got.size()).ok());
    for (uint64_t b = 0; b < blocks; ++b) {
      ASSERT_TRUE(allowed[b].count(std::string(&got[b * 4096], 4096))) << "block " << b;
    }
  }
}

TEST(RaidFaults, CheckAndRebuildResumeFromCheckpoint) {
  Members m(4, kMemberBytes);
  auto dev = Create(m, RaidLevel::kRaid5, 4);
  ASSERT_NE(dev, nullptr);
  const std::vector<char> data = FillArray(dev.get(), 23);
  RaidSyncOptions part;
  part.max_bytes = 128 << 10;
  auto first = dev->Sync(RaidSyncAction::kCheck, part);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->completed);
  EXPECT_EQ(first->checkpoint_bytes, 128u << 10);
  EXPECT_EQ(dev->Describe().sync.action, "check");
  auto rest = dev->Sync(RaidSyncAction::kCheck, {});
  ASSERT_TRUE(rest.ok());
  EXPECT_TRUE(rest->completed);
  EXPECT_EQ(rest->start_bytes, 128u << 10);
  EXPECT_EQ(dev->Describe().sync.action, "idle");

  // Rebuild half a replacement, stop the array, assemble again, finish the rebuild.
  ASSERT_TRUE(dev->FailMember(2).ok());
  const uint32_t fresh = m.Add(kMemberBytes);
  ASSERT_TRUE(dev->ReplaceMember(2, m.Wrap(fresh)).ok());
  auto half = dev->Sync(RaidSyncAction::kRebuild, part);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_FALSE(half->completed);
  ASSERT_TRUE(dev->Stop().ok());
  dev.reset();
  auto again = RaidDevice::Assemble(m.WrapAll({0, 1, fresh, 3}), RaidOptions());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  const RaidStatus st = (*again)->Describe();
  EXPECT_EQ(st.members[2].health, MemberHealth::kRebuilding);
  EXPECT_EQ(st.rebuild_checkpoint, 128u << 10);
  auto done = (*again)->Sync(RaidSyncAction::kRebuild, {});
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(done->completed);
  EXPECT_EQ(done->start_bytes, 128u << 10);
  EXPECT_EQ((*again)->Describe().members[2].health, MemberHealth::kInSync);
  // With the rebuilt member in and another failed, the data must come out right.
  ASSERT_TRUE((*again)->FailMember(0).ok());
  std::vector<char> got(data.size());
  ASSERT_TRUE(ReadBytes(again->get(), 0, got.data(), got.size()).ok());
  EXPECT_EQ(0, std::memcmp(got.data(), data.data(), data.size()));
}

TEST(RaidFaults, AssemblyFromDevices) {
  Members a(3, kMemberBytes), b(3, kMemberBytes);
  auto da = Create(a, RaidLevel::kRaid5, 3);
  auto db = Create(b, RaidLevel::kRaid5, 3);
  ASSERT_TRUE(da && db);
  ASSERT_TRUE(da->Stop().ok());
  ASSERT_TRUE(db->Stop().ok());
  da.reset();
  db.reset();
  // Any order works.
  auto ok = RaidDevice::Assemble(a.WrapAll({2, 0, 1}), RaidOptions());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)->Describe().state, "clean");
  EXPECT_EQ((*ok)->SlotOf("m2"), 2);
  ok->reset();
  // Mixed arrays are refused with every member named.
  std::vector<RaidMember> mixed = a.WrapAll({0, 1});
  mixed.push_back(b.Wrap(2));
  mixed.back().name = "other";
  auto bad = RaidDevice::Assemble(std::move(mixed), RaidOptions());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("different arrays"), std::string_view::npos);
  EXPECT_NE(bad.status().message().find("other"), std::string_view::npos);
}

TEST(RaidFaults, CreateRejectsBadInput) {
  Members m(4, kMemberBytes);
  m.Add(1 << 20);  // too small
  auto create = [&](RaidLevel level, std::vector<uint32_t> which, uint64_t chunk, uint64_t unit) {
    RaidCreateOptions co;
    co.level = level;
    co.chunk_bytes = chunk;
    co.unit_bytes = unit;
    return RaidDevice::Create(m.WrapAll(which), co, RaidOptions()).status();
  };
  Status s = create(RaidLevel::kRaid5, {0, 1}, 65536, 0);
  EXPECT_NE(s.message().find("needs 3"), std::string_view::npos) << s.ToString();
  s = create(RaidLevel::kRaid5, {0, 1, 2}, 3000, 0);
  EXPECT_NE(s.message().find("power of two"), std::string_view::npos) << s.ToString();
  s = create(RaidLevel::kRaid5, {0, 1, 2}, 16384, 65536);
  EXPECT_NE(s.message().find("larger than the chunk"), std::string_view::npos) << s.ToString();
  s = create(RaidLevel::kRaid5, {0, 1, 4}, 16384, 0);
  EXPECT_NE(s.message().find("m4 is too small"), std::string_view::npos) << s.ToString();
  EXPECT_TRUE(s.IsInvalidArgument());
}

}  // namespace
}  // namespace folio::raid_test
