// How many operations a seeded model test runs: the suite's default, or what the environment
// asks for. One helper for every model suite, so the same variables mean the same everywhere.
//
//   const uint64_t ops = ModelOps(100000, 10000);  // default 100000; scaled, never below 10000
//
//   FOLIO_MODEL_OPS=<n>          exactly n operations (replay a failure's run, or soak).
//   FOLIO_MODEL_OPS_DIVISOR=<d>  default_ops / d, but never below floor_ops: the fewest
//                                operations with which the suite's run is still hard enough
//                                (the rare events it asserts still happen). cmake/qemu-aarch64.sh
//                                sets 10 (docs/cpu-dispatch.md: what each suite runs under qemu).
//
// Both take decimal or 0x hex. A value that does not parse ends the test binary at once (exit 2)
// with one line naming it, rather than running some other count. A count the environment chose
// is printed ("model ops: 10000 (100000 / FOLIO_MODEL_OPS_DIVISOR=10)"), so a log says what ran.
// Linked into every test binary (folio_add_test), as test_seed.h is.
//
// Thread safety: reads the environment; call from test bodies, not while other threads change
// the environment.
#pragma once

#include <cstdint>

namespace folio {

// REQUIRES: floor_ops <= default_ops.
uint64_t ModelOps(uint64_t default_ops, uint64_t floor_ops = 1);

}  // namespace folio
