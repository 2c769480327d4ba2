#include "base/test_model_ops.h"

#include <stdlib.h>

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "base/death_test_util.h"

namespace folio {
namespace {

// Clears FOLIO_MODEL_OPS and FOLIO_MODEL_OPS_DIVISOR for one test (cmake/qemu-aarch64.sh sets
// the divisor for every test it runs) and restores what was there.
class ModelOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      if (const char* s = getenv(kNames[i])) saved_[i] = s;
      unsetenv(kNames[i]);
    }
  }
  void TearDown() override {
    for (int i = 0; i < 2; ++i) {
      if (saved_[i].has_value()) {
        setenv(kNames[i], saved_[i]->c_str(), 1);
      } else {
        unsetenv(kNames[i]);
      }
    }
  }
  static constexpr const char* kNames[2] = {"FOLIO_MODEL_OPS", "FOLIO_MODEL_OPS_DIVISOR"};
  std::optional<std::string> saved_[2];
};

TEST_F(ModelOpsTest, TheDefaultUnlessTheEnvironmentSaysOtherwise) {
  EXPECT_EQ(ModelOps(1500), 1500u);
  setenv("FOLIO_MODEL_OPS_DIVISOR", "", 1);
  EXPECT_EQ(ModelOps(1500), 1500u);
  setenv("FOLIO_MODEL_OPS_DIVISOR", "1", 1);
  EXPECT_EQ(ModelOps(1500, 1000), 1500u);
}

TEST_F(ModelOpsTest, TheDivisorScalesDownToTheFloor) {
  setenv("FOLIO_MODEL_OPS_DIVISOR", "10", 1);
  EXPECT_EQ(ModelOps(100000, 10000), 10000u);
  EXPECT_EQ(ModelOps(1500), 150u);
  EXPECT_EQ(ModelOps(600000, 300000), 300000u) << "never below the floor";
  EXPECT_EQ(ModelOps(5), 1u) << "never below one operation";
  setenv("FOLIO_MODEL_OPS_DIVISOR", "0x4", 1);
  EXPECT_EQ(ModelOps(1000), 250u);
}

TEST_F(ModelOpsTest, AnExactCountWinsOverTheDivisorAndTheFloor) {
  setenv("FOLIO_MODEL_OPS_DIVISOR", "10", 1);
  setenv("FOLIO_MODEL_OPS", "20", 1);
  EXPECT_EQ(ModelOps(100000, 10000), 20u);
  setenv("FOLIO_MODEL_OPS", "0", 1);
  EXPECT_EQ(ModelOps(100000), 0u);
}

TEST_F(ModelOpsTest, GarbageEndsTheBinaryWithOneLine) {
  UseThreadsafeDeathTests();
  setenv("FOLIO_MODEL_OPS", "20k", 1);
  EXPECT_EXIT(ModelOps(1500), ::testing::ExitedWithCode(2),
              "FOLIO_MODEL_OPS=20k: not a number of operations");
  unsetenv("FOLIO_MODEL_OPS");
  for (const char* bad : {"0", "-2", " 10", "ten"}) {
    setenv("FOLIO_MODEL_OPS_DIVISOR", bad, 1);
    EXPECT_EXIT(ModelOps(1500), ::testing::ExitedWithCode(2),
                "FOLIO_MODEL_OPS_DIVISOR=.*: not a divisor; use a whole number from 1")
        << bad;
  }
}

}  // namespace
}  // namespace folio
