// The engine-independent part of a `folio bench` run: numjobs worker threads, each drawing
// operations from its own seeded generator (sequential with wrap-around, or uniformly random
// block-aligned, mixed by rwmixread), keeping up to iodepth of them in flight through a
// WorkerIo, timing each one (CLOCK_MONOTONIC) into latency histograms, with fio's ramp_time /
// runtime / time_based / size rules, and CPU time (getrusage, user + sys) over the timed region.
//
//   start ---- ramp_time ---->|<------------- runtime (or size bytes per worker) ----------->|
//                       measure_start                                                   end
//   ops started before measure_start are not counted; ops started before the end finish and
//   count; a worker without time_based also stops after `size` measured bytes.
//
// Thread safety: RunWorkload is called from one thread and runs the workers on their own
// threads; each WorkerIo is used by exactly one worker thread after creation.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bench/jobfile.h"
#include "folio/histogram.h"
#include "folio/status.h"

namespace folio::bench {

struct Op {
  bool write = false;
  uint64_t pos = 0;    // bytes; a multiple of bs
  uint32_t slot = 0;   // which of the worker's iodepth buffers / requests carries it
};

// splitmix64: the seeding and offset generator (fast, and good enough for offsets).
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class OpGenerator {
 public:
  // REQUIRES: region_bytes >= job.block_bytes.
  OpGenerator(const JobSpec& job, uint64_t region_bytes, uint64_t seed);
  Op Next();

 private:
  const JobSpec job_;
  const uint64_t blocks_;
  uint64_t state_;
  uint64_t cursor_ = 0;  // next sequential block
};

// How a worker performs I/O. Synchronous engines do the I/O inside Start(); asynchronous
// ones queue it and submit on Reap().
class WorkerIo {
 public:
  virtual ~WorkerIo() = default;
  // Operations this worker may keep in flight (slots 0..depth()-1).
  virtual uint32_t depth() const = 0;
  // Starts op (its buffer is the one of op.slot). REQUIRES: the slot is free. The op counts
  // as started even when Start returns an error: a later Reap must still return its slot.
  virtual Status Start(const Op& op) = 0;
  // Waits until at least one started op completed; appends the completed slots to done.
  // Returns the first I/O error among them.
  virtual Status Reap(std::vector<uint32_t>* done) = 0;
};

struct DirStats {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  HistogramSnapshot latency_ns;
};

struct TimedRun {
  DirStats read;
  DirStats write;
  double elapsed_s = 0;  // the timed region
  double usr_cpu_s = 0;  // whole process, over the timed region
  double sys_cpu_s = 0;
  uint64_t seed = 0;
  bool interrupted = false;
};

struct WorkloadPlan {
  JobSpec job;
  uint64_t region_bytes = 0;        // the file bytes the job covers
  uint64_t seed = 0;                // worker i uses a stream derived from seed and i
  const std::atomic<bool>* stop = nullptr;  // set by SIGINT: stop issuing, finish, return
  // Called from the calling thread about every 100 ms with the time since start and the
  // operations completed so far (ramp included).
  std::function<void(uint64_t elapsed_ms, uint64_t ops)> on_tick;
};

using WorkerIoFactory = std::function<Result<std::unique_ptr<WorkerIo>>(uint32_t worker)>;

// Creates job.numjobs WorkerIos (on this thread), runs them, and returns the measurements,
// or the first worker's I/O error.
Result<TimedRun> RunWorkload(const WorkloadPlan& plan, const WorkerIoFactory& make_io);

}  // namespace folio::bench
