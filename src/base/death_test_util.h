// For GoogleTest death tests in a process that may have threads (arena pre-fault, device
// workers): UseThreadsafeDeathTests() picks the "threadsafe" style (the child re-executes the
// test binary) unless GTEST_DEATH_TEST_STYLE chose one. cmake/qemu-aarch64.sh chooses "fast":
// under qemu-user the re-executed child is an aarch64 binary that the x86-64 kernel cannot run
// ("Exec format error"), so those runs fork without exec.
//
// Thread safety: call at the start of a death test, before it starts threads.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

namespace folio {

inline void UseThreadsafeDeathTests() {
  if (std::getenv("GTEST_DEATH_TEST_STYLE") == nullptr) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
}

}  // namespace folio
