// The export's background sync runner (RaidRunner) over arrays of memory members: what it runs
// after an unclean stop whatever action the superblock had stored (issue 8, case 7).
#include "export/raid_volume.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "base/aligned_buffer.h"
#include "folio/fault_device.h"
#include "folio/raid.h"

namespace folio::cli {
namespace {

constexpr uint64_t kChunk = 16 << 10;
constexpr uint64_t kMemberBytes = (1 << 20) + (512 << 10);

struct Members {
  std::vector<std::unique_ptr<BlockDevice>> mem;
  std::vector<FaultDevice*> faults;
  explicit Members(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      MemDeviceOptions o;
      o.size_bytes = kMemberBytes;
      mem.push_back(std::move(NewMemDevice(o)).value());
      faults.push_back(nullptr);
    }
  }
  std::vector<RaidMember> Wrap() {
    std::vector<RaidMember> out;
    for (size_t i = 0; i < mem.size(); ++i) {
      auto f = FaultDevice::WrapUnowned(mem[i].get());
      faults[i] = f.get();
      out.push_back({"m" + std::to_string(i), std::move(f)});
    }
    return out;
  }
};

RaidOptions Opts() {
  RaidOptions o;
  o.bitmap_clear_delay_ms = 1000000;
  return o;
}

Status WriteRandom(BlockDevice* dev, uint64_t off, uint64_t len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  AlignedBuffer buf(len);
  for (uint64_t i = 0; i < len; i += 8) {
    const uint64_t v = rng();
    std::memcpy(buf.data() + i, &v, 8);
  }
  return dev->Write(off, buf.data(), len);
}

void WaitForRunner(const RaidRunner& runner) {
  // Bounded so that a runner that never finishes fails the test instead of hanging it.
  for (int i = 0; i < 6000 && runner.StatsJson()["background_sync_running"].get<bool>(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(runner.StatsJson()["background_sync_running"].get<bool>());
}

// An interrupted check stored in the superblock, then a crash with writes: the runner must
// resync the dirty regions (and then finish the check), not stop at "check".
TEST(RaidRunner, StoredCheckDoesNotBlockCrashResync) {
  Members m(3);
  RaidCreateOptions co;
  co.chunk_bytes = kChunk;
  co.assume_clean = true;
  co.bitmap_region_bytes = kChunk;
  auto dev = RaidDevice::Create(m.Wrap(), co, Opts());
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_TRUE(WriteRandom(dev->get(), 0, (*dev)->size_bytes(), 1).ok());
  ASSERT_TRUE((*dev)->Flush().ok());
  RaidSyncOptions part;
  part.max_bytes = 128 << 10;
  auto check = (*dev)->Sync(RaidSyncAction::kCheck, part);
  ASSERT_TRUE(check.ok());
  ASSERT_FALSE(check->completed);
  ASSERT_TRUE(WriteRandom(dev->get(), 0, 4 * kChunk, 2).ok());
  ASSERT_TRUE((*dev)->Flush().ok());
  for (FaultDevice* f : m.faults) f->Crash(CrashMode::kDropUnflushed, 1);
  (void)(*dev)->Stop();
  dev->reset();

  auto again = RaidDevice::Assemble(m.Wrap(), Opts());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_GT((*again)->Describe().resync_regions, 0u);
  {
    RaidRunner runner(again->get(), DeviceOpenOptions());
    runner.StartPendingSync();
    WaitForRunner(runner);
  }
  const RaidStatus st = (*again)->Describe();
  EXPECT_EQ(st.resync_regions, 0u);
  EXPECT_EQ(st.sync.action, "idle") << "the stored check resumes after the resync";
  ASSERT_TRUE((*again)->Stop().ok());
}

}  // namespace
}  // namespace folio::cli
