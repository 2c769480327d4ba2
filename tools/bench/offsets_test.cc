#include "bench/offsets.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "bench/bench_test_util.h"

namespace folio::bench {
namespace {

using test::TestSeed;
using test::Job;

TEST(OpGeneratorTest, SequentialWrapsAtTheRegionEnd) {
  OpGenerator gen(Job(RwMode::kRead, 4096, 0), 0, 4 * 4096 + 100, 1);
  const uint64_t expect[] = {0, 4096, 8192, 12288, 0, 4096};
  for (uint64_t pos : expect) {
    Op op = gen.Next();
    EXPECT_FALSE(op.write);
    EXPECT_EQ(op.pos, pos);
  }
  OpGenerator w(Job(RwMode::kWrite, 65536, 0), 0, 1 << 20, 1);
  for (int i = 0; i < 40; ++i) {
    Op op = w.Next();
    EXPECT_TRUE(op.write);
    EXPECT_EQ(op.pos, static_cast<uint64_t>(i % 16) * 65536);
  }
}

TEST(OpGeneratorTest, RandomIsAlignedInRangeAndSeeded) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  const uint64_t bs = 8192, region = 1000 * bs + 4096;
  OpGenerator a(Job(RwMode::kRandRead, bs, 0), 0, region, seed);
  OpGenerator b(Job(RwMode::kRandRead, bs, 0), 0, region, seed);
  std::set<uint64_t> seen;
  for (int i = 0; i < 20000; ++i) {
    Op x = a.Next();
    EXPECT_EQ(x.pos, b.Next().pos) << "same seed, same stream";
    EXPECT_EQ(x.pos % bs, 0u);
    EXPECT_LE(x.pos + bs, region);
    seen.insert(x.pos);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(OpGeneratorTest, MixFollowsRwmixread) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  for (uint32_t mix : {0u, 30u, 70u, 100u}) {
    JobSpec j = Job(RwMode::kRandReadWrite, 4096, 0);
    j.rwmixread = mix;
    OpGenerator gen(j, 0, 1 << 20, seed);
    int reads = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) reads += gen.Next().write ? 0 : 1;
    if (mix == 0) {
      EXPECT_EQ(reads, 0);
    }
    if (mix == 100) {
      EXPECT_EQ(reads, n);
    }
    // Binomial sd is under 0.4% of n; 3% is far outside chance.
    EXPECT_NEAR(static_cast<double>(reads) / n, mix / 100.0, 0.03) << "rwmixread=" << mix;
  }
  JobSpec seq = Job(RwMode::kReadWrite, 4096, 0);
  OpGenerator gen(seq, 0, 8 * 4096, seed);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(gen.Next().pos, static_cast<uint64_t>(i % 8) * 4096);
}


TEST(BlockPermutationTest, IsAPermutationForAwkwardSizes) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull, 17ull, 1000ull, 4097ull, 65536ull}) {
    BlockPermutation p(n, seed);
    std::vector<bool> hit(n, false);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t v = p.Permute(i);
      ASSERT_LT(v, n) << "n=" << n;
      EXPECT_FALSE(hit[v]) << "n=" << n << ": " << v << " twice";
      hit[v] = true;
    }
  }
}

// fio's random map: each pass visits every block once; the next pass has another order.
TEST(OpGeneratorTest, RandomMapCoversEveryBlockOncePerPass) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  const uint64_t blocks = 777;
  OpGenerator gen(Job(RwMode::kRandRead, 4096, 0), 8192, blocks * 4096, seed);
  std::vector<uint64_t> passes[2];
  for (auto& pass : passes) {
    std::set<uint64_t> seen;
    for (uint64_t i = 0; i < blocks; ++i) {
      const uint64_t pos = gen.Next().pos;
      ASSERT_GE(pos, 8192u);
      ASSERT_LT(pos, 8192 + blocks * 4096);
      EXPECT_TRUE(seen.insert(pos).second) << "block at " << pos << " twice in a pass";
      pass.push_back(pos);
    }
  }
  EXPECT_NE(passes[0], passes[1]);
}

TEST(OpGeneratorTest, NorandommapDrawsWithRepeats) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  JobSpec j = Job(RwMode::kRandRead, 4096, 0);
  j.norandommap = true;
  OpGenerator gen(j, 0, 1000 * 4096, seed);
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(gen.Next().pos);
  // 1000 uniform draws over 1000 blocks hit about 632 distinct ones (1 - 1/e); all 1000 has
  // probability 1000!/1000^1000.
  EXPECT_LT(seen.size(), 700u);
  EXPECT_GT(seen.size(), 550u);
}

