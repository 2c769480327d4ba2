// `folio fs bench`: the seed-2 experiment (issue 10). MLPerf-storage / mdtest-style figures in
// one run, side by side on three targets, all under one temp directory:
//
//   folio           a Folio FS volume formatted and mounted by the bench (`folio fs format` and
//                   `folio fs mount --daemon` run as child processes of this binary): SQLite
//                   metadata in the temp dir, a dir: store beside it (or --store dev:SPEC)
//   ext4            a directory in the temp dir, through the kernel
//   passthrough_ll  libfuse's example (bench/build-passthrough-ll.sh builds it) over that
//                   directory, with its default caching (cache=auto: the kernel page cache, as
//                   Folio's mount uses it)
//
// Phases (fs_bench_phases.cc), each on every target before the next phase:
//   randread 4 KiB, 1 and 4 threads, on a file of cache/2 (pre-read right before the run: the
//            machine's proactive reclaim evicts cold page cache) and on one of 2 x cache
//   randwrite 4 KiB, 1 and 4 threads, on the 2 x cache file, end_fsync
//   seqwrite / seqread 1 MiB, 1 thread, on the 2 x cache file (write end_fsync; read cold)
//   metadata ops/s with 1 and 4 threads: mkdir, create, stat, open+close, readdir (of all the
//            entries), rename, unlink, --md-files entries (default 10000), as mdtest's phases
//   small files: --small-files files of 1-64 KiB (seeded sizes) written with 4 threads (no
//            fsync), then read back; files/s and objects in the store; on Folio with packing
//            (the default format) and without (a second volume formatted --pack-below 0)
// The I/O phases are `folio bench`'s kernel engine (pread / pwrite through each target's
// path) and its worker driver, so they time exactly as `folio bench` does; the kernel page
// cache of the reader (and of passthrough_ll's server) is capped at --cache with the memory
// cgroup `folio bench` uses (bench/memcg.h). What cannot be made equal is said in the output.
//
// Thread safety: RunFsBench is called once from main's thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/kernel_folios.h"

namespace folio::cli {

struct FsBenchConfig {
  std::string dir;               // parent of the temp directory (default $TMPDIR or /tmp)
  std::string store;             // "" = dir: in the temp dir; else dev:SPEC for the Folio volume
  uint64_t cache_bytes = 512ull << 20;  // Folio's --cache and the kernel's memory cgroup limit
  double runtime_s = 1;          // per timed I/O phase (a metadata op: 2 x, at least 1 s)
  uint32_t md_files = 10000;     // entries per metadata run
  uint32_t small_files = 10000;  // files in the small-file phase
  int repeat = 1;                // runs of every phase; the report shows medians
  bool quick = false;            // tiny sizes, for tests (set the fields above itself)
  bool json = false;
  std::string plot_path;         // empty: no plot
  std::string passthrough_ll;    // a built passthrough_ll ("" = build it in the temp dir)
  std::string folio_binary;      // this binary or --mount-binary (runs `folio fs mount`)
  // --readahead: the Folio mounts' -o readahead=SIZE; 0: not given (the mount binary's default,
  // so that an older --mount-binary still mounts).
  uint64_t readahead_bytes = 0;
  // Prefixes of the phases to run (empty: all). A group runs when one is a prefix of its
  // name: each I/O phase's, "md-1t" / "md-4t" (every metadata op), "smallfiles".
  std::vector<std::string> phases;
};

// Whether some phase group starts with prefix (--phases).
bool FsBenchPhaseKnown(const std::string& prefix);

// The sizes of the bench's data: the cached file (cache/2), the large one (2 x cache).
uint64_t FsBenchCachedFileBytes(const FsBenchConfig& c);
uint64_t FsBenchLargeFileBytes(const FsBenchConfig& c);
// Bytes the temp directory needs at most (two copies of the data files, small files, slack).
uint64_t FsBenchNeededBytes(const FsBenchConfig& c);
inline constexpr uint64_t kFsBenchMaxBytes = 8ull << 30;

// Returns the exit code: 0, 1 runtime failure, 2 usage error, 130 interrupted.
int RunFsBench(const FsBenchConfig& c);

// ---- Results (fs_bench_report.cc) ----

inline constexpr char kTargetFolio[] = "folio";
inline constexpr char kTargetExt4[] = "ext4";
inline constexpr char kTargetPll[] = "passthrough_ll";
// The cached-read phases only: ext4 once more with its file read without readahead, so its
// page cache holds it in 4 KiB folios, as the kernel (6.18) holds every FUSE file. ext4 caches
// a file read in large requests in folios of up to 2 MiB, and a cached 4 KiB read costs about
// twice as much in 4 KiB folios: this is the like-for-like figure for both FUSE targets.
inline constexpr char kTargetExt4SmallFolios[] = "ext4-4k-folios";

// One phase's figure on every target it ran on, over the repeats.
struct FsPhaseResult {
  std::string name;      // "randread-4k-cached-1t", "md-create-4t", ...
  std::string group;     // "io", "metadata", "small-files", "large-files"
  std::string unit;      // "IOPS", "ops/s", "files/s", "MiB/s"
  uint32_t threads = 1;
  std::map<std::string, std::vector<double>> runs;   // target -> value of every repeat
  std::map<std::string, uint64_t> objects;           // small files: target -> store objects
  // Cached reads: target -> the folios the kernel's page cache held its file in after its
  // last run (absent: not taken, e.g. not root).
  std::map<std::string, bench::KernelFolioCensus> kernel_folios;
  std::vector<std::string> notes;

  // The median of a target's runs; 0 when it did not run.
  double Median(const std::string& target) const;
};

// kMet only when every figure the target needs was measured and passes; kNotMet when a
// measured one fails (even with others missing); else kNotMeasured (a --phases subset, a target
// that produced no figure).
enum class FsVerdict { kMet, kNotMet, kNotMeasured };

// "met", "NOT met", "not measured".
const char* FsVerdictName(FsVerdict v);

struct FsTargetVerdict {
  std::string name;    // what the issue asks
  FsVerdict verdict = FsVerdict::kNotMeasured;
  std::string detail;  // the measured figures behind the verdict, then what was not measured
};

struct FsBenchReport {
  std::vector<FsPhaseResult> phases;
  std::vector<std::string> fairness;  // what was made equal and what could not be
  std::string load;                   // /proc/loadavg at the start
  std::string command;
};

// A figure as the table shows it: "241", "8.7k", "1.13M"; "-" for 0.
std::string FormatFsBenchValue(double v);
// The phases of a full run (no --phases) that run on passthrough_ll, in their order: every
// phase but Folio's smallfiles-*-nopack.
std::vector<std::string> FsBenchPllPhases();
// The targets, judged from the medians.
std::vector<FsTargetVerdict> JudgeTargets(const FsBenchReport& r);
std::string FormatFsBenchTable(const FsBenchReport& r, const FsBenchConfig& c);
std::string FsBenchJson(const FsBenchReport& r, const FsBenchConfig& c);
std::string FsBenchPlotSvg(const FsBenchReport& r);

}  // namespace folio::cli
