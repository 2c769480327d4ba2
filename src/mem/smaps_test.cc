#include "mem/smaps.h"

#include <gtest/gtest.h>

namespace folio::mem {
namespace {

constexpr const char* kSample =
    "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
    "Size:                328 kB\n"
    "Rss:                 100 kB\n"
    "AnonHugePages:         0 kB\n"
    "VmFlags: rd ex mr mw me dw\n"
    "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n"
    "Size:               4096 kB\n"
    "KernelPageSize:        4 kB\n"
    "Rss:                4096 kB\n"
    "AnonHugePages:      2048 kB\n"
    "Private_Hugetlb:       0 kB\n"
    "VmFlags: rd wr mr mw me ac hg\n"
    "7f0000400000-7f0000600000 rw-p 00000000 00:0f 1234       /anon_hugepage (deleted)\n"
    "Size:               2048 kB\n"
    "KernelPageSize:     2048 kB\n"
    "Rss:                   0 kB\n"
    "Private_Hugetlb:    2048 kB\n"
    "Shared_Hugetlb:        0 kB\n"
    "7f0000600000-7f0000601000 ---p 00000000 00:00 0 \n"
    "Rss:                   0 kB\n";

TEST(SmapsTest, SumsOnlyOverlappingVmas) {
  SmapsTotals t = ParseSmapsRange(kSample, 0x7f0000000000, 0x7f0000400000);
  EXPECT_EQ(t.vmas, 1u);
  EXPECT_EQ(t.rss_bytes, 4096u << 10);
  EXPECT_EQ(t.anon_huge_bytes, 2048u << 10);
  EXPECT_EQ(t.hugetlb_bytes, 0u);
  EXPECT_EQ(t.kernel_page_bytes, 4096u);
}

TEST(SmapsTest, HugetlbVma) {
  SmapsTotals t = ParseSmapsRange(kSample, 0x7f0000400000, 0x7f0000600000);
  EXPECT_EQ(t.vmas, 1u);
  EXPECT_EQ(t.rss_bytes, 0u);
  EXPECT_EQ(t.hugetlb_bytes, 2048u << 10);
  EXPECT_EQ(t.kernel_page_bytes, 2048u << 10);
}

TEST(SmapsTest, RangeSpanningVmasAndNone) {
  SmapsTotals t = ParseSmapsRange(kSample, 0x7f00003ff000, 0x7f0000401000);
  EXPECT_EQ(t.vmas, 2u);
  EXPECT_EQ(t.anon_huge_bytes, 2048u << 10);
  EXPECT_EQ(t.hugetlb_bytes, 2048u << 10);
  SmapsTotals none = ParseSmapsRange(kSample, 0x1000, 0x2000);
  EXPECT_EQ(none.vmas, 0u);
  EXPECT_EQ(none.rss_bytes, 0u);
}

TEST(SmapsTest, ReadsOwnProcess) {
  static char buf[1 << 16];
  buf[0] = 1;  // touched: counted in Rss
  Result<SmapsTotals> t = ReadSmapsRange(buf, buf + sizeof(buf));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_GE(t->vmas, 1u);
  EXPECT_GT(t->rss_bytes, 0u);
}

}  // namespace
}  // namespace folio::mem
