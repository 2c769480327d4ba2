#include "bench/runner.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "base/progress.h"
#include "base/units.h"
#include "bench/datafile.h"
#include "bench/engine.h"
#include "bench/plot.h"
#include "bench/report.h"
#include "cli_util.h"

namespace folio::bench {

namespace {

constexpr char kPrefix[] = "folio bench";
constexpr int kExitInterrupted = 130;

// A job with where its data lives.
struct PlannedJob {
  JobSpec job;
  std::string file;         // empty: create in the bench directory
  uint64_t file_bytes = 0;  // bytes the job covers
  uint64_t fill_from = 0;   // for a named file that is short: fill [fill_from, file_bytes)
};

Status PlanJob(const JobSpec& job, const std::string& jobfile, PlannedJob* out) {
  const std::string where = jobfile + ":" + std::to_string(job.line) + ": job '" + job.name + "'";
  out->job = job;
  out->file = job.filename;
  uint64_t existing = 0;
  if (!job.filename.empty()) {
    struct stat st;
    if (stat(job.filename.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode)) {
        return Status::InvalidArgument(where + ": filename=" + job.filename +
                                       " is not a regular file");
      }
      existing = static_cast<uint64_t>(st.st_size);
    } else if (job.size_bytes == 0) {
      return Status::InvalidArgument(where + ": filename=" + job.filename +
                                     " does not exist and the job has no size; add size=SIZE");
    }
  }
  uint64_t bytes = job.size_bytes != 0 ? job.size_bytes : existing / 4096 * 4096;
  if (bytes % 4096 != 0) {
    return Status::InvalidArgument(where + ": size=" + FormatSize(bytes) +
                                   " must be a multiple of 4K (the folio engines open the file "
                                   "O_DIRECT)");
  }
  if (bytes < job.block_bytes) {
    return Status::InvalidArgument(where + ": the file has " + FormatSize(bytes) +
                                   ", less than bs=" + FormatSize(job.block_bytes));
  }
  out->file_bytes = bytes;
  out->fill_from = job.filename.empty() ? 0 : std::min(existing, bytes);
  return Status::OK();
}

// Loads and plans every job; refuses more than kMaxTotalFileBytes of data to write.
Status PlanAll(const BenchConfig& config, std::vector<PlannedJob>* jobs) {
  uint64_t to_write = 0;
  for (const std::string& path : config.jobfiles) {
    FOLIO_ASSIGN_OR_RETURN(JobFile file, LoadJobFile(path));
    for (const JobSpec& job : file.jobs) {
      PlannedJob p;
      FOLIO_RETURN_IF_ERROR(PlanJob(job, path, &p));
      to_write += p.file_bytes - p.fill_from;
      jobs->push_back(p);
    }
  }
  if (to_write > kMaxTotalFileBytes) {
    return Status::InvalidArgument("the job files need " + FormatSize(to_write) +
                                   " of data files, over the " +
                                   FormatSize(kMaxTotalFileBytes) +
                                   " limit; lower the jobs' size");
  }
  struct statvfs vfs;
  uint64_t largest = 0;
  for (const PlannedJob& p : *jobs) {
    if (p.file.empty()) largest = std::max(largest, p.file_bytes);
  }
  if (largest != 0 && statvfs(config.dir.c_str(), &vfs) == 0) {
    const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (avail < largest + (64ull << 20)) {
      return Status::InvalidArgument("--dir " + config.dir + ": " + FormatSize(avail) +
                                     " free, the largest data file needs " +
                                     FormatSize(largest) + "; use --dir elsewhere");
    }
  }
  return Status::OK();
}

class Bench {
 public:
  Bench(const BenchConfig& config, const StopSignal& stop) : config_(config), stop_(stop) {}

  int Run();

 private:
  Result<RunResult> RunOne(const PlannedJob& p, const EngineSpec& spec, uint64_t seed);
  int Fail(const Status& s, const std::string& what) {
    if (stop_.stopped()) return Interrupted();
    return cli::ExitWithStatus(kPrefix, s.WithContext(what));
  }
  int Interrupted() {
    cli::PrintError(kPrefix, "interrupted; temporary files removed");
    return kExitInterrupted;
  }
  ProgressMode progress_mode() const {
    return config_.json ? ProgressMode::kOff : ProgressMode::kAuto;
  }
  int Emit();