// Share of accesses that land on the hottest `share` of the blocks.
double HotShare(OpGenerator* gen, uint64_t blocks, int draws, double share) {
  std::map<uint64_t, int> count;
  for (int i = 0; i < draws; ++i) {
    const uint64_t pos = gen->Next().pos;
    EXPECT_LT(pos, blocks * 4096);
    count[pos / 4096]++;
  }
  std::vector<int> c;
  for (const auto& [block, n] : count) c.push_back(n);
  std::sort(c.rbegin(), c.rend());
  const auto hot = static_cast<size_t>(static_cast<double>(blocks) * share);
  int sum = 0;
  for (size_t i = 0; i < hot && i < c.size(); ++i) sum += c[i];
  return static_cast<double>(sum) / draws;
}

// The skew of fio's generators (fio-genzipf shows the same: zipf:1.1 puts most accesses on a
// few percent of the blocks; pareto:0.2 is the 80/20 rule).
TEST(OpGeneratorTest, DistributionsAreSkewedAsFiosAre) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  const uint64_t blocks = 10000;
  const int draws = 200000;
  JobSpec j = Job(RwMode::kRandRead, 4096, 0);
  j.random_distribution = RandomDist::kZipf;
  j.dist_param = 1.1;
  OpGenerator zipf(j, 0, blocks * 4096, seed);
  EXPECT_GT(HotShare(&zipf, blocks, draws, 0.05), 0.6);
  j.random_distribution = RandomDist::kPareto;
  j.dist_param = 0.2;
  OpGenerator pareto(j, 0, blocks * 4096, seed);
  const double p20 = HotShare(&pareto, blocks, draws, 0.2);
  EXPECT_GT(p20, 0.7);
  EXPECT_LT(p20, 0.9);
  j.random_distribution = RandomDist::kNormal;
  j.dist_param = 0;
  OpGenerator normal(j, 0, blocks * 4096, seed);
  // The mean of 12 uniform draws has a standard deviation of n / sqrt(144): 20% of the blocks
  // (+-0.1 n around the center, about 1.2 standard deviations) take about 77% of the accesses.
  EXPECT_GT(HotShare(&normal, blocks, draws, 0.2), 0.6);
  j.random_distribution = RandomDist::kRandom;
  j.norandommap = true;
  OpGenerator uniform(j, 0, blocks * 4096, seed);
  EXPECT_LT(HotShare(&uniform, blocks, draws, 0.05), 0.1);
}

TEST(OpGeneratorTest, CenterPlacesTheHotBlocks) {
  JobSpec j = Job(RwMode::kRandRead, 4096, 0);
  j.random_distribution = RandomDist::kZipf;
  j.dist_param = 1.2;
  j.dist_center = 0.25;
  const uint64_t blocks = 1000;
  OpGenerator gen(j, 0, blocks * 4096, 1);
  std::map<uint64_t, int> count;
  for (int i = 0; i < 10000; ++i) count[gen.Next().pos / 4096]++;
  // Rank 1 (the hottest) hashes to 0 and is shifted by blocks * center.
  uint64_t hottest = 0;
  for (const auto& [block, n] : count) {
    if (n > count[hottest]) hottest = block;
  }
  EXPECT_EQ(hottest, 250u);
}

TEST(OpGeneratorTest, RestartRepeatsWithRandrepeatOnly) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  for (bool repeat : {true, false}) {
    JobSpec j = Job(RwMode::kRandReadWrite, 4096, 0);
    j.randrepeat = repeat;
    j.random_distribution = RandomDist::kPareto;
    j.dist_param = 0.3;
    OpGenerator gen(j, 0, 1000 * 4096, seed);
    std::vector<std::pair<bool, uint64_t>> loops[2];
    for (auto& loop : loops) {
      for (int i = 0; i < 500; ++i) {
        Op op = gen.Next();
        loop.emplace_back(op.write, op.pos);
      }
      gen.Restart();
    }
    EXPECT_EQ(loops[0] == loops[1], repeat) << "randrepeat=" << repeat;
  }
}

}  // namespace
}  // namespace folio::bench
