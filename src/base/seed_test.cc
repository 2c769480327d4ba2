#include "base/seed.h"

#include <stdlib.h>

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "base/death_test_util.h"
#include "base/test_seed.h"

namespace folio {
namespace {

TEST(SeedTest, ParsesDecimalHexAndOctalWhole) {
  EXPECT_EQ(*ParseSeed("12345", "S"), 12345u);
  EXPECT_EQ(*ParseSeed("0x5eed", "S"), 0x5eedu);
  EXPECT_EQ(*ParseSeed("0X5EED", "S"), 0x5eedu);
  EXPECT_EQ(*ParseSeed("0755", "S"), 0755u);
  EXPECT_EQ(*ParseSeed("0", "S"), 0u);
  EXPECT_EQ(*ParseSeed("18446744073709551615", "S"), UINT64_MAX);
}

TEST(SeedTest, RejectsGarbageNamingTheVariableAndTheValue) {
  for (const char* bad : {"", "abc", "12abc", "0x", "-1", "+5", " 7", "7 ", "0x1g",
                          "18446744073709551616", "089"}) {
    Result<uint64_t> r = ParseSeed(bad, "FOLIO_SEED");
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "FOLIO_SEED=" + std::string(bad) +
                                        ": not a seed; use a decimal or 0x-hex number below "
                                        "2^64 (e.g. FOLIO_SEED=0x5eed)");
  }
}

TEST(SeedTest, RandomSeedsDiffer) {
  // Four draws of 64 bits all equal would mean the source is broken.
  const uint64_t a = RandomSeed();
  EXPECT_FALSE(a == RandomSeed() && a == RandomSeed() && a == RandomSeed());
}

// Sets FOLIO_SEED for one test and restores what was there.
class EnvSeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* s = getenv("FOLIO_SEED")) saved_ = s;
  }
  void TearDown() override {
    if (saved_.has_value()) {
      setenv("FOLIO_SEED", saved_->c_str(), 1);
    } else {
      unsetenv("FOLIO_SEED");
    }
  }
  std::optional<std::string> saved_;
};

TEST_F(EnvSeedTest, UsesTheEnvironmentInAnyBaseAndFallsBackWhenUnset) {
  setenv("FOLIO_SEED", "0x5eed", 1);
  EXPECT_EQ(EnvSeed(), 0x5eedu);
  EXPECT_EQ(TestSeed(), 0x5eedu);
  EXPECT_EQ(TestSeedOr(7), 0x5eedu);
  unsetenv("FOLIO_SEED");
  EXPECT_EQ(EnvSeed(), std::nullopt);
  EXPECT_EQ(TestSeedOr(7), 7u);
  setenv("FOLIO_SEED", "", 1);
  EXPECT_EQ(EnvSeed(), std::nullopt);
  EXPECT_EQ(SeedTrace(24301), "FOLIO_SEED=24301");
}

TEST_F(EnvSeedTest, GarbageEndsTheBinaryWithOneLineRatherThanRunningSeedZero) {
  UseThreadsafeDeathTests();
  setenv("FOLIO_SEED", "5eed", 1);
  EXPECT_EXIT(TestSeed(), ::testing::ExitedWithCode(2), "FOLIO_SEED=5eed: not a seed");
}

}  // namespace
}  // namespace folio
