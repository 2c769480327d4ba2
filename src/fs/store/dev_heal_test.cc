// RAID healing under a dev: store: a byte flipped on one member (no I/O error, wrong bytes) is
// found by the sector CRCs, rebuilt from the other members, returned to the reader and
// written back, so a second read is clean and `check` finds no mismatch.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "folio/fault_device.h"
#include "folio/raid.h"
#include "fs/store/dev_format.h"
#include "fs/store/dev_store.h"
#include "fs/store/store_test_util.h"
#include "raid/geometry.h"

namespace folio::store {
namespace {

struct HealCase {
  RaidLevel level;
  uint32_t members;
};

class DevHealTest : public ::testing::TestWithParam<HealCase> {};

TEST_P(DevHealTest, FlippedMemberByteHealsAndCheckIsClean) {
  const HealCase c = GetParam();
  std::vector<std::unique_ptr<BlockDevice>> mem;
  std::vector<RaidMember> members;
  for (uint32_t i = 0; i < c.members; ++i) {
    MemDeviceOptions o;
    o.size_bytes = 16 << 20;
    auto d = NewMemDevice(o);
    ASSERT_TRUE(d.ok());
    members.push_back({"m" + std::to_string(i), FaultDevice::WrapUnowned(d->get())});
    mem.push_back(std::move(*d));
  }
  RaidCreateOptions co;
  co.level = c.level;
  co.chunk_bytes = 16 << 10;
  co.assume_clean = true;
  RaidOptions ro;
  ro.bitmap_clear_delay_ms = 0;
  auto raid = RaidDevice::Create(std::move(members), co, ro);
  ASSERT_TRUE(raid.ok()) << raid.status().ToString();
  DevFormatOptions f;
  f.segment_bytes = 1 << 20;
  ASSERT_TRUE(FormatDevStore(raid->get(), "vol", f).ok());
  RaidStatus rs = (*raid)->Describe();

  std::mutex log_mu;
  std::vector<std::string> log;
  StoreOptions so;
  so.prefix = "vol";
  so.log = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.emplace_back(line);
  };
  auto opened = OpenDevStore(std::move(*raid), "dev:raid:test", so);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<DevStore> store = std::move(*opened);
  ObjectKey k = ObjectKey::Block(42, 0, 100000);
  const std::string want = test::ObjectBytes(k);
  ASSERT_TRUE(store->Put(k, want.data()).ok());

  // The object's first sector is the first record of segment 0, after two 4 KiB headers.
  AlignedBuffer sbuf = AllocUnits(4096);
  ASSERT_TRUE(store->device()->Read(0, sbuf.data(), 4096).ok());
  auto sb = dev::DecodeSuperblock(sbuf.data());
  ASSERT_TRUE(sb.ok());
  const uint64_t array_pos = sb->data_offset + 2 * 4096 + 1000;  // in sector 0 of the object
  auto geometry = raid::StripeGeometry::Create(raid::GeometryParams{
      rs.level, rs.layout, rs.member_count, rs.chunk_bytes, rs.member_data_bytes});
  ASSERT_TRUE(geometry.ok());
  raid::DataLocation loc = geometry->Locate(array_pos);
  const uint64_t member_off = rs.data_offset_bytes + loc.member_pos;
  AlignedBuffer block = AllocUnits(4096);
  ASSERT_TRUE(mem[loc.member]->Read(member_off / 4096 * 4096, block.data(), 4096).ok());
  block.data()[member_off % 4096] ^= 0x40;
  ASSERT_TRUE(mem[loc.member]->Write(member_off / 4096 * 4096, block.data(), 4096).ok());

