// Bench engines: how one job reaches the file (or, for `limit`, memory). An Engine is built per (job, engine) run on
// the shared data file; it prepares outside the timed region (open, start cold, pre_read),
// hands each worker thread a WorkerIo, and afterwards syncs writes and gathers its stats
// (again outside the timed region).
//
//   limit         memcpy from / to a pre-faulted anonymous buffer of the file's size: the
//                 ceiling of a cached run (cached jobs only)
//   kernel        pread / pwrite on the file, buffered through the kernel's page cache
//                 (dropped with POSIX_FADV_DONTNEED first, so every engine starts cold); with
//                 direct=1, O_DIRECT through an io_uring per thread with iodepth in flight
//   fio           the job run by Debian's fio binary (ioengine=io_uring), its JSON parsed
//   folio:POLICY  a PageCache of --cache bytes with that folio policy over
//                 OpenFileDevice(file, O_DIRECT), one AddressSpace; with direct=1 the cache
//                 is bypassed and workers drive the BlockDevice with iodepth requests in
//                 flight (buffers from a FolioArena registered with the device)
//
// With `folio bench --device SPEC` the bench opens the device once and every engine runs on
// it (EngineContext::device): the folio engines put their cache over it (or, direct=1, drive
// it) instead of opening a file; the kernel engine uses the file behind a file: spec.
//
// Thread safety: Prepare / NewWorker / Finish are called from the bench's main thread; each
// WorkerIo is then used by one worker thread; the engine outlives its workers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/engine_spec.h"
#include "bench/jobfile.h"
#include "bench/kernel_folios.h"
#include "bench/workload.h"
#include "folio/arena.h"
#include "folio/block_device.h"
#include "folio/page_cache.h"
#include "folio/status.h"

