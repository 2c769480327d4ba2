// The seed of a seeded test, from the environment, and the one way to show it on failure.
//
//   const uint64_t seed = TestSeed();   // FOLIO_SEED if set, else a fresh random seed
//   FOLIO_SEED_TRACE(seed);             // every failure below prints "FOLIO_SEED=<seed>"
//
// FOLIO_SEED takes decimal or 0x hex (ParseSeed). A value that does not parse ends the test
// binary at once (exit 2) with one line naming it, rather than running some other seed.
// Linked into every test binary (folio_add_test).
//
// Thread safety: reads the environment; call from test bodies, not while other threads
// change the environment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace folio {

// FOLIO_SEED, parsed; nullopt when unset or empty.
std::optional<uint64_t> EnvSeed();
// FOLIO_SEED, else a random seed (print it: FOLIO_SEED_TRACE).
uint64_t TestSeed();
// FOLIO_SEED, else default_seed (tests whose default run is a fixed seed).
uint64_t TestSeedOr(uint64_t default_seed);
// "FOLIO_SEED=<seed>": paste it in front of the test command to rerun the same case.
std::string SeedTrace(uint64_t seed);

}  // namespace folio

#define FOLIO_SEED_TRACE(seed) SCOPED_TRACE(::folio::SeedTrace(seed))