  const BenchConfig& config_;
  const StopSignal& stop_;
  std::vector<RunResult> results_;
};

Result<RunResult> Bench::RunOne(const PlannedJob& p, const EngineSpec& spec, uint64_t seed) {
  EngineContext ctx;
  ctx.job = p.job;
  ctx.engine = spec;
  ctx.path = p.file;
  ctx.file_bytes = p.file_bytes;
  ctx.cache_bytes = config_.cache_bytes;
  ctx.stop = stop_.flag();
  std::unique_ptr<Engine> engine = NewEngine(ctx);
  FOLIO_RETURN_IF_ERROR(engine->Prepare());

  ProgressOptions po;
  po.mode = progress_mode();
  po.unit = ProgressUnit::kSeconds;
  const uint64_t total_ms = p.job.runtime_us == 0 ? 0 : (p.job.ramp_time_us + p.job.runtime_us) / 1000;
  ProgressReporter progress(p.job.name + " " + spec.Name(), total_ms, po);
  uint64_t last_ms = 0, last_ops = 0;
  WorkloadPlan plan;
  plan.job = p.job;
  plan.region_bytes = p.file_bytes;
  plan.seed = seed;
  plan.stop = stop_.flag();
  plan.on_tick = [&](uint64_t elapsed_ms, uint64_t ops) {
    if (elapsed_ms > last_ms) {
      const double iops = static_cast<double>(ops - last_ops) * 1000.0 /
                          static_cast<double>(elapsed_ms - last_ms);
      progress.SetDetail("IOPS " + FormatIops(iops));
    }
    last_ms = elapsed_ms;
    last_ops = ops;
    progress.Update(elapsed_ms);
  };
  Result<TimedRun> timed =
      RunWorkload(plan, [&](uint32_t i) { return engine->NewWorker(i); });
  progress.Finish();
  if (!timed.ok()) return timed.status();
  FOLIO_RETURN_IF_ERROR(engine->Finish());

  RunResult r;
  r.job = p.job;
  r.engine = spec;
  r.file = p.file;
  r.file_created = p.job.filename.empty();
  r.timed = *timed;
  if (const FolioRunStats* f = engine->folio_stats()) {
    r.has_folio = true;
    r.folio = *f;
  }
  r.notes = engine->notes();
  return r;
}

int Bench::Run() {
  std::vector<PlannedJob> jobs;
  Status planned = PlanAll(config_, &jobs);
  if (!planned.ok()) return cli::ExitWithStatus(kPrefix, planned);
  std::unique_ptr<BenchDir> dir;
  const uint64_t seed = config_.seed ? *config_.seed : std::random_device{}();
  if (!config_.json) {
    std::string names;
    for (const EngineSpec& e : config_.engines) names += (names.empty() ? "" : ", ") + e.Name();
    std::printf("folio bench: cache %s, engines %s, seed %llu\n\n",
                FormatSize(config_.cache_bytes).c_str(), names.c_str(),
                static_cast<unsigned long long>(seed));
    std::fflush(stdout);
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    PlannedJob& p = jobs[j];
    if (p.file.empty()) {
      if (dir == nullptr) {
        Result<std::unique_ptr<BenchDir>> d = BenchDir::Create(config_.dir);
        if (!d.ok()) return cli::ExitWithStatus(kPrefix, d.status());
        dir = std::move(d).value();
      }
      Result<std::string> f =
          dir->CreateDataFile(p.job.name, p.file_bytes, stop_.flag(), progress_mode());
      if (!f.ok()) return Fail(f.status(), "job '" + p.job.name + "'");
      p.file = *f;
    } else if (p.fill_from < p.file_bytes) {
      Status s = FillFile(p.file, p.fill_from, p.file_bytes, stop_.flag(), progress_mode());
      if (!s.ok()) return Fail(s, "job '" + p.job.name + "'");
    }
    std::vector<RunResult> job_runs;
    for (const EngineSpec& spec : config_.engines) {
      if (stop_.stopped()) return Interrupted();
      Result<RunResult> r = RunOne(p, spec, seed + j);
      if (!r.ok()) return Fail(r.status(), "job '" + p.job.name + "' engine " + spec.Name());
      job_runs.push_back(*r);
      results_.push_back(*r);
    }
    if (dir != nullptr && p.job.filename.empty()) dir->Remove(p.file);
    if (stop_.stopped()) return Interrupted();
    if (!config_.json) {
      std::fputs(FormatJobTable(job_runs).c_str(), stdout);
      std::fflush(stdout);
    }
  }
  return Emit();
}

int Bench::Emit() {
  if (config_.json) {
    std::printf("%s\n", ResultsJson(results_, config_.cache_bytes).dump(2).c_str());
  } else {
    std::fputs(FormatLegend().c_str(), stdout);
  }
  if (std::fflush(stdout) != 0) return cli::RuntimeError(kPrefix, "stdout: write failed");
  if (!config_.plot_path.empty()) {
    std::ofstream out(config_.plot_path, std::ios::trunc);
    out << RenderPlotSvg(results_);
    out.close();
    if (!out) {
      return cli::RuntimeError(kPrefix, config_.plot_path + ": " + std::strerror(errno));
    }
    if (!config_.json) std::printf("plot written to %s\n", config_.plot_path.c_str());
  }
  return cli::kExitOk;
}

}  // namespace

int RunBench(const BenchConfig& config) {
  StopSignal stop;
  return Bench(config, stop).Run();
}

}  // namespace folio::bench
