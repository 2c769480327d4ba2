// The engine-independent part of a `folio bench` run: numjobs worker threads, each drawing
// operations from its own seeded OpGenerator (offsets.h), keeping up to iodepth of them in
// flight through a WorkerIo, timing each one (CLOCK_MONOTONIC) into latency histograms, with
// fio's ramp_time / runtime / time_based / size / loops / startdelay / rate_iops / fsync rules,
// and CPU time (getrusage, user + sys) over the timed region.
//
//   go -- startdelay --|-- ramp_time -->|<---------- runtime (or size * loops per worker) --->|
//                                 measure_start                                            end
//   (startdelay, and so measure_start and end, are per worker.) Ops started before
//   measure_start are not counted; ops started before the end finish and count; a worker
//   without time_based stops after `size` measured bytes per loop, `loops` times.
//
// Syncs, as fio issues them: after every fsync=N (fdatasync=N) writes a worker waits for its
// ops in flight, then calls WorkerIo::Sync; fsync_on_close syncs at the end of each loop that
// wrote, end_fsync once at the end. Syncs are timed into TimedRun::sync (not IOPS) and the end
// ones fall inside the timed region, as in fio. rate_iops paces each direction of each worker
// linearly (op k of a direction starts no earlier than measure start + k / rate).
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
#include "bench/offsets.h"
#include "folio/histogram.h"
#include "folio/status.h"

namespace folio::bench {

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
  // Makes the data written so far durable (fsync, or fdatasync when `datasync`); called only
  // when none of this worker's ops are in flight. An engine without durability (memory) says
  // so in its notes and returns OK.
  virtual Status Sync(bool datasync) = 0;
};

struct DirStats {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  HistogramSnapshot latency_ns;
};

struct TimedRun {
  DirStats read;
  DirStats write;
  DirStats sync;         // fsync / fdatasync / end_fsync / fsync_on_close calls (bytes 0)
  double elapsed_s = 0;  // the timed region
  double usr_cpu_s = 0;  // whole process, over the timed region
  double sys_cpu_s = 0;
  uint64_t seed = 0;
  bool interrupted = false;
};

struct WorkloadPlan {
  JobSpec job;
  uint64_t region_offset = 0;       // where the job's region starts (offset=)
  uint64_t region_bytes = 0;        // the file bytes the job covers
  uint64_t seed = 0;                // worker i uses a stream derived from seed and i
  const std::atomic<bool>* stop = nullptr;  // set by SIGINT: stop issuing, finish, return
  // Called from the calling thread about every 100 ms with the time since start and the
  // operations completed so far (ramp included).
  std::function<void(uint64_t elapsed_ms, uint64_t ops)> on_tick;
  // Called once from the calling thread when the timed region starts (the earliest worker's
  // ramp_time ended), or when the run ends first.
  std::function<void()> on_measure_start;
};

using WorkerIoFactory = std::function<Result<std::unique_ptr<WorkerIo>>(uint32_t worker)>;

// Creates job.numjobs WorkerIos (on this thread), runs them, and returns the measurements,
// or the first worker's I/O error.
Result<TimedRun> RunWorkload(const WorkloadPlan& plan, const WorkerIoFactory& make_io);

}  // namespace folio::bench
