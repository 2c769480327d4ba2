// A member file truncated under a running array (RAID 5 and RAID 1, real files through the
// file device): the member fails and its data is served from the others, never as zeros; the
// truncated file is not grown back by "repair" writes.
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/aligned_buffer.h"
#include "base/test_seed.h"
#include "folio/raid.h"
#include "io/io_test_util.h"
#include "raid/raid_test_util.h"

namespace folio {
namespace {

constexpr uint64_t kWholeMemberBytes = 4ull << 20;
constexpr uint64_t kShrunkBytes = (1ull << 20) + (128 << 10);  // metadata and two chunks left

uint64_t FileBytes(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

class RaidMemberShrinkTest : public ::testing::TestWithParam<RaidLevel> {
 protected:
  void SetUp() override {
    const uint32_t n = GetParam() == RaidLevel::kRaid1 ? 2 : 3;
    std::vector<RaidMember> members;
    for (uint32_t i = 0; i < n; ++i) {
      paths_.push_back(dir_.File("m" + std::to_string(i)));
      FileDeviceOptions o;
      o.create = true;
      o.size_bytes = kWholeMemberBytes;
      auto dev = OpenFileDevice(paths_.back(), o);
      ASSERT_TRUE(dev.ok()) << dev.status().ToString();
      members.push_back({paths_.back(), std::move(dev).value()});
    }
    RaidCreateOptions c;
    c.level = GetParam();
    c.chunk_bytes = 64 << 10;
    c.assume_clean = true;
    auto raid = RaidDevice::Create(std::move(members), c, RaidOptions{});
    ASSERT_TRUE(raid.ok()) << raid.status().ToString();
    raid_ = std::move(raid).value();
    model_.resize(raid_->size_bytes());
    std::mt19937_64 rng(seed_);
    raid_test::Fill(rng, model_.data(), model_.size());
    ASSERT_TRUE(raid_test::WriteBytes(raid_.get(), 0, model_.data(), model_.size()).ok());
    ASSERT_TRUE(raid_->Flush().ok());
  }

  // The whole array in 64K reads (so every member serves some), compared with the model.
  void ExpectContentIsTheModel() {
    AlignedBuffer buf(64 << 10);
    for (uint64_t pos = 0; pos < model_.size(); pos += buf.size()) {
      Status s = raid_->Read(pos, buf.data(), buf.size());
      ASSERT_TRUE(s.ok()) << "at " << pos << ": " << s.ToString();
      ASSERT_EQ(std::memcmp(buf.data(), model_.data() + pos, buf.size()), 0)
          << "array bytes at " << pos << " differ (a shrunk member read as zeros?)";
    }
  }

  io_test::TempDir dir_;
  const uint64_t seed_ = TestSeed();
  std::vector<std::string> paths_;
  std::unique_ptr<RaidDevice> raid_;
  std::vector<char> model_;
};

TEST_P(RaidMemberShrinkTest, AReadPastTheEndFailsTheMemberAndTheOthersServeItsData) {
  FOLIO_SEED_TRACE(seed_);
  // Member 0: RAID 1 reads it first, RAID 5 keeps data chunks on it.
  ASSERT_EQ(::truncate(paths_[0].c_str(), static_cast<off_t>(kShrunkBytes)), 0);
  ExpectContentIsTheModel();
  const RaidStatus st = raid_->Describe();
  EXPECT_EQ(st.members[0].health, MemberHealth::kFailed);
  EXPECT_EQ(st.state, "degraded");
  if (GetParam() == RaidLevel::kRaid5) {
    EXPECT_GT(raid_->raid_stats().degraded_reads, 0u) << "member 0's chunks came from parity";
  }
  EXPECT_EQ(FileBytes(paths_[0]), kShrunkBytes) << "nothing wrote the shrunk member back";
  // The array goes on degraded: writes land, and read back.
  std::mt19937_64 rng(seed_ + 1);
  raid_test::Fill(rng, model_.data(), 256 << 10);
  ASSERT_TRUE(raid_test::WriteBytes(raid_.get(), 0, model_.data(), 256 << 10).ok());
  ExpectContentIsTheModel();
}

// No read meets the end, but the next flush finds the shrink: the member fails there, before
// a read could see the hole that a write past the end leaves (the write, in the middle of the
// array, grows the file back to less than the device's size; io/file_device_impl.h says what
// a write up to the very end would hide).
TEST_P(RaidMemberShrinkTest, AFlushFindsAShrinkNoReadMet) {
  FOLIO_SEED_TRACE(seed_);
  ASSERT_EQ(::truncate(paths_[0].c_str(), static_cast<off_t>(kShrunkBytes)), 0);
  std::mt19937_64 rng(seed_ + 2);
  const uint64_t pos = raid_->size_bytes() / 2;
  raid_test::Fill(rng, model_.data() + pos, 256 << 10);
  ASSERT_TRUE(raid_test::WriteBytes(raid_.get(), pos, model_.data() + pos, 256 << 10).ok());
  ASSERT_TRUE(raid_->Flush().ok()) << "one member lost: within the array's redundancy";
  EXPECT_EQ(raid_->Describe().members[0].health, MemberHealth::kFailed);
  ExpectContentIsTheModel();
}

INSTANTIATE_TEST_SUITE_P(Levels, RaidMemberShrinkTest,
                         ::testing::Values(RaidLevel::kRaid5, RaidLevel::kRaid1),
                         [](const auto& info) { return std::string(RaidLevelName(info.param)); });

}  // namespace
}  // namespace folio
