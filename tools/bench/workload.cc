#include "bench/workload.h"

#include <sys/resource.h>

#include <algorithm>
#include <thread>

#include "base/clock.h"

namespace folio::bench {

namespace {

double TimevalSeconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

// The shared clock of one run, fixed before the workers start; each worker adds its own
// startdelay.
struct RunClock {
  std::atomic<bool> go{false};
  uint64_t start_ns = 0;
  uint64_t ramp_ns = 0;
  uint64_t runtime_ns = 0;  // 0 = no time limit
};

class Worker {
 public:
  Worker(const WorkloadPlan& plan, uint32_t index, std::unique_ptr<WorkerIo> io,
         const RunClock* clock)
      : plan_(plan),
        job_(plan.job),
        io_(std::move(io)),
        clock_(clock),
        gen_(plan.job, plan.region_offset, plan.region_bytes,
             plan.seed + 0x1000193ull * (index + 1)),
        depth_(std::max<uint32_t>(1, io_->depth())),
        started_ns_(depth_),
        ops_(depth_) {
    loop_bytes_ = job_.time_based ? 0 : job_.size_bytes != 0 ? job_.size_bytes : plan.region_bytes;
    loops_left_ = job_.time_based ? 1 : job_.loops;
    uint64_t state = plan.seed ^ (0xd1b54a32d192ed03ull * (index + 1));
    const uint64_t span = job_.startdelay_max_us - job_.startdelay_us;
    delay_ns_ = (job_.startdelay_us + (span == 0 ? 0 : SplitMix64(&state) % (span + 1))) * 1000;
  }

  void Run() {
    while (!clock_->go.load(std::memory_order_acquire)) std::this_thread::yield();
    const uint64_t begin = clock_->start_ns + delay_ns_;
    measure_start_ns_ = begin + clock_->ramp_ns;
    end_ns_ = clock_->runtime_ns == 0 ? 0 : measure_start_ns_ + clock_->runtime_ns;
    SleepUntil(begin);
    std::vector<uint32_t> free_slots;
    for (uint32_t slot = depth_; slot > 0; --slot) free_slots.push_back(slot - 1);
    std::vector<uint32_t> done;
    for (;;) {
      while (!free_slots.empty() && TryStart(free_slots.back())) free_slots.pop_back();
      if (inflight_ == 0) {
        if (!status_.ok() || Stopping()) break;
        if (sync_due_) {
          DoSync(sync_datasync_);
          sync_due_ = false;
          continue;
        }
        if (pending_ && WaitForRate()) continue;
        if (!loop_done_ || !NextLoop()) break;
        continue;
      }
      done.clear();
      Status s = io_->Reap(&done);
      if (!s.ok() && status_.ok()) status_ = s;
      if (done.empty() && !s.ok()) break;  // the engine cannot make progress
      const uint64_t now = MonotonicNowNs();
      for (uint32_t slot : done) {
        --inflight_;
        Complete(slot, now);
        free_slots.push_back(slot);
      }
    }
    if (status_.ok() && job_.end_fsync && wrote_) DoSync(false);
    measure_end_ns_ = MonotonicNowNs();
    finished_.store(true, std::memory_order_release);
  }

  // Ops completed so far (ramp included), read by the progress ticker.
  uint64_t live_ops() const { return live_ops_.load(std::memory_order_relaxed); }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  const Status& status() const { return status_; }
  uint64_t measure_start_ns() const { return measure_start_ns_; }
  uint64_t measure_end_ns() const { return measure_end_ns_; }
  void AddTo(TimedRun* run) const {
    AddDir(read_, read_lat_, &run->read);
    AddDir(write_, write_lat_, &run->write);
    AddDir(sync_, sync_lat_, &run->sync);
  }

 private:
  bool Stopping() const {
    return plan_.stop->load(std::memory_order_relaxed) ||
           (end_ns_ != 0 && MonotonicNowNs() >= end_ns_);
  }

