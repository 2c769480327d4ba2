#include "bench/offsets.h"

#include <algorithm>
#include <cmath>

namespace folio::bench {

namespace {

// fio's __hash_u64 (hash.h): multiplicative hashing by a bit-sparse 64-bit golden-ratio prime.
constexpr uint64_t kGoldenRatioPrime64 = 0x9e37fffffffc0001ull;
// fio's ZIPF_MAX_GEN: zeta(n) is summed over at most this many terms.
constexpr uint64_t kZipfMaxTerms = 10000000;
// fio's GAUSS_ITERS.
constexpr int kGaussIters = 12;

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

}  // namespace

BlockPermutation::BlockPermutation(uint64_t n, uint64_t key_seed) : n_(std::max<uint64_t>(1, n)) {
  int bits = 2;
  while (bits < 64 && (n_ - 1) >> bits != 0) ++bits;
  if (bits % 2 != 0) ++bits;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (uint64_t& k : keys_) k = SplitMix64(&key_seed);
}

uint64_t BlockPermutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t key : keys_) {
    const uint64_t next = left ^ (Mix(right ^ key) & half_mask_);
    left = right;
    right = next;
  }
  return left << half_bits_ | right;
}

uint64_t BlockPermutation::Permute(uint64_t index) const {
  // Cycle walking: the Feistel network permutes [0, 2^(2*half_bits)), at most 4n values, so
  // re-encrypting until the value falls in [0, n) takes under 4 rounds on average and always
  // ends (the cycle through `index` contains a value below n: index itself).
  uint64_t x = Encrypt(index);
  while (x >= n_) x = Encrypt(x);
  return x;
}

OpGenerator::OpGenerator(const JobSpec& job, uint64_t region_offset, uint64_t region_bytes,
                         uint64_t seed)
    : job_(job),
      region_offset_(region_offset),
      blocks_(std::max<uint64_t>(1, region_bytes / job.block_bytes)),
      seed_(seed),
      state_(seed),
      perm_(blocks_, seed ^ 0x5851f42d4c957f2dull) {
  InitDistribution();
}

void OpGenerator::InitDistribution() {
  const double n = static_cast<double>(blocks_);
  switch (job_.random_distribution) {
    case RandomDist::kRandom:
      return;
    case RandomDist::kZipf: {
      const double theta = job_.dist_param;
      zeta2_ = std::pow(1.0, theta) + std::pow(0.5, theta);
      const uint64_t terms = std::min(blocks_, kZipfMaxTerms);
      zetan_ = 0;
      for (uint64_t i = 0; i < terms; ++i) zetan_ += std::pow(1.0 / static_cast<double>(i + 1), theta);
      break;
    }
    case RandomDist::kPareto:
      pareto_pow_ = std::log(job_.dist_param) / std::log(1.0 - job_.dist_param);
      break;
    case RandomDist::kNormal:
      if (job_.dist_param != 0) {
        stddev_ = static_cast<uint64_t>(std::ceil(n * job_.dist_param / 100.0));
        stddev_ = std::min(stddev_, blocks_ / 2);
      }
      // fio's gauss_init: no shift unless a center is given.
      rand_off_ = job_.dist_center < 0 ? 0 : static_cast<uint64_t>(n * job_.dist_center);
      return;
  }
  // fio's shared_rand_init (zipf, pareto): a random shift unless a center is given.
  rand_off_ = Rand32();
  if (job_.dist_center >= 0) rand_off_ = static_cast<uint64_t>(n * job_.dist_center);
}

void OpGenerator::Restart() {
  if (!RwModeIsRandom(job_.rw)) {
    cursor_ = 0;
    return;
  }
  if (job_.randrepeat) {
    state_ = seed_;
    cursor_ = 0;
    perm_ = BlockPermutation(blocks_, seed_ ^ 0x5851f42d4c957f2dull);
    InitDistribution();
  }
}

uint64_t OpGenerator::NextRandomBlock() {
  const uint64_t n = blocks_;
  switch (job_.random_distribution) {
    case RandomDist::kRandom:
      if (!job_.UsesRandomMap()) return SplitMix64(&state_) % n;
      if (cursor_ == n) {  // the pass is done: a fresh order for the next one
        cursor_ = 0;
        perm_ = BlockPermutation(n, SplitMix64(&state_));
      }
      return perm_.Permute(cursor_++);
    case RandomDist::kZipf: {
      // fio's zipf_next.
      const double theta = job_.dist_param;
      const double nd = static_cast<double>(n);
      const double alpha = 1.0 / (1.0 - theta);
      const double eta = (1.0 - std::pow(2.0 / nd, 1.0 - theta)) / (1.0 - zeta2_ / zetan_);
      const double rand_uni = RandUnit();
      const double rand_z = rand_uni * zetan_;
      uint64_t val;
      if (rand_z < 1.0) {
        val = 1;
      } else if (rand_z < 1.0 + std::pow(0.5, theta)) {
        val = 2;
      } else {
        val = 1 + static_cast<uint64_t>(nd * std::pow(eta * rand_uni - eta + 1.0, alpha));
      }
      return ((val - 1) * kGoldenRatioPrime64 + rand_off_) % n;
    }
    case RandomDist::kPareto: {
      // fio's pareto_next.
      const double r = RandUnit();
      const auto val = static_cast<uint64_t>(static_cast<double>(n - 1) * std::pow(r, pareto_pow_));
      return (val * kGoldenRatioPrime64 + rand_off_) % n;
    }
    case RandomDist::kNormal: {
      // fio's gauss_next, with its unsigned wrap-around kept.
      uint64_t sum = 0;
      for (int i = 0; i < kGaussIters; ++i) sum += Rand32() % (n + 1);
      sum = (sum + kGaussIters - 1) / kGaussIters;
      if (stddev_ != 0) {
        const auto vr = static_cast<int64_t>(static_cast<double>(stddev_) *
                                             (static_cast<double>(Rand32()) / 4294967296.0));
        int64_t dev = vr - static_cast<int64_t>(stddev_ / 2);
        while (static_cast<uint64_t>(dev) + sum >= n) dev /= 2;
        sum += static_cast<uint64_t>(dev);
      }
      return (sum * kGoldenRatioPrime64 + rand_off_) % n;
    }
  }
  return 0;
}

uint64_t OpGenerator::NextBlock() {
  if (RwModeIsRandom(job_.rw)) return NextRandomBlock();
  const uint64_t block = cursor_;
  cursor_ = cursor_ + 1 >= blocks_ ? 0 : cursor_ + 1;
  return block;
}

Op OpGenerator::Next() {
  Op op;
  switch (job_.rw) {
    case RwMode::kRead:
    case RwMode::kRandRead:
      op.write = false;
      break;
    case RwMode::kWrite:
    case RwMode::kRandWrite:
      op.write = true;
      break;
    case RwMode::kReadWrite:
    case RwMode::kRandReadWrite:
      op.write = SplitMix64(&state_) % 100 >= job_.rwmixread;
      break;
  }
  op.pos = region_offset_ + NextBlock() * job_.block_bytes;
  return op;
}

}  // namespace folio::bench
