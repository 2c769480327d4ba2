// `folio bench --aging`: the fragmentation benchmark (issue 9). It ages a page cache with a
// mixed workload and measures how many large-folio requests are still served at the order
// they asked for, with each compaction mode (PageCacheOptions::compaction, with and without the
// background compactor) side by side.
//
// One run = rounds x modes (interleaved: off, evict, migrate-direct, migrate, off, ...), each
// on a fresh cache
// of --cache bytes (default 256M) over the same files, with the same seed:
//
//   fill    read every aging file sequentially (twice the cache: it ends full, in large
//           readahead folios, not yet fragmented)
//   probe   "before": large requests into a probe file nobody else touches (sequential
//           reads in 1 MiB calls: readahead windows up to 2 MiB; 2 MiB-aligned 2 MiB writes)
//   age     for --aging-seconds: one thread on four files of cache/2 each, random 4-16K
//           reads and writes, sequential reads (256K-4M) and writes (64K-2M), truncates and
//           regrowths, DONTNEED ranges, now and then an fsync; the cache's flusher and
//           collapse scanner run as by default
//   probe   "after": the same requests at fresh offsets of the probe file
//
// A probe's share = 1 - fallbacks / requests over folios of order >= 1 (CacheOrderStats), and
// the same for order 9 (2 MiB) alone. The report gives the median over rounds per mode.
// Files live in a fresh directory under --dir and are removed at the end.
//
// Thread safety: RunAging is called once from the main thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "folio/page_cache.h"

namespace folio::bench {

// What a cache of one row compacts with: `compaction`, and the background compactor when
// `background` (evict and migrate have it, as by default; migrate-direct does not).
struct AgingMode {
  CompactionMode compaction = CompactionMode::kOff;
  bool background = false;
  // "off", "evict", "migrate"; "-direct" appended when compaction is on without the
  // background compactor.
  std::string Name() const;
  bool operator==(const AgingMode&) const = default;
};

struct AgingConfig {
  uint64_t cache_bytes = 256ull << 20;
  PageCacheOptions cache_options;  // --dirty-* etc.; memory and compaction set per run
  std::string dir;
  bool json = false;
  uint64_t seed = 1;
  double seconds = 4;              // aging time per round and mode
  int rounds = 3;
  std::vector<AgingMode> modes = {{CompactionMode::kOff, false},
                                  {CompactionMode::kEvict, true},
                                  {CompactionMode::kMigrate, false},
                                  {CompactionMode::kMigrate, true}};
};

// The share of requests of order >= min_order (up to 9) served at the order asked for, in
// counters taken over one phase; 1 when there were none.
double ServedShare(const PageCacheStats& phase, int min_order);

// What one (mode, round) measured.
struct AgingRun {
  AgingMode mode;
  int round = 0;
  double before_share = 0, after_share = 0;  // orders >= 1
  double before_share_2m = 0, after_share_2m = 0;
  uint64_t before_requests = 0, after_requests = 0;
  uint64_t aging_ops = 0;
  double aging_s = 0;
  uint64_t device_read_bytes = 0;  // during aging and the after probe
  PageCacheStats aged;             // counters over aging + after probe
};

// Runs one (mode, round) on files already created under `dir_path` (see RunAging).
Result<AgingRun> RunAgingOnce(const AgingConfig& config, const std::string& dir_path,
                              const AgingMode& mode, int round,
                              const std::atomic<bool>* stop);

// Returns the process exit code (0, 1 runtime failure, 130 interrupted).
int RunAging(const AgingConfig& config);

}  // namespace folio::bench