  // Sleeps until `t` (or a stop), in steps so SIGINT is seen.
  void SleepUntil(uint64_t t) const {
    for (uint64_t now = MonotonicNowNs(); now < t && !plan_.stop->load(); now = MonotonicNowNs()) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(t - now, 50000000)));
    }
  }

  // rate_iops: the earliest start of the next op of that direction (0 = unlimited).
  uint64_t RateNs(bool write) const {
    const uint64_t rate = write ? job_.rate_iops_write : job_.rate_iops_read;
    if (rate == 0) return 0;
    const uint64_t k = write ? rate_ops_write_ : rate_ops_read_;
    return measure_start_ns_ - clock_->ramp_ns +
           static_cast<uint64_t>(static_cast<double>(k) * 1e9 / static_cast<double>(rate));
  }
  // Nothing in flight and the pending op is paced: sleep until it may go. Returns false when
  // the run ends first.
  bool WaitForRate() {
    const uint64_t t = RateNs(pending_op_.write);
    if (end_ns_ != 0 && t >= end_ns_) {
      SleepUntil(end_ns_);
      return false;
    }
    SleepUntil(t);
    return !plan_.stop->load();
  }

  bool TryStart(uint32_t slot) {
    if (!status_.ok() || sync_due_ || loop_done_ || plan_.stop->load(std::memory_order_relaxed)) {
      return false;
    }
    const uint64_t now = MonotonicNowNs();
    if (end_ns_ != 0 && now >= end_ns_) return false;
    const bool measured = now >= measure_start_ns_;
    if (measured && loop_bytes_ != 0 && issued_bytes_ >= loop_bytes_) {
      loop_done_ = true;
      return false;
    }
    if (!pending_) {
      pending_op_ = gen_.Next();
      pending_ = true;
    }
    if (now < RateNs(pending_op_.write)) return false;
    Op op = pending_op_;
    pending_ = false;
    op.slot = slot;
    if (measured) issued_bytes_ += job_.block_bytes;
    (op.write ? rate_ops_write_ : rate_ops_read_)++;
    started_ns_[slot] = now;
    ops_[slot] = op;
    if (op.write) {
      wrote_ = loop_wrote_ = true;
      ++writes_issued_;
      const bool fsync = job_.fsync_blocks != 0 && writes_issued_ % job_.fsync_blocks == 0;
      if (fsync || (job_.fdatasync_blocks != 0 && writes_issued_ % job_.fdatasync_blocks == 0)) {
        sync_due_ = true;
        sync_datasync_ = !fsync;  // both due: the full fsync covers the data sync
      }
    }
    Status s = io_->Start(op);
    ++inflight_;  // started even if it failed: Reap returns its slot
    if (!s.ok()) {
      status_ = s;
      return false;
    }
    return true;
  }

  // A loop (fio's loops=N) ended with nothing in flight: fsync_on_close, then the next loop.
  bool NextLoop() {
    if (job_.fsync_on_close && loop_wrote_) DoSync(false);
    loop_wrote_ = false;
    if (--loops_left_ == 0 || !status_.ok()) return false;
    loop_done_ = false;
    pending_ = false;
    issued_bytes_ = 0;
    gen_.Restart();
    return true;
  }

  void DoSync(bool datasync) {
    const uint64_t t0 = MonotonicNowNs();
    Status s = io_->Sync(datasync);
    const uint64_t t1 = MonotonicNowNs();
    if (!s.ok() && status_.ok()) status_ = s;
    if (t0 < measure_start_ns_) return;
    sync_.ops++;
    sync_lat_.Record(t1 - t0);
  }

  void Complete(uint32_t slot, uint64_t now) {
    live_ops_.fetch_add(1, std::memory_order_relaxed);
    if (started_ns_[slot] < measure_start_ns_) return;
    Counter& c = ops_[slot].write ? write_ : read_;
    c.ops++;
    c.bytes += job_.block_bytes;
    (ops_[slot].write ? write_lat_ : read_lat_).Record(now - started_ns_[slot]);
  }

  struct Counter {
    uint64_t ops = 0;
    uint64_t bytes = 0;
  };
  static void AddDir(const Counter& c, const Histogram& h, DirStats* out) {
    out->ops += c.ops;
    out->bytes += c.bytes;
    out->latency_ns.Merge(h.Snapshot());
  }

  const WorkloadPlan& plan_;
  const JobSpec& job_;
  std::unique_ptr<WorkerIo> io_;
  const RunClock* clock_;
  OpGenerator gen_;
  const uint32_t depth_;
  std::vector<uint64_t> started_ns_;
  std::vector<Op> ops_;
  uint64_t delay_ns_ = 0;
  uint64_t measure_start_ns_ = 0;
  uint64_t end_ns_ = 0;
  uint64_t loop_bytes_ = 0;
  uint32_t loops_left_ = 1;
  uint64_t issued_bytes_ = 0;  // measured bytes issued in this loop
  bool loop_done_ = false;
  bool pending_ = false;       // pending_op_ was drawn but waits for its rate slot
  Op pending_op_;
  uint64_t rate_ops_read_ = 0, rate_ops_write_ = 0;
  uint64_t writes_issued_ = 0;
  bool sync_due_ = false;
  bool sync_datasync_ = false;
  bool wrote_ = false, loop_wrote_ = false;
  uint32_t inflight_ = 0;
  Status status_;
  Counter read_, write_, sync_;
  Histogram read_lat_, write_lat_, sync_lat_;
  std::atomic<uint64_t> live_ops_{0};
  std::atomic<bool> finished_{false};
  uint64_t measure_end_ns_ = 0;
};

}  // namespace

