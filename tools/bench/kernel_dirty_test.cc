#include "bench/kernel_dirty.h"

#include <gtest/gtest.h>

namespace folio::bench {
namespace {

constexpr char kVmstat[] =
    "nr_free_pages 5000\n"
    "nr_dirty_threshold_extra 1\n"
    "nr_dirty_threshold 1218288\n"
    "nr_dirty_background_threshold 608400\n"
    "nr_dirtied 42\n";

DirtySysctls Defaults() {
  DirtySysctls s;
  s.background_ratio = 10;
  s.ratio = 20;
  return s;
}

TEST(KernelDirtyTest, TheGlobalThresholdsApplyUnderCgroupV1AndWithoutACgroup) {
  for (int version : {0, 1}) {
    Result<KernelDirtyThresholds> t =
        ParseKernelDirtyThresholds(kVmstat, 4096, Defaults(), version, 1ull << 30);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->background_bytes, 608400ull * 4096);
    EXPECT_EQ(t->limit_bytes, 1218288ull * 4096);
    EXPECT_NE(t->source.find("vm.dirty_ratio 20"), std::string::npos) << t->source;
    EXPECT_EQ(t->source.find("cgroup v1") != std::string::npos, version == 1) << t->source;
  }
}

TEST(KernelDirtyTest, CgroupV2LowersThemToTheSharesOfMemoryMax) {
  Result<KernelDirtyThresholds> t =
      ParseKernelDirtyThresholds(kVmstat, 4096, Defaults(), 2, 1000ull << 20);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->background_bytes, (1000ull << 20) / 100 * 10);
  EXPECT_EQ(t->limit_bytes, (1000ull << 20) / 100 * 20);
  DirtySysctls bytes = Defaults();
  bytes.bytes = 300ull << 20;  // vm.dirty_bytes overrides vm.dirty_ratio
  t = ParseKernelDirtyThresholds(kVmstat, 4096, bytes, 2, 1000ull << 20);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->limit_bytes, 300ull << 20);
  EXPECT_NE(t->source.find("vm.dirty_bytes"), std::string::npos) << t->source;
}

TEST(KernelDirtyTest, TheBackgroundThresholdStaysBelowTheLimit) {
  Result<KernelDirtyThresholds> t = ParseKernelDirtyThresholds(
      "nr_dirty_threshold 1000\nnr_dirty_background_threshold 1000\n", 4096, Defaults(), 0, 0);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->limit_bytes, 1000ull * 4096);
  EXPECT_EQ(t->background_bytes, 500ull * 4096);
}

TEST(KernelDirtyTest, AMissingOrBrokenLineIsAnErrorNamingIt) {
  Result<KernelDirtyThresholds> t =
      ParseKernelDirtyThresholds("nr_dirty_threshold 10\n", 4096, Defaults(), 0, 0);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nr_dirty_background_threshold"), std::string::npos);
  t = ParseKernelDirtyThresholds("nr_dirty_threshold x\nnr_dirty_background_threshold 5\n", 4096,
                                 Defaults(), 0, 0);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nr_dirty_threshold"), std::string::npos);
  t = ParseKernelDirtyThresholds("nr_dirty_threshold 1\nnr_dirty_background_threshold 0\n", 4096,
                                 Defaults(), 0, 0);
  EXPECT_FALSE(t.ok());
}

}  // namespace
}  // namespace folio::bench
