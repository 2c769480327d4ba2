// ReadAsIfMissing / RepairMember: a byte flipped on one member (no I/O error, wrong bytes)
// reads back right only when that member is treated as missing; repairing it makes normal
// reads right and `check` clean again.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "folio/raid.h"
#include "raid/geometry.h"
#include "raid/raid_test_util.h"

namespace folio::raid_test {
namespace {


struct HealCase {
  RaidLevel level;
  uint32_t members;
};

class RaidHealTest : public ::testing::TestWithParam<HealCase> {};

TEST_P(RaidHealTest, FlippedByteHealsFromTheOtherMembers) {
  const HealCase c = GetParam();
  uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Members m(c.members, 8 << 20);
  RaidCreateOptions co;
  co.level = c.level;
  co.chunk_bytes = 16 << 10;
  co.assume_clean = true;
  RaidOptions o;
  o.bitmap_clear_delay_ms = 0;
  auto made = RaidDevice::Create(m.WrapFirst(c.members), co, o);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  RaidDevice* dev = made->get();
  const uint64_t len = 1 << 20;
  std::vector<char> good(len);
  Fill(rng, good.data(), len);
  ASSERT_TRUE(WriteBytes(dev, 0, good.data(), len).ok());
  ASSERT_TRUE(dev->Flush().ok());

  RaidStatus st = dev->Describe();
  auto geometry = raid::StripeGeometry::Create(raid::GeometryParams{
      st.level, st.layout, st.member_count, st.chunk_bytes, st.member_data_bytes});
  ASSERT_TRUE(geometry.ok());
  const uint64_t pos = rng() % len;
  raid::DataLocation loc = geometry->Locate(pos);
  const uint32_t bad = c.level == RaidLevel::kRaid1 ? static_cast<uint32_t>(rng() % c.members)
                                                    : loc.member;
  // Flip one byte of the member (4 KiB-aligned I/O: read, change, write back).
  std::vector<char> block(4096);
  const uint64_t member_block = (kDataOffset + loc.member_pos) / 4096 * 4096;
  ASSERT_TRUE(ReadBytes(m.raw(bad), member_block, block.data(), 4096).ok());
  block[(kDataOffset + loc.member_pos) % 4096] ^= 0x5a;
  ASSERT_TRUE(WriteBytes(m.raw(bad), member_block, block.data(), 4096).ok());

  const uint64_t range_off = pos / 4096 * 4096, range_len = 8192;
  const uint64_t off = std::min(range_off, len - range_len);
  std::vector<char> out(range_len);
  if (c.level != RaidLevel::kRaid1) {  // (RAID 1 may read either mirror)
    ASSERT_TRUE(ReadBytes(dev, off, out.data(), range_len).ok());
    EXPECT_NE(0, std::memcmp(out.data(), good.data() + off, range_len)) << "flip not visible";
  }
  for (uint32_t s = 0; s < c.members; ++s) {
    AlignedBuffer b(range_len);
    ASSERT_TRUE(dev->ReadAsIfMissing(s, off, range_len, b.data()).ok());
    bool right = std::memcmp(b.data(), good.data() + off, range_len) == 0;
    if (c.level == RaidLevel::kRaid1) {
      // Missing s: read from member 0, or member 1 when s is 0.
      EXPECT_EQ(right, (s == 0 ? 1u : 0u) != bad) << "slot " << s;
    } else {
      EXPECT_EQ(right, s == bad) << "slot " << s;
    }
  }
  AlignedBuffer fix(range_len);
  std::memcpy(fix.data(), good.data() + off, range_len);
  ASSERT_TRUE(dev->RepairMember(bad, off, range_len, fix.data()).ok());
  ASSERT_TRUE(ReadBytes(dev, off, out.data(), range_len).ok());
  EXPECT_EQ(0, std::memcmp(out.data(), good.data() + off, range_len));
  auto check = dev->Sync(RaidSyncAction::kCheck, {});
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->mismatches, 0u);
  EXPECT_GT(dev->raid_stats().read_errors_corrected, 0u);
}

INSTANTIATE_TEST_SUITE_P(Levels, RaidHealTest,
                         ::testing::Values(HealCase{RaidLevel::kRaid1, 2},
                                           HealCase{RaidLevel::kRaid5, 4},
                                           HealCase{RaidLevel::kRaid6, 5}));

TEST(RaidHealArgsTest, RejectsRaid0BadSlotsAndRanges) {
  Members m(2, 4 << 20);
  RaidCreateOptions co;
  co.level = RaidLevel::kRaid0;
  co.assume_clean = true;
  auto r0 = RaidDevice::Create(m.WrapFirst(2), co, {});
  ASSERT_TRUE(r0.ok());
  AlignedBuffer b(4096);
  EXPECT_EQ((*r0)->ReadAsIfMissing(0, 0, 4096, b.data()).code(), StatusCode::kInvalidArgument);
  Members m5(3, 4 << 20);
  co.level = RaidLevel::kRaid5;
  auto r5 = RaidDevice::Create(m5.WrapFirst(3), co, {});
  ASSERT_TRUE(r5.ok());
  EXPECT_EQ((*r5)->ReadAsIfMissing(3, 0, 4096, b.data()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*r5)->ReadAsIfMissing(0, 100, 4096, b.data()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*r5)->RepairMember(0, (*r5)->size_bytes(), 4096, b.data()).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace folio::raid_test