Result<TimedRun> RunWorkload(const WorkloadPlan& plan, const WorkerIoFactory& make_io) {
  RunClock clock;
  std::vector<std::unique_ptr<Worker>> workers;
  for (uint32_t i = 0; i < plan.job.numjobs; ++i) {
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<WorkerIo> io, make_io(i));
    workers.push_back(std::make_unique<Worker>(plan, i, std::move(io), &clock));
  }
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->Run(); });

  const uint64_t start_ns = MonotonicNowNs();
  clock.start_ns = start_ns;
  clock.ramp_ns = plan.job.ramp_time_us * 1000;
  clock.runtime_ns = plan.job.runtime_us * 1000;
  // The earliest worker's measurement starts here (the shortest startdelay).
  const uint64_t first_measure_ns = start_ns + plan.job.startdelay_us * 1000 + clock.ramp_ns;
  clock.go.store(true, std::memory_order_release);

  rusage usage_start{};
  bool have_usage_start = false;
  for (;;) {
    const bool all_done = std::all_of(workers.begin(), workers.end(),
                                      [](const auto& w) { return w->finished(); });
    uint64_t now = MonotonicNowNs();
    if (!have_usage_start && (now >= first_measure_ns || all_done)) {
      getrusage(RUSAGE_SELF, &usage_start);
      have_usage_start = true;
      if (plan.on_measure_start) plan.on_measure_start();
    }
    if (all_done) break;
    uint64_t ops = 0;
    for (const auto& w : workers) ops += w->live_ops();
    if (plan.on_tick) plan.on_tick((now - start_ns) / 1000000, ops);
    uint64_t sleep_ns = 100000000;
    if (!have_usage_start) sleep_ns = std::min(sleep_ns, first_measure_ns - now);
    std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
  }
  rusage usage_end{};
  getrusage(RUSAGE_SELF, &usage_end);
  for (auto& t : threads) t.join();

  TimedRun run;
  run.seed = plan.seed;
  run.interrupted = plan.stop->load();
  uint64_t begin_ns = UINT64_MAX;
  uint64_t end_ns = 0;
  for (const auto& w : workers) {
    if (!w->status().ok()) return w->status();
    w->AddTo(&run);
    begin_ns = std::min(begin_ns, w->measure_start_ns());
    end_ns = std::max(end_ns, w->measure_end_ns());
  }
  run.elapsed_s = end_ns > begin_ns ? static_cast<double>(end_ns - begin_ns) / 1e9 : 0;
  run.usr_cpu_s = TimevalSeconds(usage_end.ru_utime) - TimevalSeconds(usage_start.ru_utime);
  run.sys_cpu_s = TimevalSeconds(usage_end.ru_stime) - TimevalSeconds(usage_start.ru_stime);
  return run;
}

}  // namespace folio::bench
