// `folio bench`: flag parsing and validation; the run itself is RunBench (runner.cc).
#include <sys/sysinfo.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "base/units.h"
#include "bench/aging.h"
#include "bench/runner.h"
#include "cli/cache_flags.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/device_spec.h"
#include "core_commands.h"

namespace folio::cli {

namespace {

constexpr char kPrefix[] = "folio bench";

struct BenchArgs {
  std::string engines = std::string(bench::kDefaultEngines);
  std::string cache;
  std::string dir;
  std::string output_format = "normal";
  std::string plot;
  std::string seed;
  std::string device;
  std::string kernel_memory = "cache";
  std::string folio_dirty = "kernel";
  bool engines_given = false;
  bool aging = false;
  double aging_seconds = 4;
  int aging_rounds = 3;
  int repeat = 1;
  std::vector<std::string> jobfiles;
  CacheWritebackFlags writeback;
};

uint64_t PhysicalMemoryBytes() {
  struct sysinfo si;
  if (sysinfo(&si) != 0) return 0;
  return static_cast<uint64_t>(si.totalram) * si.mem_unit;
}

std::string DefaultDir() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

// --output-format normal|json.
Status ParseOutputFormat(const std::string& text, bool* json) {
  if (text != "json" && text != "normal") {
    return Status::InvalidArgument("--output-format " + text +
                                   ": unknown format; use normal or json");
  }
  *json = text == "json";
  return Status::OK();
}

Result<uint64_t> ParseSeedFlag(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || text[0] == '-') {
    return Status::InvalidArgument("--seed " + text + ": not a number; use e.g. 42");
  }
  return uint64_t{v};
}

// --device: the spec is checked (no I/O yet) and the engines fitted to it. The kernel engine
// needs a file: on raid: / mem: it is a usage error when --engine names it, and is dropped
// (with a note in the output) from the default list.
Status DeviceConfig(const BenchArgs& args, bench::BenchConfig* config) {
  Result<DeviceSpec> spec = ParseDeviceSpec(args.device);
  if (!spec.ok()) return ForSpec("--device", spec.status());
  config->device_spec = args.device;
  config->device_kernel_path = spec->file_path();
  if (!config->device_kernel_path.empty()) return Status::OK();
  std::vector<bench::EngineSpec> kept;
  for (const bench::EngineSpec& e : config->engines) {
    if (!e.uses_kernel_page_cache()) {
      kept.push_back(e);
      continue;
    }
    if (args.engines_given) {
      return Status::InvalidArgument("--engine " + e.Name() + ": cannot run on --device " +
                                     args.device + " (it needs a file: device); drop it from "
                                     "--engine or use a file: device");
    }
    config->skipped_engines.push_back(e);
  }
  config->engines = kept;
  return Status::OK();
}

// Validates the flags into a config; a non-OK status is a usage error.
Status BuildConfig(const BenchArgs& args, bench::BenchConfig* config) {
  Result<std::vector<bench::EngineSpec>> engines = bench::ParseEngineList(args.engines);
  if (!engines.ok()) {
    return Status::InvalidArgument("--engine " + std::string(engines.status().message()));
  }
  config->engines = *engines;
  if (!args.device.empty()) FOLIO_RETURN_IF_ERROR(DeviceConfig(args, config));
  if (args.repeat < 1 || args.repeat > 9) {
    return Status::InvalidArgument(fmt::format(
        "--repeat {}: use 1 to 9 (runs of every engine per job; 3 or 5 gives a median)",
        args.repeat));
  }
  config->repeat = static_cast<uint32_t>(args.repeat);

  const uint64_t memory = PhysicalMemoryBytes();
  if (args.cache.empty()) {
    config->cache_bytes = std::max<uint64_t>(memory / 4 / (2 << 20) * (2 << 20), 64 << 20);
  } else {
    Result<uint64_t> cache = ParseSize(args.cache, "--cache");
    if (!cache.ok()) {
      return Status::InvalidArgument("--cache " + args.cache + ": not a size; use e.g. 256M or 4G");
    }
    if (*cache < (16 << 20)) {
      return Status::InvalidArgument("--cache " + args.cache + ": too small; use at least 16M");
    }
    if (memory != 0 && *cache > memory) {
      return Status::InvalidArgument("--cache " + args.cache + ": more than the machine's " +
                                     FormatSize(memory) + " of memory; use less (e.g. 1G)");
    }
    config->cache_bytes = *cache;
  }

  if (args.kernel_memory == "cache") {
    config->kernel_memory_bytes = config->cache_bytes;
  } else if (args.kernel_memory != "all") {
    Result<uint64_t> bytes = ParseSize(args.kernel_memory, "--kernel-memory");
    if (!bytes.ok() || *bytes < (16 << 20) || (memory != 0 && *bytes > memory)) {
      return Status::InvalidArgument("--kernel-memory " + args.kernel_memory +
                                     ": use cache (the default: --cache), all (the machine's "
                                     "memory) or a size from 16M to the machine's " +
                                     FormatSize(memory) + " (e.g. 1G)");
    }
    config->kernel_memory_bytes = *bytes;
  }

  config->dir = args.dir.empty() ? DefaultDir() : args.dir;
  FOLIO_RETURN_IF_ERROR(CheckDirectoryFlag("--dir", config->dir, "$TMPDIR or /tmp"));

  FOLIO_RETURN_IF_ERROR(ParseOutputFormat(args.output_format, &config->json));
  if (!args.plot.empty()) {
    const size_t slash = args.plot.rfind('/');
    const std::string parent = slash == std::string::npos ? "." : args.plot.substr(0, slash + 1);
    FOLIO_RETURN_IF_ERROR(CheckDirectoryFlag("--plot", parent, "the current directory"));
    config->plot_path = args.plot;
  }
  if (!args.seed.empty()) {
    FOLIO_ASSIGN_OR_RETURN(config->seed, ParseSeedFlag(args.seed));
  }
  config->jobfiles = args.jobfiles;
  if (args.folio_dirty != "kernel" && args.folio_dirty != "cache") {
    return Status::InvalidArgument("--folio-dirty " + args.folio_dirty +
                                   ": use kernel (the kernel engine's own thresholds, the "
                                   "default) or cache (Folio's, shares of --cache)");
  }
  config->folio_dirty_as_kernel = args.folio_dirty == "kernel";
  const CacheWritebackFlags& w = args.writeback;
  config->dirty_thresholds_given = !w.dirty_background_ratio.empty() ||
                                   !w.dirty_background_bytes.empty() ||
                                   !w.dirty_ratio.empty() || !w.dirty_bytes.empty();
  config->cache_options.memory_bytes = config->cache_bytes;  // the shares are of --cache
  return ApplyCacheWritebackFlags(args.writeback, &config->cache_options);
}

// --aging: the fragmentation benchmark (aging.h) instead of job files.
Status BuildAgingConfig(const BenchArgs& args, bench::AgingConfig* config) {
  if (!args.jobfiles.empty()) {
    return Status::InvalidArgument("--aging runs its own workload; drop the job files (" +
                                   args.jobfiles[0] + ") or --aging");
  }
  if (!args.device.empty()) {
    return Status::InvalidArgument("--aging makes its own files under --dir; drop --device");
  }
  if (!(args.aging_seconds >= 0.1 && args.aging_seconds <= 3600)) {
    return Status::InvalidArgument(fmt::format(
        "--aging-seconds {}: use 0.1 to 3600 (seconds of aging per round and mode)",
        args.aging_seconds));
  }
  if (args.aging_rounds < 1 || args.aging_rounds > 100) {
    return Status::InvalidArgument(
        fmt::format("--aging-rounds {}: use 1 to 100", args.aging_rounds));
  }
  if (!args.cache.empty()) {
    Result<uint64_t> cache = ParseSize(args.cache, "--cache");
    if (!cache.ok() || *cache < (32 << 20) || *cache > (64ull << 30)) {
      return Status::InvalidArgument("--cache " + args.cache +
                                     ": use a size from 32M to 64G with --aging (e.g. 256M)");
    }
    config->cache_bytes = *cache;
  }
  config->dir = args.dir.empty() ? DefaultDir() : args.dir;
  FOLIO_RETURN_IF_ERROR(CheckDirectoryFlag("--dir", config->dir, "$TMPDIR or /tmp"));
  FOLIO_RETURN_IF_ERROR(ParseOutputFormat(args.output_format, &config->json));
  if (!args.seed.empty()) {
    FOLIO_ASSIGN_OR_RETURN(config->seed, ParseSeedFlag(args.seed));
  }
  config->seconds = args.aging_seconds;
  config->rounds = args.aging_rounds;
  config->cache_options.memory_bytes = config->cache_bytes;
  FOLIO_RETURN_IF_ERROR(ApplyCacheWritebackFlags(args.writeback, &config->cache_options));
  // --compaction / --compaction-background: only that mode (the other knob at its default).
  if (!args.writeback.compaction.empty() || !args.writeback.compaction_background.empty()) {
    config->modes = {{config->cache_options.compaction,
                      config->cache_options.compaction_background}};
  }
  return Status::OK();
}

}  // namespace