namespace folio::bench {

// What a folio engine reports after its run.
struct FolioRunStats {
  bool cache_used = false;          // false for direct=1 (device only)
  PageCacheStats cache;             // counters over the run (pre_read excluded); resident now
  DeviceStatsSnapshot device;       // requests that reached the file over the run
  ArenaBackingReport backing;       // what the cache's (or buffers') arena obtained
  double setup_s = 0;               // cache creation + pre_read, not timed
  double sync_s = 0;                // Fsync after a write run, not timed
};

// The memory an engine ran with, for the table and the JSON.
struct MemoryReport {
  // "cache" (Folio's --cache), "cgroup v1" / "cgroup v2" (the kernel in the bench's memory
  // cgroup), "machine" (no limit: --kernel-memory all, or no cgroup could be made), "buffer"
  // (limit: its anonymous buffer), "none" (direct=1: no cache).
  std::string kind = "none";
  uint64_t limit_bytes = 0;  // 0 with machine / none
  uint64_t peak_bytes = 0;   // cgroup: its peak usage over the run (0 = unknown)
  std::string cgroup;        // cgroup: its directory
  std::string why;           // machine: why there is no limit
};

class MemoryCgroup;

struct EngineContext {
  JobSpec job;
  EngineSpec engine;
  std::string path;            // the data file (the kernel engine's file with --device)
  uint64_t file_bytes = 0;     // bytes of the file the job uses (a multiple of 4096)
  uint64_t region_offset = 0;  // the job's region, [region_offset, +region_bytes) (offset=);
  uint64_t region_bytes = 0;   //   pre_read reads it
  uint64_t cache_bytes = 0;    // --cache
  PageCacheOptions cache_options;  // --dirty-* (memory_bytes and policy come from the above)
  const std::atomic<bool>* stop = nullptr;
  // --device: the device every engine shares (not owned; the folio engines use it instead of
  // opening `path`), and the arena of direct=1 buffers registered with it once for the whole
  // bench (null: the engine makes its own, unregistered).
  BlockDevice* device = nullptr;
  FolioArena* direct_arena = nullptr;
  // The kernel engine's memory cgroup (equal memory), or null: all of the machine's memory,
  // for the reason in `unlimited_why`.
  MemoryCgroup* memcg = nullptr;
  std::string unlimited_why;
  // The kernel engine's pre_read leaves the file in 4 KiB folios (POSIX_FADV_RANDOM: no
  // readahead), as the kernel caches a FUSE file, instead of the large folios readahead makes.
  bool pre_read_small_folios = false;
};

// Bytes of buffers a direct=1 folio run of `job` takes from its arena: numjobs * iodepth
// buffers of bs rounded up to a folio size (bs <= 2M).
uint64_t DirectBufferBytes(const JobSpec& job);
// What a direct=1 arena holds beyond the buffers (the allocator's per-thread caches).
inline constexpr uint64_t kDirectArenaHeadroomBytes = 8ull << 20;
// The most buffer memory a direct=1 run may take.
inline constexpr uint64_t kDirectBuffersMaxBytes = 4ull << 30;

class Engine {
 public:
  virtual ~Engine() = default;
  // Opens the file and warms it when the job asks (pre_read). Not timed.
  virtual Status Prepare() = 0;
  // A WorkerIo for worker `index` (buffers, requests). Called before the timed region.
  virtual Result<std::unique_ptr<WorkerIo>> NewWorker(uint32_t index) = 0;
  // After the run: syncs written data and collects stats. Not timed.
  virtual Status Finish() = 0;
  // Whether the engine runs the whole job itself (fio: another process) instead of handing out
  // WorkerIos; then RunItself replaces RunWorkload and NewWorker is not called.
  virtual bool runs_itself() const { return false; }
  virtual Result<TimedRun> RunItself(uint64_t, const std::atomic<bool>*) {
    return Status::NotSupported("this engine runs through worker threads");
  }
  // Called (from the bench's main thread, while workers run) when the timed region starts.
  virtual void OnMeasureStart() {}
  // Bytes the engine read from the device (file) between OnMeasureStart and Finish, for the
  // hit ratio; -1 when the engine has no device reads to count (limit, direct=1).
  virtual int64_t device_read_bytes() const { return -1; }
  // Set after Finish.
  virtual MemoryReport memory() const = 0;
  // Set after Finish for folio engines.
  virtual const FolioRunStats* folio_stats() const { return nullptr; }
  // Set after Finish by the kernel engine of a buffered job that pre-reads: the folios the
  // kernel's page cache held the job's region in after the run, or why they are not known
  // (e.g. not root). Null: not taken.
  virtual const Result<KernelFolioCensus>* kernel_folios() const { return nullptr; }
  // Remarks for the report (e.g. "page cache dropped, then file pre-read").
  virtual std::vector<std::string> notes() const { return {}; }
};

std::unique_ptr<Engine> NewKernelEngine(const EngineContext& ctx);
std::unique_ptr<Engine> NewLimitEngine(const EngineContext& ctx);
std::unique_ptr<Engine> NewFioEngine(const EngineContext& ctx);
// A latency histogram of `ops` operations rebuilt from one of fio's JSON latency objects
// ({"percentile": {"1.000000": ns, ...}, "mean", "max"}): the ops between two percentile
// points are put at the upper point's value, in the points' numeric order (the JSON object's
// keys sort as text: "10.000000" before "5.000000"). Empty without percentiles or ops.
HistogramSnapshot FioLatencyHistogram(const nlohmann::json& lat, uint64_t ops);
std::unique_ptr<Engine> NewFolioCachedEngine(const EngineContext& ctx);
std::unique_ptr<Engine> NewFolioDirectEngine(const EngineContext& ctx);

// The right engine for ctx.engine and ctx.job.direct.
std::unique_ptr<Engine> NewEngine(const EngineContext& ctx);

// Counter fields of `after` minus `before` (per order and totals); gauges (resident, dirty,
// memory) are taken from `after`.
PageCacheStats DiffCacheStats(const PageCacheStats& after, const PageCacheStats& before);

}  // namespace folio::bench
