#include "bench/workload.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <thread>

namespace folio::bench {

namespace {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

double TimevalSeconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

// The shared clock of one run, fixed before the workers start.
struct RunClock {
  std::atomic<bool> go{false};
  uint64_t measure_start_ns = 0;
  uint64_t end_ns = 0;  // 0 = no time limit
};

class Worker {
 public:
  Worker(const WorkloadPlan& plan, uint32_t index, std::unique_ptr<WorkerIo> io,
         const RunClock* clock)
      : plan_(plan),
        io_(std::move(io)),
        clock_(clock),
        gen_(plan.job, plan.region_bytes, plan.seed + 0x1000193ull * (index + 1)),
        depth_(std::max<uint32_t>(1, io_->depth())),
        started_ns_(depth_),
        ops_(depth_) {
    bytes_limit_ = plan.job.time_based ? 0
                   : plan.job.size_bytes != 0 ? plan.job.size_bytes
                                              : plan.region_bytes;
  }

  void Run() {
    while (!clock_->go.load(std::memory_order_acquire)) std::this_thread::yield();
    for (uint32_t slot = 0; slot < depth_; ++slot) {
      if (!TryStart(slot)) break;
    }
    std::vector<uint32_t> done;
    while (inflight_ > 0) {
      done.clear();
      Status s = io_->Reap(&done);
      if (!s.ok() && status_.ok()) status_ = s;
      if (done.empty() && !s.ok()) break;  // the engine cannot make progress
      const uint64_t now = NowNs();
      for (uint32_t slot : done) {
        --inflight_;
        Complete(slot, now);
        TryStart(slot);
      }
    }
    measure_end_ns_ = NowNs();
    finished_.store(true, std::memory_order_release);
  }

  // Ops completed so far (ramp included), read by the progress ticker.
  uint64_t live_ops() const { return live_ops_.load(std::memory_order_relaxed); }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  const Status& status() const { return status_; }
  uint64_t measure_end_ns() const { return measure_end_ns_; }
  void AddTo(TimedRun* run) const {
    AddDir(read_, read_lat_, &run->read);
    AddDir(write_, write_lat_, &run->write);
  }

 private:
  bool TryStart(uint32_t slot) {
    if (!status_.ok() || plan_.stop->load(std::memory_order_relaxed)) return false;
    const uint64_t now = NowNs();
    if (clock_->end_ns != 0 && now >= clock_->end_ns) return false;
    const bool measured = now >= clock_->measure_start_ns;
    if (measured && bytes_limit_ != 0 && issued_bytes_ >= bytes_limit_) return false;
    Op op = gen_.Next();
    op.slot = slot;
    if (measured) issued_bytes_ += plan_.job.block_bytes;
    started_ns_[slot] = now;
    ops_[slot] = op;
    Status s = io_->Start(op);
    ++inflight_;  // started even if it failed: Reap returns its slot
    if (!s.ok()) {
      status_ = s;
      return false;
    }
    return true;
  }

  void Complete(uint32_t slot, uint64_t now) {
    live_ops_.fetch_add(1, std::memory_order_relaxed);
    if (started_ns_[slot] < clock_->measure_start_ns) return;
    Counter& c = ops_[slot].write ? write_ : read_;
    c.ops++;
    c.bytes += plan_.job.block_bytes;
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
  std::unique_ptr<WorkerIo> io_;
  const RunClock* clock_;
  OpGenerator gen_;
  const uint32_t depth_;
  std::vector<uint64_t> started_ns_;
  std::vector<Op> ops_;
  uint64_t bytes_limit_ = 0;
  uint64_t issued_bytes_ = 0;
  uint32_t inflight_ = 0;
  Status status_;
  Counter read_, write_;
  Histogram read_lat_, write_lat_;
  std::atomic<uint64_t> live_ops_{0};
  std::atomic<bool> finished_{false};
  uint64_t measure_end_ns_ = 0;
};

}  // namespace

OpGenerator::OpGenerator(const JobSpec& job, uint64_t region_bytes, uint64_t seed)
    : job_(job), blocks_(std::max<uint64_t>(1, region_bytes / job.block_bytes)), state_(seed) {}

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
  uint64_t block;
  if (RwModeIsRandom(job_.rw)) {
    block = SplitMix64(&state_) % blocks_;
  } else {
    block = cursor_;
    cursor_ = cursor_ + 1 == blocks_ ? 0 : cursor_ + 1;
  }
  op.pos = block * job_.block_bytes;
  return op;
}

Result<TimedRun> RunWorkload(const WorkloadPlan& plan, const WorkerIoFactory& make_io) {
  RunClock clock;
  std::vector<std::unique_ptr<Worker>> workers;
  for (uint32_t i = 0; i < plan.job.numjobs; ++i) {
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<WorkerIo> io, make_io(i));
    workers.push_back(std::make_unique<Worker>(plan, i, std::move(io), &clock));
  }
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->Run(); });

  const uint64_t start_ns = NowNs();
  clock.measure_start_ns = start_ns + plan.job.ramp_time_us * 1000;
  clock.end_ns = plan.job.runtime_us == 0 ? 0 : clock.measure_start_ns + plan.job.runtime_us * 1000;
  clock.go.store(true, std::memory_order_release);

  rusage usage_start{};
  bool have_usage_start = false;
  for (;;) {
    const bool all_done = std::all_of(workers.begin(), workers.end(),
                                      [](const auto& w) { return w->finished(); });
    uint64_t now = NowNs();
    if (!have_usage_start && (now >= clock.measure_start_ns || all_done)) {
      getrusage(RUSAGE_SELF, &usage_start);
      have_usage_start = true;
    }
    if (all_done) break;
    uint64_t ops = 0;
    for (const auto& w : workers) ops += w->live_ops();
    if (plan.on_tick) plan.on_tick((now - start_ns) / 1000000, ops);
    uint64_t sleep_ns = 100000000;
    if (!have_usage_start) sleep_ns = std::min(sleep_ns, clock.measure_start_ns - now);
    std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
  }
  rusage usage_end{};
  getrusage(RUSAGE_SELF, &usage_end);
  for (auto& t : threads) t.join();

  TimedRun run;
  run.seed = plan.seed;
  run.interrupted = plan.stop->load();
  uint64_t end_ns = clock.measure_start_ns;
  for (const auto& w : workers) {
    if (!w->status().ok()) return w->status();
    w->AddTo(&run);
    end_ns = std::max(end_ns, w->measure_end_ns());
  }
  run.elapsed_s = static_cast<double>(end_ns - clock.measure_start_ns) / 1e9;
  run.usr_cpu_s = TimevalSeconds(usage_end.ru_utime) - TimevalSeconds(usage_start.ru_utime);
  run.sys_cpu_s = TimevalSeconds(usage_end.ru_stime) - TimevalSeconds(usage_start.ru_stime);
  return run;
}

}  // namespace folio::bench