Command AddBenchCommand(CLI::App& root) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = root.add_subcommand(
      "bench", "Run fio job files against Folio's page cache and the kernel, side by side on "
               "the same file and data.");
  CLI::Option* engine =
      sub->add_option("--engine", args->engines,
                      "Comma-separated engines: limit (memcpy ceiling of cached jobs), kernel, "
                      "kernel:4k (the kernel with a pre_read job's file in 4 KiB folios), "
                      "fio (the job run by the fio binary, ioengine=io_uring), folio:4k, "
                      "folio:dynamic, folio:fixed:SIZE (e.g. folio:fixed:64k)")
          ->default_str(std::string(bench::kDefaultEngines))
          ->type_name("LIST");
  sub->add_option("--cache", args->cache,
                  "Folio page cache memory (e.g. 1G); default a quarter of physical memory")
      ->type_name("SIZE");
  sub->add_option("--kernel-memory", args->kernel_memory,
                  "Memory of the kernel engine's buffered runs: cache (a memory cgroup capped "
                  "at --cache: equal memory), all (the whole machine's page cache, no cgroup) "
                  "or SIZE. Needs root and a memory cgroup controller (v1 or v2); otherwise "
                  "the kernel gets all memory and the output says why")
      ->default_str("cache")
      ->type_name("cache|all|SIZE");
  sub->add_option("--folio-dirty", args->folio_dirty,
                  "The folio engines' background threshold and dirty limit: kernel (the "
                  "kernel engine's own for this run, from /proc/vmstat, when a kernel or fio "
                  "engine runs: a cgroup v1 memory cgroup limits no dirty memory, so equal "
                  "memory alone would let the kernel hold more dirty data than Folio) or cache "
                  "(Folio's defaults, shares of --cache). --dirty-*ratio/-bytes flags override")
      ->default_str("kernel")
      ->type_name("kernel|cache");
  sub->add_option("--dir", args->dir,
                  "Where temporary data files go (a fresh directory inside it); default "
                  "$TMPDIR or /tmp")
      ->type_name("DIR");
  sub->add_option("--output-format", args->output_format, "normal (tables) or json (fio's shape)")
      ->default_str("normal")
      ->type_name("FORMAT");
  sub->add_option("--plot", args->plot, "Also write an SVG chart of IOPS and folio sizes")
      ->type_name("FILE.svg");
  sub->add_option("--seed", args->seed, "Seed of the workers' offset generators; default: fixed (fio's randrepeat=1, the same "
                  "offsets every run), fresh for jobs with randrepeat=0")
      ->type_name("N");
  sub->add_option("--device", args->device,
                  std::string("Run every engine on this device instead of data files (its "
                              "contents are overwritten): ") +
                      kDeviceSpecSyntax +
                      ". The jobs' filename is ignored and size defaults to the whole device. "
                      "The kernel engine needs a file: device; on raid: / mem: it is left out "
                      "of the default engines")
      ->type_name("SPEC");
  sub->add_option("--repeat", args->repeat,
                  "Run every job N times per engine, the engines taking turns (A, B, C, A, B, "
                  "C, ...), and compare each engine's median-IOPS run; the table lists every "
                  "run's IOPS. Use 3 or 5 where the disk's speed swings between runs")
      ->default_str("1")
      ->type_name("N");
  AddCacheWritebackFlags(sub, &args->writeback);
  sub->add_flag("--aging", args->aging,
                "Instead of job files: the fragmentation benchmark. Ages a cache (--cache, "
                "default 256M) with a mixed workload on files under --dir and reports the "
                "share of large-folio requests served at the order asked for, before and "
                "after aging, with --compaction off, evict and migrate side by side (or the "
                "one --compaction names)");
  sub->add_option("--aging-seconds", args->aging_seconds,
                  "With --aging: seconds of aging per round and mode")
      ->default_str("4")
      ->type_name("S");
  sub->add_option("--aging-rounds", args->aging_rounds,
                  "With --aging: rounds (the report shows medians)")
      ->default_str("3")
      ->type_name("N");
  sub->add_option("JOBFILE", args->jobfiles, "fio job files (not with --aging)")->type_name("");
  sub->footer(
      "Job files: fio's INI format ([global] and job sections). Keys: rw, bs, size, filename, "
      "iodepth, numjobs, runtime, time_based, direct, rwmixread, ramp_time, pre_read, fsync, "
      "fdatasync, end_fsync, fsync_on_close, offset, randrepeat, norandommap, "
      "random_distribution (random, zipf, pareto, normal), rate_iops, startdelay, loops; "
      "ioengine, thread and group_reporting are ignored.");
  return Command{sub, [args, engine] {
                   if (args->aging) {
                     bench::AgingConfig aging;
                     Status s = BuildAgingConfig(*args, &aging);
                     if (!s.ok()) return UsageError(kPrefix, s.message());
                     return bench::RunAging(aging);
                   }
                   if (args->jobfiles.empty()) {
                     return UsageError(kPrefix, "give one or more fio JOBFILEs (e.g. "
                                                "bench/seed-large-folio.fio), or --aging; see folio bench --help");
                   }
                   bench::BenchConfig config;
                   args->engines_given = engine->count() > 0;
                   Status s = BuildConfig(*args, &config);
                   if (!s.ok()) return UsageError(kPrefix, s.message());
                   return bench::RunBench(config);
                 }};
}

}  // namespace folio::cli
