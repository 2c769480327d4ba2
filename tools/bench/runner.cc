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

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/progress.h"
#include "base/units.h"
#include "bench/datafile.h"
#include "bench/engine.h"
#include "bench/kernel_dirty.h"
#include "bench/memcg.h"
#include "bench/plot.h"
#include "bench/report.h"
#include "cli/cli_util.h"
#include "cli/device_spec.h"
#include "folio/arena.h"

namespace folio::bench {

namespace {

constexpr char kPrefix[] = "folio bench";
constexpr int kExitInterrupted = 130;
// The base seed of randrepeat=1 jobs without --seed (fio seeds its generators predictably too).
constexpr uint64_t kRandRepeatSeed = 0x89;

// A job as loaded, with the job file it came from.
struct LoadedJob {
  JobSpec job;
  std::string jobfile;
};

// A job with where its data lives.
struct PlannedJob {
  JobSpec job;
  std::string file;         // empty: create in the bench directory; --device: the spec
  uint64_t file_bytes = 0;  // bytes of the file (device) the job uses: its region's end
  uint64_t region_offset = 0;  // the job's region (offset=): [region_offset, file_bytes)
  uint64_t region_bytes = 0;
  uint64_t fill_from = 0;   // for a named file that is short: fill [fill_from, file_bytes)
  bool on_device = false;   // --device
};

std::string JobWhere(const JobSpec& job, const std::string& jobfile) {
  return jobfile + ":" + std::to_string(job.line) + ": job '" + job.name + "'";
}

// Whether a job needs data in place before it runs (it reads, or reads everything first).
bool JobReads(const JobSpec& job) { return RwModeReads(job.rw) || job.pre_read; }

// offset=: where the job's region starts in a file (device) of `avail` bytes, and its size.
// offset=BYTES puts `size` bytes (default: the rest of the file) after BYTES; offset=N% starts
// at N% of the file, rounded up to bs, and runs to the end of the file (at most `size`), as fio
// caps the file at "real_size - offset".
Status PlaceRegion(const JobSpec& job, const std::string& where, uint64_t avail,
                   PlannedJob* out) {
  uint64_t offset = job.offset_bytes;
  if (job.offset_percent != 0) {
    offset = avail / 100 * job.offset_percent + avail % 100 * job.offset_percent / 100;
    offset = (offset + job.block_bytes - 1) / job.block_bytes * job.block_bytes;
  }
  if (offset % 4096 != 0) {
    return Status::InvalidArgument(where + ": offset=" + std::to_string(offset) +
                                   " must be a multiple of 4K (the folio engines open the "
                                   "file O_DIRECT)");
  }
  if (offset >= avail) {
    return Status::InvalidArgument(where + ": offset=" + FormatSize(offset) +
                                   " is at or past the end of the " + FormatSize(avail) +
                                   " the job has; lower offset or raise size");
  }
  uint64_t bytes = avail - offset;
  if (job.size_bytes != 0) bytes = std::min(bytes, job.size_bytes);
  if (bytes < job.block_bytes) {
    return Status::InvalidArgument(where + ": the region after offset=" + FormatSize(offset) +
                                   " has " + FormatSize(bytes) + ", less than bs=" +
                                   FormatSize(job.block_bytes));
  }
  out->region_offset = offset;
  out->region_bytes = bytes;
  return Status::OK();
}

// A job on the --device: it covers the first `size` bytes (default the whole device).
Status PlanDeviceJob(const JobSpec& job, const std::string& jobfile, const std::string& spec,
                     uint64_t device_bytes, PlannedJob* out) {
  const std::string where = JobWhere(job, jobfile);
  out->job = job;
  out->file = spec;
  out->on_device = true;
  const uint64_t bytes = job.size_bytes != 0 && job.offset_percent == 0
                             ? job.offset_bytes + job.size_bytes
                             : device_bytes / 4096 * 4096;
  if (bytes > device_bytes) {
    return Status::InvalidArgument(where + ": size=" + FormatSize(bytes) +
                                   " does not fit --device " + spec + " of " +
                                   FormatSize(device_bytes) +
                                   "; lower size or use a larger device");
  }
  if (bytes % 4096 != 0) {
    return Status::InvalidArgument(where + ": size=" + FormatSize(bytes) +
                                   " must be a multiple of 4K");
  }
  if (bytes < job.block_bytes) {
    return Status::InvalidArgument(where + ": the job covers " + FormatSize(bytes) +
                                   " of --device " + spec + ", less than bs=" +
                                   FormatSize(job.block_bytes));
  }
  out->file_bytes = bytes;
  return PlaceRegion(job, where, bytes, out);
}

Status PlanJob(const JobSpec& job, const std::string& jobfile, PlannedJob* out) {
  const std::string where = JobWhere(job, jobfile);
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
  // offset=BYTES with size=S needs BYTES + S of file; offset=N% is N% of the file.
  uint64_t bytes = job.size_bytes == 0 ? existing / 4096 * 4096
                   : job.offset_percent != 0 ? job.size_bytes
                                             : job.offset_bytes + job.size_bytes;
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
  return PlaceRegion(job, where, bytes, out);
}

Status LoadAll(const BenchConfig& config, std::vector<LoadedJob>* jobs) {
  for (const std::string& path : config.jobfiles) {
    FOLIO_ASSIGN_OR_RETURN(JobFile file,
                           LoadJobFile(path, /*size_optional=*/!config.device_spec.empty()));
    for (const JobSpec& job : file.jobs) jobs->push_back({job, path});
  }
  return Status::OK();
}

// Plans every job on the --device of device_bytes; refuses laying down more than
// kMaxTotalFileBytes.
Status PlanAllOnDevice(const BenchConfig& config, const std::vector<LoadedJob>& loaded,
                       uint64_t device_bytes, std::vector<PlannedJob>* jobs) {
  uint64_t laid = 0;
  for (const LoadedJob& l : loaded) {
    PlannedJob p;
    FOLIO_RETURN_IF_ERROR(PlanDeviceJob(l.job, l.jobfile, config.device_spec, device_bytes, &p));
    if (JobReads(p.job)) laid = std::max(laid, p.file_bytes);
    jobs->push_back(p);
  }
  if (laid > kMaxTotalFileBytes) {
    return Status::InvalidArgument("the jobs read " + FormatSize(laid) + " of --device " +
                                   config.device_spec + ", which would be filled with data " +
                                   "first: over the " + FormatSize(kMaxTotalFileBytes) +
                                   " limit; lower the jobs' size");
  }
  return Status::OK();
}

// Plans every job on data files; refuses more than kMaxTotalFileBytes of data to write.
Status PlanAll(const BenchConfig& config, const std::vector<LoadedJob>& loaded,
               std::vector<PlannedJob>* jobs) {
  uint64_t to_write = 0;
  for (const LoadedJob& l : loaded) {
    PlannedJob p;
    FOLIO_RETURN_IF_ERROR(PlanJob(l.job, l.jobfile, &p));
    to_write += p.file_bytes - p.fill_from;
    jobs->push_back(p);
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
  // round_label is appended to the progress line's name (e.g. " (run 2/3)").
  Result<RunResult> RunOne(const PlannedJob& p, const EngineSpec& spec, uint64_t seed,
                           const std::string& round_label);
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
  // Makes the kernel engine's memory cgroup when a buffered job runs a kernel engine; on
  // failure the kernel runs with all of the machine's memory and the reason is printed.
  void MakeMemoryCgroup(const std::vector<PlannedJob>& jobs);
  // --folio-dirty kernel: the folio engines' thresholds become the kernel's (kernel_dirty.h).
  void MatchKernelDirtyThresholds();
  // --device: opens the device and makes the arena of direct=1 buffers.
  int OpenDevice(const std::vector<LoadedJob>& loaded);
  Status MakeDirectArena(const std::vector<PlannedJob>& jobs);
  bool on_device() const { return !config_.device_spec.empty(); }

  const BenchConfig& config_;
  const StopSignal& stop_;
  std::vector<RunResult> results_;
  // --device. The arena outlives the device it is registered with.
  std::unique_ptr<FolioArena> direct_arena_;
  std::unique_ptr<BlockDevice> device_;
  uint64_t laid_bytes_ = 0;  // [0, laid_bytes_) of the device holds the bench's data
  std::unique_ptr<MemoryCgroup> memcg_;
  std::string unlimited_why_;  // why the kernel runs without a cgroup
  PageCacheOptions cache_options_;  // config_.cache_options, or the kernel's thresholds
  nlohmann::ordered_json writeback_json_;  // the folio engines' thresholds and their source
};

void Bench::MatchKernelDirtyThresholds() {
  cache_options_ = config_.cache_options;
  const PageCacheOptions& o = cache_options_;
  auto own = [&](const std::string& why) {
    const auto [bg, limit] = EffectiveDirtyThresholds(o, config_.cache_bytes);
    writeback_json_ = {{"thresholds", "folio"}, {"background_bytes", bg},
                       {"limit_bytes", limit}, {"why", why}};
    return std::make_pair(bg, limit);
  };
  bool folio = false, kernel = false;
  for (const EngineSpec& e : config_.engines) {
    folio = folio || e.is_folio();
    kernel = kernel || e.uses_kernel_page_cache();
  }
  if (!folio) return;
  std::string why;
  if (!config_.folio_dirty_as_kernel) {
    why = "--folio-dirty cache";
  } else if (config_.dirty_thresholds_given) {
    why = "set by --dirty-* flags";
  } else if (!kernel) {
    why = "no kernel or fio engine in the run";
  } else {
    Result<KernelDirtyThresholds> k = ReadKernelDirtyThresholds(
        memcg_ != nullptr ? memcg_->version() : 0, memcg_ != nullptr ? memcg_->limit_bytes() : 0);
    if (k.ok()) {
      cache_options_.dirty_background_bytes = k->background_bytes;
      cache_options_.dirty_bytes = k->limit_bytes;
      writeback_json_ = {{"thresholds", "kernel"},
                         {"background_bytes", k->background_bytes},
                         {"limit_bytes", k->limit_bytes},
                         {"why", k->source}};
      if (!config_.json) {
        std::printf("folio bench: the folio engines write back like the kernel engine: "
                    "background %s, dirty limit %s, %s; --folio-dirty cache for Folio's own\n",
                    FormatSize(k->background_bytes).c_str(), FormatSize(k->limit_bytes).c_str(),
                    k->source.c_str());
      }
      return;
    }
    why = "the kernel's could not be read: " + std::string(k.status().message());
  }
  const auto [bg, limit] = own(why);
  if (!config_.json) {
    std::printf("folio bench: the folio engines' dirty thresholds: background %s, limit %s of "
                "the %s cache (%s)\n",
                FormatSize(bg).c_str(), FormatSize(limit).c_str(),
                FormatSize(config_.cache_bytes).c_str(), why.c_str());
  }
}

void Bench::MakeMemoryCgroup(const std::vector<PlannedJob>& jobs) {
  bool kernel = false;
  for (const EngineSpec& e : config_.engines) kernel = kernel || e.uses_kernel_page_cache();
  bool buffered = false;
  for (const PlannedJob& p : jobs) buffered = buffered || !p.job.direct;
  if (!kernel || !buffered) return;
  if (!config_.kernel_memory_bytes) {
    unlimited_why_ = "--kernel-memory all";
    return;
  }
  Result<std::unique_ptr<MemoryCgroup>> cg = MemoryCgroup::Create(*config_.kernel_memory_bytes);
  if (cg.ok()) {
    memcg_ = std::move(cg).value();
    return;
  }
  unlimited_why_ = std::string(cg.status().message());
  if (!config_.json) {
    std::printf("folio bench: note: the kernel engine runs with all of the machine's memory, "
                "not %s: %s\n",
                FormatSize(*config_.kernel_memory_bytes).c_str(), unlimited_why_.c_str());
  }
}

int Bench::OpenDevice(const std::vector<LoadedJob>& loaded) {
  // As many requests in flight per thread as the deepest job keeps, like a data file's device.
  uint32_t depth = 64;
  for (const LoadedJob& l : loaded) depth = std::max(depth, l.job.iodepth);
  cli::DeviceOpenOptions o;
  o.direct = true;
  o.queue_depth = std::min<uint32_t>(depth, 4096);
  Result<std::unique_ptr<BlockDevice>> d = cli::OpenDevice(config_.device_spec, o);
  if (!d.ok()) return cli::ExitWithStatus(kPrefix, cli::ForSpec("--device", d.status()));
  device_ = std::move(d).value();
  return cli::kExitOk;
}

Status Bench::MakeDirectArena(const std::vector<PlannedJob>& jobs) {
  bool folio = false;
  for (const EngineSpec& e : config_.engines) folio = folio || e.is_folio();
  uint64_t need = 0;
  for (const PlannedJob& p : jobs) {
    // Jobs the direct engine refuses anyway (bs over 2M, too many buffers) do not size it.
    if (!p.job.direct || p.job.block_bytes > kMaxFolioBytes) continue;
    const uint64_t bytes = DirectBufferBytes(p.job);
    if (bytes <= kDirectBuffersMaxBytes) need = std::max(need, bytes);
  }
  if (!folio || need == 0) return Status::OK();
  ArenaOptions ao;
  ao.capacity_bytes = need + kDirectArenaHeadroomBytes;
  FOLIO_ASSIGN_OR_RETURN(direct_arena_, FolioArena::Create(ao));
  return device_->RegisterArena(direct_arena_.get());
}

Result<RunResult> Bench::RunOne(const PlannedJob& p, const EngineSpec& spec, uint64_t seed,
                                const std::string& round_label) {
  EngineContext ctx;
  ctx.job = p.job;
  ctx.engine = spec;
  ctx.path = p.on_device ? config_.device_kernel_path : p.file;
  ctx.file_bytes = p.file_bytes;
  ctx.region_offset = p.region_offset;
  ctx.region_bytes = p.region_bytes;
  ctx.cache_bytes = config_.cache_bytes;
  ctx.cache_options = cache_options_;
  ctx.stop = stop_.flag();
  ctx.device = device_.get();
  ctx.direct_arena = direct_arena_.get();
  ctx.memcg = memcg_.get();
  ctx.unlimited_why = unlimited_why_;
  FOLIO_ASSIGN_OR_RETURN(RunResult r,
                         RunEngineJob(ctx, seed, progress_mode(),
                                      p.job.name + " " + spec.Name() + round_label));
  r.file = p.file;
  r.file_created = !p.on_device && p.job.filename.empty();
  r.on_device = p.on_device;
  return r;
}

int Bench::Run() {
  std::vector<LoadedJob> loaded;
  Status status = LoadAll(config_, &loaded);
  if (!status.ok()) return cli::ExitWithStatus(kPrefix, status);
  std::vector<PlannedJob> jobs;
  if (on_device()) {
    if (int code = OpenDevice(loaded); code != cli::kExitOk) return code;
    status = PlanAllOnDevice(config_, loaded, device_->size_bytes(), &jobs);
    if (status.ok()) status = MakeDirectArena(jobs);
  } else {
    status = PlanAll(config_, loaded, &jobs);
  }
  if (!status.ok()) return cli::ExitWithStatus(kPrefix, status);
  std::unique_ptr<BenchDir> dir;
  // fio's randrepeat (default 1): the same offsets every run, from a fixed seed; --seed
  // replaces it; a job with randrepeat=0 draws a fresh seed (unless --seed is given).
  const uint64_t seed = config_.seed ? *config_.seed : kRandRepeatSeed;
  if (!config_.json) {
    std::string names;
    for (const EngineSpec& e : config_.engines) names += (names.empty() ? "" : ", ") + e.Name();
    std::string where;
    if (on_device()) {
      where = "device " + config_.device_spec + " (" + FormatSize(device_->size_bytes()) + "), ";
    }
    std::printf("folio bench: %scache %s, engines %s, seed %llu%s\n",
                where.c_str(), FormatSize(config_.cache_bytes).c_str(), names.c_str(),
                static_cast<unsigned long long>(seed),
                config_.seed ? "" : " (randrepeat: the same every run; --seed N to change)");
    for (const EngineSpec& e : config_.skipped_engines) {
      std::printf("folio bench: %s skipped: %s is not a file it can open (give --engine to "
                  "choose engines)\n",
                  e.Name().c_str(), config_.device_spec.c_str());
    }
  }
  MakeMemoryCgroup(jobs);
  if (!config_.json) {
    if (memcg_ != nullptr) {
      std::printf("folio bench: the kernel engine runs in memory cgroup %s (%s %s)\n",
                  memcg_->path().c_str(), memcg_->LimitName().c_str(),
                  FormatSize(memcg_->limit_bytes()).c_str());
    }
  }
  MatchKernelDirtyThresholds();
  if (!config_.json) {
    std::printf("\n");
    std::fflush(stdout);
  }
  std::vector<uint64_t> job_seeds;  // every engine of a job uses the job's seed
  for (size_t j = 0; j < jobs.size(); ++j) {
    const bool fresh = !config_.seed && !jobs[j].job.randrepeat;
    job_seeds.push_back(fresh ? std::random_device{}() : seed + j);
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    PlannedJob& p = jobs[j];
    if (p.on_device) {
      // Data is laid down once, as far as the reading jobs reach.
      if (JobReads(p.job) && laid_bytes_ < p.file_bytes) {
        Status s = FillDevice(device_.get(), laid_bytes_, p.file_bytes, stop_.flag(),
                              progress_mode());
        if (!s.ok()) return Fail(s, "job '" + p.job.name + "'");
        laid_bytes_ = p.file_bytes;
      }
    } else if (p.file.empty()) {
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
    std::vector<std::string> job_notes;
    // rounds[e]: engine e's runs of this job; the engines take turns, round after round.
    std::vector<std::vector<RunResult>> rounds(config_.engines.size());
    for (uint32_t round = 0; round < config_.repeat; ++round) {
      for (size_t e = 0; e < config_.engines.size(); ++e) {
        const EngineSpec& spec = config_.engines[e];
        if (stop_.stopped()) return Interrupted();
        if (spec.kind == EngineSpec::Kind::kLimit && p.job.direct) {
          if (round == 0) {
            job_notes.push_back("limit skipped: it is the ceiling of cached runs, and direct=1 "
                                "bypasses every cache");
          }
          continue;
        }
        if (spec.kind == EngineSpec::Kind::kKernel4k && (p.job.direct || !p.job.pre_read)) {
          if (round == 0) {
            job_notes.push_back("kernel:4k skipped: its 4 KiB folios come from a pre-read "
                                "without readahead, and this job " +
                                std::string(p.job.direct ? "bypasses the page cache (direct=1)"
                                                         : "has no pre_read=1"));
          }
          continue;
        }
        const std::string round_label =
            config_.repeat > 1 ? fmt::format(" (run {}/{})", round + 1, config_.repeat) : "";
        Result<RunResult> r = RunOne(p, spec, job_seeds[j], round_label);
        if (!r.ok()) return Fail(r.status(), "job '" + p.job.name + "' engine " + spec.Name());
        rounds[e].push_back(std::move(r).value());
      }
    }
    std::vector<RunResult> job_runs;
    for (std::vector<RunResult>& runs : rounds) {
      if (runs.empty()) continue;
      job_runs.push_back(MedianRun(std::move(runs)));
      results_.push_back(job_runs.back());
    }
    if (dir != nullptr && !p.on_device && p.job.filename.empty()) dir->Remove(p.file);
    if (stop_.stopped()) return Interrupted();
    if (!config_.json) {
      std::fputs(FormatJobTable(job_runs, job_notes).c_str(), stdout);
      std::fflush(stdout);
    }
  }
  return Emit();
}

int Bench::Emit() {
  if (config_.json) {
    nlohmann::ordered_json root = ResultsJson(results_, config_.cache_bytes);
    if (!writeback_json_.is_null()) root["writeback"] = writeback_json_;
    if (on_device()) {
      nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
      for (const EngineSpec& e : config_.skipped_engines) skipped.push_back(e.Name());
      root["device"] = {{"spec", config_.device_spec},
                        {"bytes", device_->size_bytes()},
                        {"skipped_engines", skipped}};
    }
    std::printf("%s\n", root.dump(2).c_str());
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

Result<RunResult> RunEngineJob(const EngineContext& ctx, uint64_t seed, ProgressMode progress_mode,
                               const std::string& label) {
  std::unique_ptr<Engine> engine = NewEngine(ctx);
  FOLIO_RETURN_IF_ERROR(engine->Prepare());

  ProgressOptions po;
  po.mode = progress_mode;
  po.unit = ProgressUnit::kSeconds;
  const JobSpec& job = ctx.job;
  const uint64_t total_ms = job.runtime_us == 0 ? 0 : (job.ramp_time_us + job.runtime_us) / 1000;
  ProgressReporter progress(label, total_ms, po);
  uint64_t last_ms = 0, last_ops = 0;
  WorkloadPlan plan;
  plan.job = job;
  plan.region_offset = ctx.region_offset;
  plan.region_bytes = ctx.region_bytes;
  plan.seed = seed;
  plan.stop = ctx.stop;
  plan.on_measure_start = [&engine] { engine->OnMeasureStart(); };
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
      engine->runs_itself()
          ? engine->RunItself(seed, ctx.stop)
          : RunWorkload(plan, [&](uint32_t i) { return engine->NewWorker(i); });
  progress.Finish();
  if (!timed.ok()) return timed.status();
  FOLIO_RETURN_IF_ERROR(engine->Finish());

  RunResult r;
  r.job = job;
  r.engine = ctx.engine;
  r.file = ctx.path;
  r.timed = *timed;
  if (const FolioRunStats* f = engine->folio_stats()) {
    r.has_folio = true;
    r.folio = *f;
  }
  r.memory = engine->memory();
  r.device_read_bytes = engine->device_read_bytes();
  r.notes = engine->notes();
  if (const Result<KernelFolioCensus>* k = engine->kernel_folios()) {
    if (k->ok()) {
      r.kernel_folios = **k;
    } else {
      r.kernel_folios_error = std::string(k->status().message());
    }
  }
  return r;
}

int RunBench(const BenchConfig& config) {
  StopSignal stop;
  return Bench(config, stop).Run();
}

}  // namespace folio::bench
