#include "bench/workload.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "bench/bench_test_util.h"

namespace folio::bench {
namespace {

using test::TestSeed;
using test::Job;

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
  Status Sync(bool datasync) override {
    EXPECT_TRUE(busy_.empty()) << "Sync with ops in flight";
    Op marker;  // a sync shows in the log as pos UINT64_MAX (fsync) or UINT64_MAX - 1
    marker.pos = datasync ? UINT64_MAX - 1 : UINT64_MAX;
    log_->push_back(marker);
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

constexpr uint64_t kFsync = UINT64_MAX;
constexpr uint64_t kFdatasync = UINT64_MAX - 1;

TEST(RunWorkloadTest, FsyncEveryNWritesWithNothingInFlight) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  for (uint32_t depth : {1u, 8u}) {
    Harness h;
    JobSpec job = Job(RwMode::kRandWrite, 4096, 100 * 4096);
    job.iodepth = depth;
    job.fsync_blocks = 32;
    job.fdatasync_blocks = 10;
    Result<TimedRun> run = RunWorkload(h.Plan(job, 1 << 20), h.Factory(depth, seed));
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(run->write.ops, 100u);
    // Writes 10, 20, ..., 100 are followed by an fdatasync, 32, 64, 96 by an fsync.
    uint64_t writes = 0, fsyncs = 0, datasyncs = 0;
    for (const Op& op : *h.logs[0]) {
      if (op.pos == kFsync) {
        ++fsyncs;
        EXPECT_EQ(writes % 32, 0u) << "fsync after write " << writes;
      } else if (op.pos == kFdatasync) {
        ++datasyncs;
        EXPECT_EQ(writes % 10, 0u) << "fdatasync after write " << writes;
      } else {
        ++writes;
      }
    }
    EXPECT_EQ(fsyncs, 3u) << "depth " << depth;
    EXPECT_EQ(datasyncs, 10u);
    EXPECT_EQ(run->sync.ops, 13u);
    EXPECT_EQ(run->sync.latency_ns.count, 13u);
  }
}

TEST(RunWorkloadTest, LoopsRepeatSizeAndSyncOnCloseAndAtTheEnd) {
  Harness h;
  JobSpec job = Job(RwMode::kWrite, 4096, 16 * 4096);
  job.loops = 3;
  job.fsync_on_close = true;
  job.end_fsync = true;
  Result<TimedRun> run = RunWorkload(h.Plan(job, 16 * 4096), h.Factory(4, TestSeed()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->write.ops, 3u * 16);
  std::vector<uint64_t> syncs_after;  // writes done when each sync ran
  uint64_t writes = 0;
  for (const Op& op : *h.logs[0]) {
    if (op.pos == kFsync) {
      syncs_after.push_back(writes);
    } else {
      // Each loop of a sequential job starts again at the region's start.
      EXPECT_EQ(op.pos, (writes % 16) * 4096);
      ++writes;
    }
  }
  EXPECT_EQ(syncs_after, (std::vector<uint64_t>{16, 32, 48, 48}));
  EXPECT_EQ(run->sync.ops, 4u);
}

TEST(RunWorkloadTest, ReadJobsDoNotSync) {
  Harness h;
  JobSpec job = Job(RwMode::kRandRead, 4096, 16 * 4096);
  job.end_fsync = job.fsync_on_close = true;
  job.fsync_blocks = 1;
  Result<TimedRun> run = RunWorkload(h.Plan(job, 16 * 4096), h.Factory(2, TestSeed()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->sync.ops, 0u);
  for (const Op& op : *h.logs[0]) EXPECT_LT(op.pos, 16u * 4096);
}

TEST(RunWorkloadTest, OffsetRegionIsWhereOpsGo) {
  Harness h;
  JobSpec job = Job(RwMode::kRandRead, 4096, 64 * 4096);
  WorkloadPlan plan = h.Plan(job, 64 * 4096);
  plan.region_offset = 1 << 20;
  Result<TimedRun> run = RunWorkload(plan, h.Factory(4, TestSeed()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::set<uint64_t> seen;
  for (const Op& op : *h.logs[0]) {
    EXPECT_GE(op.pos, 1u << 20);
    EXPECT_LT(op.pos, (1u << 20) + 64 * 4096);
    seen.insert(op.pos);
  }
  EXPECT_EQ(seen.size(), 64u) << "the random map covers every block of the region once";
}

// rate_iops is an upper bound that load cannot break: op k of a direction never starts before
// k / rate seconds into the run, so at most rate * elapsed + 1 ops start.
TEST(RunWorkloadTest, RateIopsCapsTheOps) {
  Harness h;
  JobSpec job = Job(RwMode::kRandRead, 4096, 1 << 20);
  job.time_based = true;
  job.runtime_us = 100000;
  job.rate_iops_read = 200;
  Result<TimedRun> run = RunWorkload(h.Plan(job, 1 << 20), h.Factory(4, TestSeed()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_GE(run->read.ops, 1u);
  EXPECT_LE(run->read.ops, 200 * 0.1 + 1) << "elapsed " << run->elapsed_s;
}

TEST(RunWorkloadTest, StartDelayIsNotMeasured) {
  Harness h;
  JobSpec job = Job(RwMode::kRead, 4096, 8 * 4096);
  job.numjobs = 2;
  job.startdelay_us = 20000;
  job.startdelay_max_us = 40000;
  Result<TimedRun> run = RunWorkload(h.Plan(job, 8 * 4096), h.Factory(1, TestSeed()));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->read.ops, 16u);
  EXPECT_EQ(h.logs.size(), 2u);
  EXPECT_FALSE(run->interrupted);
}

}  // namespace
}  // namespace folio::bench
