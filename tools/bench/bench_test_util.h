// Test helpers of the bench's engine-independent core (jobfile_test, offsets_test,
// workload_test): the seed of a seeded test (the one of base/test_seed.h) and a minimal job.
//
// Thread safety: independent values.
#pragma once

#include <cstdint>

#include "base/test_seed.h"
#include "bench/jobfile.h"

namespace folio::bench::test {

// FOLIO_SEED if set (any base), else a fresh random seed: base/test_seed.h.
using folio::TestSeed;

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