  std::string out(k.bytes, '\0');
  ASSERT_TRUE(store->Get(k, 0, 4096, out.data()).ok());
  EXPECT_EQ(out.substr(0, 4096), want.substr(0, 4096));
  StoreStatsSnapshot st = store->stats();
  EXPECT_EQ(st.checksum_failures, 1u);
  EXPECT_EQ(st.healed, 1u);
  ASSERT_TRUE(store->Get(k, 0, k.bytes, out.data()).ok());
  EXPECT_EQ(out, want);
  EXPECT_EQ(store->stats().checksum_failures, 1u) << "second read was not clean";
  EXPECT_EQ(store->dev_stats().heal_attempts, 1u);
  {
    std::lock_guard<std::mutex> lock(log_mu);
    bool named = false;
    for (const auto& l : log) named |= l.find("healed: member " + std::to_string(loc.member)) != std::string::npos;
    EXPECT_TRUE(named) << "no log line names member " << loc.member;
  }
  auto* array = dynamic_cast<RaidDevice*>(store->device());
  ASSERT_NE(array, nullptr);
  auto check = array->Sync(RaidSyncAction::kCheck, {});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->mismatches, 0u);
}

TEST_P(DevHealTest, DamageOnTwoMembersIsCorruption) {
  const HealCase c = GetParam();
  std::vector<std::unique_ptr<BlockDevice>> mem;
  std::vector<RaidMember> members;
  for (uint32_t i = 0; i < c.members; ++i) {
    MemDeviceOptions o;
    o.size_bytes = 16 << 20;
    auto d = NewMemDevice(o);
    ASSERT_TRUE(d.ok());
    members.push_back({"m" + std::to_string(i), FaultDevice::WrapUnowned(d->get())});
    mem.push_back(std::move(*d));
  }
  RaidCreateOptions co;
  co.level = c.level;
  co.chunk_bytes = 16 << 10;
  co.assume_clean = true;
  auto raid = RaidDevice::Create(std::move(members), co, RaidOptions{});
  ASSERT_TRUE(raid.ok());
  DevFormatOptions f;
  f.segment_bytes = 1 << 20;
  ASSERT_TRUE(FormatDevStore(raid->get(), "vol", f).ok());
  RaidStatus rs = (*raid)->Describe();
  StoreOptions so;
  so.prefix = "vol";
  so.log = [](std::string_view) {};
  auto opened = OpenDevStore(std::move(*raid), "dev:raid:test", so);
  ASSERT_TRUE(opened.ok());
  ObjectKey k = ObjectKey::Block(7, 0, 60000);
  ASSERT_TRUE((*opened)->Put(k, test::ObjectBytes(k).data()).ok());
  AlignedBuffer sbuf = AllocUnits(4096);
  ASSERT_TRUE((*opened)->device()->Read(0, sbuf.data(), 4096).ok());
  auto sb = dev::DecodeSuperblock(sbuf.data());
  ASSERT_TRUE(sb.ok());
  auto geometry = raid::StripeGeometry::Create(raid::GeometryParams{
      rs.level, rs.layout, rs.member_count, rs.chunk_bytes, rs.member_data_bytes});
  ASSERT_TRUE(geometry.ok());
  // The same sector damaged through two data chunks: one sector spans [pos, pos + 4096);
  // flip a byte in the first and in the next chunk's member (16 KiB chunks, object 60000 B).
  for (uint64_t delta : {uint64_t{100}, uint64_t{16 << 10}}) {
    raid::DataLocation loc = geometry->Locate(sb->data_offset + 2 * 4096 + delta);
    const uint64_t off = rs.data_offset_bytes + loc.member_pos;
    AlignedBuffer block = AllocUnits(4096);
    ASSERT_TRUE(mem[loc.member]->Read(off / 4096 * 4096, block.data(), 4096).ok());
    block.data()[off % 4096] ^= 1;
    ASSERT_TRUE(mem[loc.member]->Write(off / 4096 * 4096, block.data(), 4096).ok());
  }
  std::string out(k.bytes, '\0');
  Status s = (*opened)->Get(k, 0, k.bytes, out.data());
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_EQ((*opened)->stats().healed, 0u);
}

INSTANTIATE_TEST_SUITE_P(Levels, DevHealTest,
                         ::testing::Values(HealCase{RaidLevel::kRaid5, 4},
                                           HealCase{RaidLevel::kRaid6, 5}));

}  // namespace
}  // namespace folio::store
