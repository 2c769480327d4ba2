// The `fio` engine: the job run by the real fio binary (Debian's, from PATH) with
// ioengine=io_uring on the same file, its --output-format=json parsed into the bench's
// measurements, so Folio's rows sit beside real fio's in one run. Every job key is passed as
// the fio option of the same name (the job's region as --offset / --size, the bench's seed as
// --randseed); numjobs threads are reported as one group (group_reporting).
//
// Buffered jobs run at equal memory: the bench joins its memory cgroup around fork(), so fio
// (and the page cache it fills, pre_read included) is in the cgroup; fio's own invalidate=1
// drops the file's cached pages first. Latency percentiles come from fio's total-latency
// percentiles (lat_percentiles=1, its 17 default points: submission to completion, as the
// bench times its own engines); CPU is fio's usr_cpu / sys_cpu. No hit ratio: fio reports no per-run
// device reads of its own.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/units.h"
#include "bench/engine.h"
#include "bench/memcg.h"

namespace folio::bench {

namespace {

std::string Us(uint64_t us) { return std::to_string(us) + "us"; }

// The fio command line for the job.
std::vector<std::string> FioArgs(const EngineContext& ctx, uint64_t seed) {
  const JobSpec& j = ctx.job;
  std::vector<std::string> a = {
      "fio", "--output-format=json", "--name=" + j.name, "--filename=" + ctx.path,
      "--ioengine=io_uring", "--thread", "--group_reporting", "--lat_percentiles=1",
      "--rw=" + std::string(RwModeName(j.rw)), "--bs=" + std::to_string(j.block_bytes),
      "--offset=" + std::to_string(ctx.region_offset),
      "--size=" + std::to_string(ctx.region_bytes), "--iodepth=" + std::to_string(j.iodepth),
      "--iodepth_batch_submit=" + std::to_string(j.iodepth_batch_submit),
      "--numjobs=" + std::to_string(j.numjobs), std::string("--direct=") + (j.direct ? "1" : "0"),
      "--rwmixread=" + std::to_string(j.rwmixread), "--ramp_time=" + Us(j.ramp_time_us),
      "--randseed=" + std::to_string(seed), std::string("--randrepeat=") + (j.randrepeat ? "1" : "0"),
      "--random_distribution=" + DistributionText(j), "--loops=" + std::to_string(j.loops),
      "--fsync=" + std::to_string(j.fsync_blocks),
      "--fdatasync=" + std::to_string(j.fdatasync_blocks),
      std::string("--end_fsync=") + (j.end_fsync ? "1" : "0"),
      std::string("--fsync_on_close=") + (j.fsync_on_close ? "1" : "0"),
      "--rate_iops=" + std::to_string(j.rate_iops_read) + "," + std::to_string(j.rate_iops_write),
      "--startdelay=" + Us(j.startdelay_us) + "-" + Us(j.startdelay_max_us),
  };
  if (j.runtime_us != 0) a.push_back("--runtime=" + Us(j.runtime_us));
  if (j.time_based) a.push_back("--time_based");
  if (j.pre_read) a.push_back("--pre_read=1");
  if (j.norandommap) a.push_back("--norandommap");
  return a;
}

DirStats DirFrom(const nlohmann::json& d) {
  DirStats s;
  s.ops = d.value("total_ios", uint64_t{0});
  s.bytes = d.value("io_bytes", uint64_t{0});
  // Total latency (submission + completion), what the bench times for its own engines.
  if (d.contains("lat_ns") && d["lat_ns"].contains("percentile")) {
    s.latency_ns = FioLatencyHistogram(d["lat_ns"], s.ops);
  } else if (d.contains("clat_ns")) {
    s.latency_ns = FioLatencyHistogram(d["clat_ns"], s.ops);
  }
  return s;
}

class FioEngine : public Engine {
 public:
  explicit FioEngine(const EngineContext& ctx) : ctx_(ctx) {}

  Status Prepare() override {
    if (ctx_.path.empty()) {
      return Status::InvalidArgument("fio: needs a file (a file: device or a data file)");
    }
    if (std::system("command -v fio >/dev/null 2>&1") != 0) {
      return Status::NotFound("fio: no fio binary in PATH; install it (apt-get install fio) or "
                              "drop fio from --engine");
    }
    return Status::OK();
  }

  Result<std::unique_ptr<WorkerIo>> NewWorker(uint32_t) override {
    return Status::NotSupported("fio runs the job itself");
  }
  bool runs_itself() const override { return true; }

