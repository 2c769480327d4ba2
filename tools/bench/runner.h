// RunBench: the body of `folio bench` once its flags are valid: loads the job files, makes
// the data files, runs every job under every engine side by side on the same file and data,
// prints the tables (or fio-shaped JSON) and writes the plot.
//
// With a device (--device SPEC) no data file is made and the jobs' filename is not used: the
// device is opened (and locked) once for the whole run, every job covers its first `size`
// bytes (default: the whole device; a size over the device's is a usage error), and every
// engine runs on it. Data is laid down on [0, size) once, before the first job that reads
// (a read mode or pre_read), as a temp data file would be; write-only jobs write over
// whatever is there. The device's previous contents are lost.
//
// Thread safety: called once from the main thread; runs worker threads internally.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/progress.h"
#include "bench/engine.h"
#include "bench/engine_spec.h"
#include "bench/report.h"
#include "folio/page_cache.h"

namespace folio::bench {

struct BenchConfig {
  std::vector<EngineSpec> engines;
  uint64_t cache_bytes = 0;
  PageCacheOptions cache_options;     // the folio engines' writeback knobs (--dirty-*)
  // --folio-dirty: kernel (the default) gives the folio engines the kernel's own background
  // threshold and dirty limit of this run (kernel_dirty.h) when a kernel or fio engine runs
  // and no --dirty-*ratio/-bytes flag set them; cache keeps cache_options' (Folio's defaults).
  bool folio_dirty_as_kernel = true;
  bool dirty_thresholds_given = false;
  std::string dir;                    // parent of the temp data directory
  bool json = false;
  std::string plot_path;              // empty: no plot
  std::vector<std::string> jobfiles;
  std::optional<uint64_t> seed;       // default: fixed (randrepeat), printed
  // --repeat: each job runs this many rounds of every engine in turn (engine A, B, C, then A,
  // B, C again), so a slow spell of the disk or the machine falls on every engine alike; each
  // engine reports its median-IOPS run (the lower middle one for an even count).
  uint32_t repeat = 1;
  // --kernel-memory: the memory cgroup limit of the kernel engine's buffered runs (default
  // cache_bytes: equal memory); nullopt = all of the machine's memory (no cgroup).
  std::optional<uint64_t> kernel_memory_bytes;
  // --device: every engine runs on this device spec (cli/device_spec.h), opened once;
  // device_kernel_path is the kernel engine's file ("" for raid: / mem:).
  std::string device_spec;
  std::string device_kernel_path;
  // Engines dropped from the default list because the device is not a file (kernel on
  // raid: / mem:); reported in the header and the JSON.
  std::vector<EngineSpec> skipped_engines;
};

inline constexpr uint64_t kMaxTotalFileBytes = 8ull << 30;

// One run of ctx.job with ctx.engine on ctx.path: Prepare, the workers (RunWorkload, or the
// engine itself) with a progress line named `label` showing IOPS, then Finish. Also used by
// `folio fs bench`, which runs the kernel engine on files of three file systems.
Result<RunResult> RunEngineJob(const EngineContext& ctx, uint64_t seed, ProgressMode progress_mode,
                               const std::string& label);

// Returns the process exit code (0, 1 runtime failure, 2 usage error, 130 interrupted);
// errors are printed as one line on stderr.
int RunBench(const BenchConfig& config);

}  // namespace folio::bench
