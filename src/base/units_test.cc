#include "base/units.h"

#include <gtest/gtest.h>

namespace folio {
namespace {

TEST(UnitsTest, ParsesSizes) {
  EXPECT_EQ(*ParseSize("4096", "x"), 4096u);
  EXPECT_EQ(*ParseSize("4k", "x"), 4096u);
  EXPECT_EQ(*ParseSize("64K", "x"), 65536u);
  EXPECT_EQ(*ParseSize("2M", "x"), 2u << 20);
  EXPECT_EQ(*ParseSize("1GiB", "x"), 1u << 30);
  EXPECT_EQ(*ParseSize("3g", "x"), 3ull << 30);
  EXPECT_EQ(*ParseSize("512b", "x"), 512u);
  for (const char* bad : {"", "k", "4X", "4kk", "-1", "99999999999999999999", "16777216T"}) {
    Result<uint64_t> r = ParseSize(bad, "--cache");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--cache"), std::string_view::npos);
  }
}

TEST(UnitsTest, FormatsSizes) {
  EXPECT_EQ(FormatSize(4096), "4K");
  EXPECT_EQ(FormatSize(2u << 20), "2M");
  EXPECT_EQ(FormatSize(100), "100");
  EXPECT_EQ(FormatSize(1536 * 1024), "1.50M");
  EXPECT_EQ(FormatSize(1500000), "1.43M");
}

TEST(UnitsTest, ParsesDurations) {
  EXPECT_EQ(*ParseDurationUs("20", "x"), 20000000u);
  EXPECT_EQ(*ParseDurationUs("20s", "x"), 20000000u);
  EXPECT_EQ(*ParseDurationUs("250ms", "x"), 250000u);
  EXPECT_EQ(*ParseDurationUs("2m", "x"), 120000000u);
  EXPECT_FALSE(ParseDurationUs("2days", "x").ok());
}

TEST(UnitsTest, PowersOfTwo) {
  EXPECT_TRUE(IsPowerOfTwo(4096));
  EXPECT_FALSE(IsPowerOfTwo(3000));
  EXPECT_FALSE(IsPowerOfTwo(0));
  EXPECT_EQ(Log2(2u << 20), 21);
}

}  // namespace
}  // namespace folio
