#include "bench/workload.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace folio::bench {
namespace {

uint64_t TestSeed() {
  const char* env = std::getenv("FOLIO_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : std::random_device{}();
}

JobSpec Job(RwMode rw, uint64_t bs, uint64_t size) {
  JobSpec j;
  j.name = "t";
  j.rw = rw;
  j.block_bytes = bs;
  j.size_bytes = size;
  return j;
}

TEST(OpGeneratorTest, SequentialWrapsAtTheRegionEnd) {
  OpGenerator gen(Job(RwMode::kRead, 4096, 0), 4 * 4096 + 100, 1);
  const uint64_t expect[] = {0, 4096, 8192, 12288, 0, 4096};
  for (uint64_t pos : expect) {
    Op op = gen.Next();
    EXPECT_FALSE(op.write);
    EXPECT_EQ(op.pos, pos);
  }
  OpGenerator w(Job(RwMode::kWrite, 65536, 0), 1 << 20, 1);
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
  OpGenerator a(Job(RwMode::kRandRead, bs, 0), region, seed);
  OpGenerator b(Job(RwMode::kRandRead, bs, 0), region, seed);
  std::set<uint64_t> seen;
  for (int i = 0; i < 20000; ++i) {
    Op x = a.Next();
    EXPECT_EQ(x.pos, b.Next().pos) << "same seed, same stream";
    EXPECT_EQ(x.pos % bs, 0u);
    EXPECT_LE(x.pos + bs, region);
    seen.insert(x.pos);
  }
  // 20000 uniform draws over 1000 blocks miss a given block with probability e^-20.
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(OpGeneratorTest, MixFollowsRwmixread) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  for (uint32_t mix : {0u, 30u, 70u, 100u}) {
    JobSpec j = Job(RwMode::kRandReadWrite, 4096, 0);
    j.rwmixread = mix;
    OpGenerator gen(j, 1 << 20, seed);
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
  OpGenerator gen(seq, 8 * 4096, seed);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(gen.Next().pos, static_cast<uint64_t>(i % 8) * 4096);
}

// A fake engine: completes ops in a random order, up to `depth` in flight, checking the
// worker's protocol (a slot is not reused before it completed) and recording every op.
class FakeIo : public WorkerIo {
 public:
  FakeIo(uint32_t depth, uint64_t seed, int fail_at, std::shared_ptr<std::vector<Op>> log)
      : log_(std::move(log)), depth_(depth), rng_(seed), fail_at_(fail_at) {}
  uint32_t depth() const override { return depth_; }
  Status Start(const Op& op) override {
    EXPECT_LT(op.slot, depth_);
    EXPECT_EQ(busy_.count(op.slot), 0u) << "slot " << op.slot << " reused while in flight";
    busy_.insert(op.slot);
    EXPECT_LE(busy_.size(), depth_);
    log_->push_back(op);
    if (++started_ == fail_at_) return Status::IOError("fake: injected error");
    return Status::OK();
  }
  Status Reap(std::vector<uint32_t>* done) override {
    EXPECT_FALSE(busy_.empty()) << "Reap with nothing in flight";
    std::vector<uint32_t> slots(busy_.begin(), busy_.end());
    std::shuffle(slots.begin(), slots.end(), rng_);
    const size_t n = 1 + rng_() % slots.size();
    for (size_t i = 0; i < n; ++i) {
      done->push_back(slots[i]);
      busy_.erase(slots[i]);
    }
    return Status::OK();
  }

 private:
  std::shared_ptr<std::vector<Op>> log_;  // outlives the FakeIo (RunWorkload destroys it)
  const uint32_t depth_;
  std::mt19937_64 rng_;
  const int fail_at_;
  int started_ = 0;
  std::set<uint32_t> busy_;
};

struct Harness {
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::shared_ptr<std::vector<Op>>> logs;  // the ops each worker started

  WorkloadPlan Plan(const JobSpec& job, uint64_t region) {
    WorkloadPlan p;
    p.job = job;
    p.region_bytes = region;
    p.seed = 7;
    p.stop = &stop;
    return p;
  }
  WorkerIoFactory Factory(uint32_t depth, uint64_t seed, int fail_at = -1) {
    return [this, depth, seed, fail_at](uint32_t i) -> Result<std::unique_ptr<WorkerIo>> {
      auto log = std::make_shared<std::vector<Op>>();
      std::lock_guard<std::mutex> lock(mu);
      logs.push_back(log);
      return std::unique_ptr<WorkerIo>(std::make_unique<FakeIo>(depth, seed + i, fail_at, log));
    };
  }
};

TEST(RunWorkloadTest, SizeBoundJobDoesSizeBytesPerWorker) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  for (uint32_t depth : {1u, 8u}) {
    Harness h;
    JobSpec job = Job(RwMode::kRandRead, 4096, 64 * 4096);
    job.numjobs = 3;
    job.iodepth = depth;
    Result<TimedRun> run = RunWorkload(h.Plan(job, 1 << 20), h.Factory(depth, seed));
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(run->read.ops, 3u * 64) << "depth " << depth;
    EXPECT_EQ(run->read.bytes, 3u * 64 * 4096);
    EXPECT_EQ(run->write.ops, 0u);
    EXPECT_EQ(run->read.latency_ns.count, 3u * 64);
    EXPECT_FALSE(run->interrupted);
    EXPECT_GE(run->elapsed_s, 0.0);
  }
}

TEST(RunWorkloadTest, MixedJobSplitsReadsAndWrites) {
  Harness h;
  JobSpec job = Job(RwMode::kRandReadWrite, 4096, 1000 * 4096);
  job.rwmixread = 50;
  Result<TimedRun> run = RunWorkload(h.Plan(job, 1000 * 4096), h.Factory(4, TestSeed()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->read.ops + run->write.ops, 1000u);
  EXPECT_GT(run->read.ops, 0u);
  EXPECT_GT(run->write.ops, 0u);
  EXPECT_EQ(run->read.latency_ns.count, run->read.ops);
  EXPECT_EQ(run->write.latency_ns.count, run->write.ops);
}

TEST(RunWorkloadTest, TimeBasedSequentialWrapsAndEnds) {
  Harness h;
  JobSpec job = Job(RwMode::kWrite, 4096, 8 * 4096);
  job.time_based = true;
  job.runtime_us = 20000;
  Result<TimedRun> run = RunWorkload(h.Plan(job, 8 * 4096), h.Factory(2, TestSeed()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(h.logs.size(), 1u);
  EXPECT_GT(h.logs[0]->size(), 0u);
  for (const Op& op : *h.logs[0]) {
    EXPECT_TRUE(op.write);
    EXPECT_LT(op.pos, 8u * 4096);
  }
}

TEST(RunWorkloadTest, StopFlagEndsTheRunEarly) {
  Harness h;
  h.stop = true;
  JobSpec job = Job(RwMode::kRead, 4096, 1 << 30);
  Result<TimedRun> run = RunWorkload(h.Plan(job, 1 << 30), h.Factory(1, 1));
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->interrupted);
  EXPECT_EQ(run->read.ops, 0u);
}

TEST(RunWorkloadTest, AnIoErrorIsReturned) {
  Harness h;
  JobSpec job = Job(RwMode::kRead, 4096, 1 << 20);
  job.numjobs = 2;
  Result<TimedRun> run = RunWorkload(h.Plan(job, 1 << 20), h.Factory(4, 1, /*fail_at=*/5));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message(), "fake: injected error");
}

TEST(RunWorkloadTest, FactoryErrorIsReturned) {
  Harness h;
  JobSpec job = Job(RwMode::kRead, 4096, 1 << 20);
  Result<TimedRun> run = RunWorkload(h.Plan(job, 1 << 20), [](uint32_t) {
    return Result<std::unique_ptr<WorkerIo>>(Status::NoSpace("no buffers"));
  });
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(run.status().IsNoSpace());
}

}  // namespace
}  // namespace folio::bench
