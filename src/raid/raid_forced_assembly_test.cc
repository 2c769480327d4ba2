// Forced assembly (RaidAssembleOptions::force) after ENOSPC failed every member of an array in
// turn: members over FaultDevices whose unwritten half is "unallocated" (writes there fail with
// ENOSPC, as in sparse files on a full file system), while superblock and bitmap blocks,
// written at create, still take overwrites.
#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/test_seed.h"
#include "folio/raid.h"
#include "raid/raid_test_util.h"

namespace folio::raid_test {
namespace {

constexpr uint64_t kForcedMemberBytes = 2ull << 20;

struct Case {
  RaidLevel level;
  uint32_t members;
};

class RaidForcedAssemblyTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    RaidCreateOptions co;
    co.level = GetParam().level;
    co.chunk_bytes = 16 << 10;
    co.assume_clean = true;
    auto dev = RaidDevice::Create(m_.WrapFirst(GetParam().members), co, RaidOptions{});
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    raid_ = std::move(dev).value();
    // The first half of the array holds data; the second half was never written.
    half_ = raid_->size_bytes() / 2;
    data_.resize(half_);
    std::mt19937_64 rng(seed_);
    Fill(rng, data_.data(), data_.size());
    ASSERT_TRUE(WriteBytes(raid_.get(), 0, data_.data(), data_.size()).ok());
    ASSERT_TRUE(raid_->Flush().ok());
  }

  // The file system fills: every member's unwritten half refuses writes. A write there fails
  // every member in turn (each failure recorded by the members still in), and the array ends
  // with fewer members in sync than it needs.
  void FillUpAndWrite() {
    const uint64_t member_data = raid_->Describe().member_data_bytes;
    for (uint32_t i = 0; i < GetParam().members; ++i) {
      m_.faults(i)->SetInjectedErrno(ENOSPC);
      m_.faults(i)->FailRange(kDataOffset + member_data / 2, member_data / 2, /*reads=*/false,
                              /*writes=*/true);
    }
    std::vector<char> more(64 << 10, 'x');
    EXPECT_FALSE(WriteBytes(raid_.get(), raid_->size_bytes() - more.size(), more.data(),
                            more.size())
                     .ok());
    EXPECT_EQ(raid_->Describe().state, "failed");
    (void)raid_->Stop();
    raid_.reset();  // its FaultDevices go with it: the next wrappers inject nothing (space freed)
  }

  Members m_{5, kForcedMemberBytes};
  const uint64_t seed_ = TestSeed();
  std::unique_ptr<RaidDevice> raid_;
  uint64_t half_ = 0;
  std::vector<char> data_;
};

TEST_P(RaidForcedAssemblyTest, TakesBackTheLastMemberToFailWritesItDownAndResyncs) {
  FOLIO_SEED_TRACE(seed_);
  const uint32_t n = GetParam().members;
  FillUpAndWrite();
  auto plain = RaidDevice::Assemble(m_.WrapFirst(n), RaidOptions{});
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().ToString().find("1 of " + std::to_string(n) + " members in sync"),
            std::string::npos)
      << plain.status().ToString();

  auto forced = RaidDevice::Assemble(m_.WrapFirst(n), RaidOptions{}, {.force = true});
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  RaidStatus st = (*forced)->Describe();
  // As many as needed (one), the most recent to fail: one update behind.
  ASSERT_EQ(st.forced.size(), 1u);
  EXPECT_EQ(st.forced[0].events_behind, 1u);
  EXPECT_EQ(st.forced[0].name, m_.Name(st.forced[0].slot));
  EXPECT_EQ(st.members[st.forced[0].slot].health, MemberHealth::kInSync);
  EXPECT_EQ(st.failed, RaidFailureTolerance(GetParam().level, n)) << "the others stay out";
  EXPECT_EQ(st.resync_regions, (st.member_data_bytes + st.bitmap_region_bytes - 1) /
                                   st.bitmap_region_bytes)
      << "every region waits for a resync";
  // Nothing the array acknowledged reads back wrong: each 4K is the data or an error.
  std::vector<char> got(4096);
  for (uint64_t pos = 0; pos < half_; pos += got.size()) {
    Status s = ReadBytes(forced->get(), pos, got.data(), got.size());
    if (s.ok()) {
      ASSERT_EQ(std::memcmp(got.data(), data_.data() + pos, got.size()), 0) << pos;
    }
  }
  ASSERT_TRUE((*forced)->Stop().ok());
  forced->reset();

  // The decision is on disk: a plain assembly now starts the array (degraded), forcing nothing.
  auto again = RaidDevice::Assemble(m_.WrapFirst(n), RaidOptions{});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE((*again)->Describe().forced.empty());
  EXPECT_EQ((*again)->Describe().state, "degraded");
}

INSTANTIATE_TEST_SUITE_P(Levels, RaidForcedAssemblyTest,
                         ::testing::Values(Case{RaidLevel::kRaid5, 3}, Case{RaidLevel::kRaid6, 4}),
                         [](const auto& info) {
                           return std::string(RaidLevelName(info.param.level));
                         });

}  // namespace
}  // namespace folio::raid_test
