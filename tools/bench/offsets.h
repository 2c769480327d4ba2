// Where a bench worker's operations go: OpGenerator draws each operation's direction (by
// rwmixread) and block, as fio does:
//
//   sequential          blocks in order from the region's start, wrapping at its end
//   random (default)    fio's random map: every block of the region once per pass, in a
//                       seeded pseudo-random order (a Feistel permutation walked in cycles,
//                       O(1) memory), then a new order for the next pass
//   random, norandommap uniform blocks with repeats
//   zipf:THETA          fio's lib/zipf.c: ranks by the inverse Zipf CDF over the region's
//                       blocks (zeta(n) summed over at most 10M terms, as fio caps it), spread
//                       by fio's multiplicative hash, shifted by a seeded (or CENTER) offset
//   pareto:H            fio's pareto_next: (n - 1) * U^(log H / log(1 - H)), hashed, shifted
//   normal:DEV          fio's lib/gauss.c: the mean of 12 uniform draws plus a uniform
//                       deviation of DEV% of the blocks, hashed, shifted by CENTER
//
// The non-uniform distributions disable the random map, as fio does. Restart() begins a new
// loop (fio's loops=N): sequential jobs start over; with randrepeat the random offsets repeat
// exactly (fio re-seeds its generators per loop), without it they go on.
//
// Thread safety: one generator per worker thread; not shared.
#pragma once

#include <cstdint>

#include "bench/jobfile.h"

namespace folio::bench {

struct Op {
  bool write = false;
  uint64_t pos = 0;    // bytes; region start + a multiple of bs
  uint32_t slot = 0;   // which of the worker's iodepth buffers / requests carries it
};

// splitmix64: the seeding and offset generator (fast, and good enough for offsets).
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A pseudo-random permutation of [0, n): Permute(i) for i in [0, n) visits every value once.
class BlockPermutation {
 public:
  BlockPermutation(uint64_t n, uint64_t key_seed);
  uint64_t Permute(uint64_t index) const;

 private:
  uint64_t Encrypt(uint64_t x) const;
  uint64_t n_;
  int half_bits_;
  uint64_t half_mask_;
  uint64_t keys_[4];
};

class OpGenerator {
 public:
  // REQUIRES: region_bytes >= job.block_bytes.
  OpGenerator(const JobSpec& job, uint64_t region_offset, uint64_t region_bytes, uint64_t seed);
  Op Next();
  // The start of a new loop (see the header comment).
  void Restart();

 private:
  uint64_t NextBlock();
  uint64_t NextRandomBlock();
  uint32_t Rand32() { return static_cast<uint32_t>(SplitMix64(&state_) >> 32); }
  double RandUnit() { return static_cast<double>(Rand32()) / 4294967295.0; }
  void InitDistribution();

  const JobSpec job_;
  const uint64_t region_offset_;
  const uint64_t blocks_;
  const uint64_t seed_;
  uint64_t state_;
  uint64_t cursor_ = 0;  // next sequential block, or next index of the random map's pass
  BlockPermutation perm_;
  // zipf / pareto / normal (fio's zipf_state and gauss_state).
  uint64_t rand_off_ = 0;
  double zetan_ = 0;
  double zeta2_ = 0;
  double pareto_pow_ = 0;
  uint64_t stddev_ = 0;
};

}  // namespace folio::bench