  Result<TimedRun> RunItself(uint64_t seed, const std::atomic<bool>* stop) override {
    const std::vector<std::string> args = FioArgs(ctx_, seed);
    command_ = "";
    for (const std::string& a : args) command_ += (command_.empty() ? "" : " ") + a;
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return Status::FromErrno(errno, "fio: pipe");
    const bool in_cgroup = !ctx_.job.direct && ctx_.memcg != nullptr;
    if (in_cgroup) {
      ctx_.memcg->Empty();
      ctx_.memcg->ResetPeak();
      FOLIO_RETURN_IF_ERROR(ctx_.memcg->Join());  // fio is forked inside and stays there
    }
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(out[1], 1);
      execvp("fio", argv.data());
      _exit(127);
    }
    const int fork_err = errno;
    if (in_cgroup) {
      Status left = ctx_.memcg->Leave();
      FOLIO_CHECK_MSG(left.ok(), "folio bench: cannot leave the memory cgroup after fork");
    }
    close(out[1]);
    if (pid < 0) {
      close(out[0]);
      return Status::FromErrno(fork_err, "fio: fork");
    }
    std::string json;
    bool signalled = false;
    for (;;) {
      pollfd p{out[0], POLLIN, 0};
      const int r = poll(&p, 1, 100);
      if (stop->load() && !signalled) {
        kill(pid, SIGINT);  // fio stops and still prints its results
        signalled = true;
      }
      if (r <= 0) continue;
      char buf[65536];
      const ssize_t n = read(out[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      json.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (in_cgroup) {
      memory_.kind = ctx_.memcg->version() == 1 ? "cgroup v1" : "cgroup v2";
      memory_.limit_bytes = ctx_.memcg->limit_bytes();
      memory_.peak_bytes = ctx_.memcg->PeakBytes();
      memory_.cgroup = ctx_.memcg->path();
      ctx_.memcg->Empty();
    } else if (!ctx_.job.direct) {
      memory_.kind = "machine";
      memory_.why = ctx_.unlimited_why;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (signalled) return Status::Again("fio: interrupted");
      return Status::IOError("fio exited with status " + std::to_string(status) + ": " +
                             command_);
    }
    return Parse(json, seed, signalled);
  }

  Status Finish() override { return Status::OK(); }
  MemoryReport memory() const override { return memory_; }
  std::vector<std::string> notes() const override {
    return {"fio: " + command_ + (memory_.kind.starts_with("cgroup")
                                      ? " (inside the memory cgroup)" : "")};
  }

 private:
  Result<TimedRun> Parse(const std::string& text, uint64_t seed, bool interrupted) const {
    // fio may print notes before the JSON object.
    const size_t brace = text.find('{');
    nlohmann::json root = nlohmann::json::parse(
        brace == std::string::npos ? std::string_view() : std::string_view(text).substr(brace),
        nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded() || !root.contains("jobs") || root["jobs"].empty()) {
      return Status::IOError("fio: its output is not the JSON of a run: " +
                             text.substr(0, std::min<size_t>(text.size(), 200)));
    }
    const nlohmann::json& job = root["jobs"][0];
    TimedRun run;
    run.seed = seed;
    run.interrupted = interrupted;
    run.read = DirFrom(job["read"]);
    run.write = DirFrom(job["write"]);
    if (job.contains("sync")) {
      run.sync.ops = job["sync"].value("total_ios", uint64_t{0});
    }
    const uint64_t runtime_ms =
        std::max(job["read"].value("runtime", uint64_t{0}), job["write"].value("runtime", uint64_t{0}));
    run.elapsed_s = static_cast<double>(runtime_ms) / 1000.0;
    run.usr_cpu_s = job.value("usr_cpu", 0.0) / 100.0 * run.elapsed_s;
    run.sys_cpu_s = job.value("sys_cpu", 0.0) / 100.0 * run.elapsed_s;
    return run;
  }

  const EngineContext ctx_;
  std::string command_;
  MemoryReport memory_;
};

}  // namespace

HistogramSnapshot FioLatencyHistogram(const nlohmann::json& lat, uint64_t ops) {
  HistogramSnapshot h;
  if (ops == 0 || !lat.contains("percentile")) return h;
  std::vector<std::pair<double, uint64_t>> points;  // (percent, ns)
  for (const auto& [key, value] : lat["percentile"].items()) {
    points.emplace_back(std::strtod(key.c_str(), nullptr), value.get<uint64_t>());
  }
  std::sort(points.begin(), points.end());
  uint64_t placed = 0;
  for (const auto& [p, v] : points) {
    // The op at rank p% (what HistogramSnapshot::Percentile(p / 100) reads) and those below it
    // sit at or below the point's value.
    const auto upto = std::min(
        ops, static_cast<uint64_t>(std::llround(static_cast<double>(ops) * p / 100.0)) + 1);
    if (upto <= placed) continue;
    h.counts[Histogram::BucketFor(v)] += upto - placed;
    placed = upto;
  }
  const uint64_t max = lat.value("max", uint64_t{0});
  h.counts[Histogram::BucketFor(max)] += ops - placed;  // the tail beyond the last point
  h.count = ops;
  h.sum = static_cast<uint64_t>(lat.value("mean", 0.0) * static_cast<double>(ops));
  h.max = max;
  return h;
}

std::unique_ptr<Engine> NewFioEngine(const EngineContext& ctx) {
  return std::make_unique<FioEngine>(ctx);
}

}  // namespace folio::bench
