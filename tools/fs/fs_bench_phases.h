// The phases of `folio fs bench` (fs_bench.h lists them), each run on one target directory.
// Every phase is bounded: I/O phases by their runtime, metadata and small-file phases by their
// entry count, and all of them stop early (returning Again "interrupted") when *stop is set.
//
// Thread safety: each function is called from the bench's main thread and runs its worker
// threads itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/progress.h"
#include "bench/jobfile.h"
#include "bench/kernel_folios.h"
#include "folio/status.h"

namespace folio::bench {
class MemoryCgroup;
}

namespace folio::cli {

struct PhaseEnv {
  const std::atomic<bool>* stop = nullptr;
  ProgressMode progress = ProgressMode::kAuto;
  bench::MemoryCgroup* memcg = nullptr;  // the reader's cgroup for buffered I/O, or null
  std::string unlimited_why;             // why memcg is null
  uint64_t cache_bytes = 0;
  uint64_t seed = 1;
};

// An I/O phase: a `folio bench` job on `file`.
struct IoPhase {
  std::string name;  // "randread-4k-cached-1t"
  bench::JobSpec job;
  bool large_file = false;  // on the 2 x cache file (else the cached one)
  bool mib_per_s = false;   // report MiB/s (else IOPS)
};

// The I/O phases for a runtime per phase and the two file sizes.
std::vector<IoPhase> IoPhases(double runtime_s, uint64_t cached_bytes, uint64_t large_bytes);

struct IoPhaseRun {
  double value = 0;  // IOPS or MiB/s
  // A pre-reading phase: the folios the kernel's page cache held the file in after the run.
  std::optional<bench::KernelFolioCensus> kernel_folios;
  std::string kernel_folios_error;  // why kernel_folios is empty, when the census was tried
};

// Runs `phase` on `file` (of the phase's size) with the kernel engine and appends the engine's
// notes. `label` names the progress line. pre_read_small_folios: the phase's pre-read leaves the
// file in 4 KiB folios (bench::EngineContext).
Result<IoPhaseRun> RunIoPhase(const IoPhase& phase, const std::string& file, const PhaseEnv& env,
                              const std::string& label, std::vector<std::string>* notes,
                              bool pre_read_small_folios = false);

// The ops RunMetadataPhases times, in its order.
inline constexpr const char* kMetadataOps[] = {"mkdir",   "create", "stat",  "open+close",
                                               "readdir", "rename", "unlink"};

// mdtest's phases in `root` with `threads` threads over `entries` entries in all (all in one
// directory, so readdir lists all of them): mkdir, create, stat, open+close, readdir, rename,
// unlink. Each op stops at deadline_s (a slow target does fewer entries; the ops after create
// cover the files it made). Returns (op, ops/s) in that order; everything made is removed.
Result<std::vector<std::pair<std::string, double>>> RunMetadataPhases(
    const std::string& root, uint32_t threads, uint32_t entries, double deadline_s,
    const PhaseEnv& env, const std::string& label);

struct SmallFilesResult {
  double write_files_per_s = 0;  // create + write + close of every file (no fsync)
  double read_files_per_s = 0;   // open + read all + close of every file
  // With a sync file: the writes and then the fsync of that file, which on a Folio mount
  // (its .stats) commits every file to the store: files / (write + sync seconds).
  double committed_files_per_s = 0;
  uint64_t bytes = 0;
};

// `files` files of 1-64 KiB (sizes from env.seed, the same on every target) written with 4
// threads into root/small, then read back and checked for size. A non-empty `sync_file` is
// fsynced (timed) between the writes and the reads.
Result<SmallFilesResult> RunSmallFiles(const std::string& root, uint32_t files,
                                       const PhaseEnv& env, const std::string& label,
                                       const std::string& sync_file = "");

}  // namespace folio::cli
