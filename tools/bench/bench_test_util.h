// Test helpers of the bench's engine-independent core (jobfile_test, offsets_test,
// workload_test): the seed of a seeded test and a minimal job.
//
// Thread safety: independent values.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>

#include "bench/jobfile.h"

namespace folio::bench::test {

// FOLIO_SEED if set, else a fresh random seed (tests print it).
inline uint64_t TestSeed() {
  const char* env = std::getenv("FOLIO_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : std::random_device{}();
}

// A job named "t" of mode `rw`, block size `bs` and `size` bytes; every other key its default.
inline JobSpec Job(RwMode rw, uint64_t bs, uint64_t size) {
  JobSpec j;
  j.name = "t";
  j.rw = rw;
  j.block_bytes = bs;
  j.size_bytes = size;
  return j;
}

}  // namespace folio::bench::test
