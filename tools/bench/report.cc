#include "bench/report.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/check.h"
#include "base/units.h"

namespace folio::bench {

namespace {

using Json = nlohmann::ordered_json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string FormatUs(uint64_t ns) {
  const double us = static_cast<double>(ns) / 1000.0;
  return Printf(us < 10 ? "%.2f" : us < 1000 ? "%.1f" : "%.0f", us);
}

// "996K", "1.5M", "64K": three significant digits at most.
std::string ShortBytes(double bytes) {
  static const char* kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return Printf(bytes < 10 && bytes != static_cast<double>(static_cast<uint64_t>(bytes))
                    ? "%.1f" : "%.0f", bytes) + kUnits[u];
}

// The memory column: "1G cg1", "1G cache", "2G buf", "all", "-".
std::string MemoryLabel(const MemoryReport& m) {
  if (m.kind == "cache") return FormatSize(m.limit_bytes) + " cache";
  if (m.kind == "cgroup v1") return FormatSize(m.limit_bytes) + " cg1";
  if (m.kind == "cgroup v2") return FormatSize(m.limit_bytes) + " cg2";
  if (m.kind == "buffer") return FormatSize(m.limit_bytes) + " buf";
  if (m.kind == "machine") return "all";
  return "-";
}

std::string JobLine(const RunResult& r) {
  const JobSpec& j = r.job;
  std::string s =
      "[" + j.name + "] rw=" + std::string(RwModeName(j.rw)) + " bs=" + FormatSize(j.block_bytes);
  if (j.rw == RwMode::kReadWrite || j.rw == RwMode::kRandReadWrite) {
    s += " rwmixread=" + std::to_string(j.rwmixread);
  }
  if (j.size_bytes != 0) s += " size=" + FormatSize(j.size_bytes);
  s += " iodepth=" + std::to_string(j.iodepth) + " numjobs=" + std::to_string(j.numjobs);
  if (j.runtime_us != 0) s += " runtime=" + Printf("%gs", static_cast<double>(j.runtime_us) / 1e6);
  if (j.time_based) s += " time_based";
  if (j.ramp_time_us != 0) {
    s += " ramp_time=" + Printf("%gs", static_cast<double>(j.ramp_time_us) / 1e6);
  }
  s += std::string(" direct=") + (j.direct ? "1" : "0");
  if (j.pre_read) s += " pre_read=1";
  if (RwModeIsRandom(j.rw) && j.random_distribution != RandomDist::kRandom) {
    s += " random_distribution=" + DistributionText(j);
  } else if (RwModeIsRandom(j.rw) && j.norandommap) {
    s += " norandommap";
  }
  if (j.offset_bytes != 0) s += " offset=" + FormatSize(j.offset_bytes);
  if (j.offset_percent != 0) s += " offset=" + std::to_string(j.offset_percent) + "%";
  if (j.fsync_blocks != 0) s += " fsync=" + std::to_string(j.fsync_blocks);
  if (j.fdatasync_blocks != 0) s += " fdatasync=" + std::to_string(j.fdatasync_blocks);
  if (j.end_fsync) s += " end_fsync=1";
  if (j.fsync_on_close) s += " fsync_on_close=1";
  if (j.rate_iops_read != 0 || j.rate_iops_write != 0) {
    s += " rate_iops=" + std::to_string(j.rate_iops_read) + "," + std::to_string(j.rate_iops_write);
  }
  if (j.startdelay_max_us != 0) {
    s += " startdelay=" + Printf("%gs", static_cast<double>(j.startdelay_us) / 1e6);
    if (j.startdelay_max_us != j.startdelay_us) {
      s += "-" + Printf("%gs", static_cast<double>(j.startdelay_max_us) / 1e6);
    }
  }
  if (j.loops != 1) s += " loops=" + std::to_string(j.loops);
  if (!j.randrepeat) s += " randrepeat=0 (seed " + std::to_string(r.timed.seed) + ")";
  s += std::string("\n  ") + (r.on_device ? "device " : "file ") + r.file +
       (r.file_created ? " (created for the run)" : "") + "\n";
  return s;
}

// Resident bytes per folio size, non-zero only: "4K:512M 64K:1.50G".
std::string ResidentByOrder(const PageCacheStats& c) {
  std::string s;
  for (int o = 0; o < kNumOrders; ++o) {
    if (c.orders[o].resident_bytes == 0) continue;
    if (!s.empty()) s += " ";
    s += FormatSize(OrderBytes(o)) + ":" + FormatSize(c.orders[o].resident_bytes);
  }
  return s.empty() ? "none" : s;
}

std::string FolioLine(const RunResult& r) {
  const FolioRunStats& f = r.folio;
  std::string s = "  " + r.engine.Name() + ": ";
  if (f.cache_used) {
    uint64_t hits = 0, misses = 0, fallbacks = 0;
    for (const CacheOrderStats& o : f.cache.orders) {
      hits += o.hits;
      misses += o.misses;
      fallbacks += o.fallbacks;
    }
    const HistogramSnapshot& wb = f.cache.writeback_request_bytes;
    s += "hits " + FormatCount(hits) + ", misses " + FormatCount(misses) + ", resident " +
         ResidentByOrder(f.cache) + ", readahead " + FormatCount(f.cache.readahead_windows) +
         " windows, writeback " + FormatCount(f.cache.writeback_requests) + " req";
    if (f.cache.writeback_requests != 0) {
      s += " (mean " + ShortBytes(static_cast<double>(f.cache.writeback_bytes) /
                                  static_cast<double>(f.cache.writeback_requests)) + ")";
    } else if (wb.count != 0) {
      s += " (mean " + ShortBytes(wb.Mean()) + ")";
    }
    s += ", fallbacks " + FormatCount(fallbacks) + ", evictions " +
         FormatCount(f.cache.evictions);
    if (f.cache.sparse_evictions != 0) {
      s += " (" + FormatCount(f.cache.sparse_evictions) + " sparse)";
    }
    if (f.cache.compact_attempts != 0) {
      s += ", compaction " + FormatCount(f.cache.compact_successes) + "/" +
           FormatCount(f.cache.compact_attempts) + " (" +
           FormatSize(f.cache.compact_migrated_bytes) + " moved)";
    }
    if (f.cache.writeback_waits != 0) {
      s += ", writeback waits " + FormatCount(f.cache.writeback_waits);
    }
    if (f.cache.write_stream_folios != 0) {
      s += ", write-stream folios " + FormatCount(f.cache.write_stream_folios);
    }
    if (f.cache.throttled_writes != 0) {
      s += ", throttled " + FormatCount(f.cache.throttled_writes);
    }
  } else {
    const DeviceStatsSnapshot& d = f.device;
    s += "device " + FormatCount(d.read_requests) + " reads, " + FormatCount(d.write_requests) +
         " writes, " + FormatCount(d.read_merges + d.write_merges) + " merges";
  }
  s += "; arena " + std::string(ArenaBackingName(f.backing.obtained)) + " (" +
       FormatSize(f.backing.anon_huge_bytes + f.backing.hugetlb_bytes) + " huge of " +
       FormatSize(f.backing.capacity_bytes) + ")\n";
  return s;
}

Json DirJson(const DirStats& d, double elapsed_s) {
  const HistogramSnapshot& h = d.latency_ns;
  Json pct = Json::object();
  for (double q : {1.0, 5.0, 10.0, 50.0, 90.0, 95.0, 99.0, 99.9}) {
    pct[Printf("%f", q)] = d.ops ? h.Percentile(q / 100.0) : 0;
  }
  const double secs = elapsed_s > 0 ? elapsed_s : 1;
  return Json{
      {"io_bytes", d.bytes},
      {"io_kbytes", d.bytes / 1024},
      {"bw_bytes", static_cast<uint64_t>(static_cast<double>(d.bytes) / secs)},
      {"bw", static_cast<uint64_t>(static_cast<double>(d.bytes) / secs / 1024)},
      {"iops", static_cast<double>(d.ops) / secs},
      {"runtime", static_cast<uint64_t>(elapsed_s * 1000)},
      {"total_ios", d.ops},
      {"clat_ns", {{"mean", h.Mean()}, {"max", h.max}, {"percentile", pct}}},
  };
}

Json FolioJson(const FolioRunStats& f) {
  Json j;
  j["cache_used"] = f.cache_used;
  if (f.cache_used) {
    const PageCacheStats& c = f.cache;
    Json orders = Json::array();
    for (int o = 0; o < kNumOrders; ++o) {
      const CacheOrderStats& s = c.orders[o];
      orders.push_back({{"order", o}, {"folio_bytes", OrderBytes(o)},
                        {"resident_folios", s.resident_folios},
                        {"resident_bytes", s.resident_bytes}, {"requests", s.requests},
                        {"allocs", s.allocs}, {"fallbacks", s.fallbacks},
                        {"compacted", s.compacted}, {"splits", s.splits},
                        {"collapses", s.collapses}, {"hits", s.hits}, {"misses", s.misses},
                        {"evictions", s.evictions}});
    }
    j["orders"] = orders;
    j["cache"] = {{"memory_bytes", c.memory_bytes}, {"resident_bytes", c.resident_bytes},
                  {"dirty_bytes", c.dirty_bytes}, {"readahead_windows", c.readahead_windows},
                  {"readahead_async", c.readahead_async},
                  {"readahead_hit_pages", c.readahead_hit_pages}, {"evictions", c.evictions},
                  {"evicted_dirty", c.evicted_dirty},
                  {"sparse_evictions", c.sparse_evictions},
                  {"writeback_requests", c.writeback_requests},
                  {"writeback_bytes", c.writeback_bytes},
                  {"throttled_writes", c.throttled_writes},
                  {"throttled_ns", c.throttled_ns},
                  {"writeback_waits", c.writeback_waits},
                  {"write_stream_folios", c.write_stream_folios},
                  {"writeback_expired_passes", c.writeback_expired_passes},
                  {"writeback_background_chunks", c.writeback_background_chunks},
                  {"fill_read_requests", c.fill_read_requests},
                  {"compact_attempts", c.compact_attempts},
                  {"compact_successes", c.compact_successes},
                  {"compact_migrated_bytes", c.compact_migrated_bytes},
                  {"compact_evicted_bytes", c.compact_evicted_bytes},
                  {"compact_background_attempts", c.compact_background_attempts},
                  {"compact_background_blocks", c.compact_background_blocks},
                  {"compact_background_reclaimed_bytes", c.compact_background_reclaimed_bytes}};
  }
  const DeviceStatsSnapshot& d = f.device;
  j["device"] = {{"read_requests", d.read_requests}, {"read_bytes", d.read_bytes},
                 {"write_requests", d.write_requests}, {"write_bytes", d.write_bytes},
                 {"flushes", d.flushes}, {"read_merges", d.read_merges},
                 {"write_merges", d.write_merges}, {"errors", d.errors},
                 {"read_request_bytes_mean", d.read_request_bytes.Mean()},
                 {"write_request_bytes_mean", d.write_request_bytes.Mean()},
                 {"latency_ns", {{"p50", d.latency_ns.Percentile(0.5)},
                                 {"p99", d.latency_ns.Percentile(0.99)},
                                 {"max", d.latency_ns.max}}}};
  const ArenaBackingReport& b = f.backing;
  j["arena"] = {{"requested", std::string(ArenaBackingName(b.requested))},
                {"obtained", std::string(ArenaBackingName(b.obtained))},
                {"capacity_bytes", b.capacity_bytes}, {"anon_huge_bytes", b.anon_huge_bytes},
                {"hugetlb_bytes", b.hugetlb_bytes}, {"rss_bytes", b.rss_bytes},
                {"note", b.note}};
  j["setup_s"] = f.setup_s;
  j["sync_s"] = f.sync_s;
  return j;
}

Json JobOptionsJson(const JobSpec& j) {
  return Json{{"rw", std::string(RwModeName(j.rw))}, {"bs", std::to_string(j.block_bytes)},
              {"size", std::to_string(j.size_bytes)}, {"iodepth", std::to_string(j.iodepth)},
              {"iodepth_batch_submit", std::to_string(j.iodepth_batch_submit)},
              {"numjobs", std::to_string(j.numjobs)},
              {"runtime", std::to_string(j.runtime_us / 1000000)},
              {"time_based", j.time_based ? "1" : "0"}, {"direct", j.direct ? "1" : "0"},
              {"rwmixread", std::to_string(j.rwmixread)},
              {"ramp_time", std::to_string(j.ramp_time_us / 1000000)},
              {"pre_read", j.pre_read ? "1" : "0"},
              {"fsync", std::to_string(j.fsync_blocks)},
              {"fdatasync", std::to_string(j.fdatasync_blocks)},
              {"end_fsync", j.end_fsync ? "1" : "0"},
              {"fsync_on_close", j.fsync_on_close ? "1" : "0"},
              {"offset", j.offset_percent != 0 ? std::to_string(j.offset_percent) + "%"
                                               : std::to_string(j.offset_bytes)},
              {"randrepeat", j.randrepeat ? "1" : "0"},
              {"norandommap", j.norandommap ? "1" : "0"},
              {"random_distribution", DistributionText(j)},
              {"rate_iops", std::to_string(j.rate_iops_read) + "," +
                                std::to_string(j.rate_iops_write)},
              {"startdelay", std::to_string(j.startdelay_us) + "us-" +
                                 std::to_string(j.startdelay_max_us) + "us"},
              {"loops", std::to_string(j.loops)}};
}

}  // namespace

std::string FormatCount(uint64_t n) {
  if (n >= 10000000) return Printf("%.0fM", static_cast<double>(n) / 1e6);
  if (n >= 1000000) return Printf("%.1fM", static_cast<double>(n) / 1e6);
  if (n >= 10000) return Printf("%.0fk", static_cast<double>(n) / 1e3);
  return std::to_string(n);
}

double RunResult::iops() const {
  return timed.elapsed_s > 0 ? static_cast<double>(ops()) / timed.elapsed_s : 0;
}

double RunResult::bytes_per_s() const {
  return timed.elapsed_s > 0 ? static_cast<double>(bytes()) / timed.elapsed_s : 0;
}

double RunResult::cpu_s_per_gib() const {
  if (bytes() == 0) return 0;
  return (timed.usr_cpu_s + timed.sys_cpu_s) / (static_cast<double>(bytes()) / kGiB);
}

double RunResult::hit_ratio() const {
  if (device_read_bytes < 0 || timed.read.bytes == 0) return -1;
  const double miss =
      static_cast<double>(device_read_bytes) / static_cast<double>(timed.read.bytes);
  return miss >= 1 ? 0 : 1 - miss;
}

HistogramSnapshot RunResult::latency_ns() const {
  HistogramSnapshot h = timed.read.latency_ns;
  h.Merge(timed.write.latency_ns);
  return h;
}

RunResult MedianRun(std::vector<RunResult> runs) {
  FOLIO_CHECK(!runs.empty());
  std::vector<double> iops;
  for (const RunResult& r : runs) iops.push_back(r.iops());
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return iops[a] < iops[b]; });
  RunResult median = std::move(runs[order[(order.size() - 1) / 2]]);
  if (runs.size() > 1) median.round_iops = std::move(iops);
  return median;
}

std::string FormatIops(double iops) {
  if (iops >= 10e6) return Printf("%.1fM", iops / 1e6);
  if (iops >= 1e6) return Printf("%.2fM", iops / 1e6);
  if (iops >= 1e3) return Printf("%.1fk", iops / 1e3);
  return Printf("%.0f", iops);
}

std::string FormatJobTable(const std::vector<RunResult>& runs,
                           const std::vector<std::string>& job_notes) {
  if (runs.empty()) return "";
  std::string out = JobLine(runs.front());
  // The ratio columns: each row's IOPS over these rows' (when the job has them).
  const RunResult* limit = nullptr;
  const RunResult* kernel = nullptr;
  const RunResult* kernel4k = nullptr;
  const RunResult* folio4k = nullptr;
  for (const RunResult& r : runs) {
    if (r.engine.kind == EngineSpec::Kind::kLimit) limit = &r;
    if (r.engine.kind == EngineSpec::Kind::kKernel) kernel = &r;
    if (r.engine.kind == EngineSpec::Kind::kKernel4k) kernel4k = &r;
    if (r.engine.kind == EngineSpec::Kind::kFolio4k) folio4k = &r;
  }
  struct Base {
    const RunResult* run;
    const char* title;
  };
  const Base bases[] = {{limit, "vs limit"},
                        {kernel, "vs kernel"},
                        {kernel4k, "vs kernel:4k"},
                        {folio4k, "vs folio:4k"}};
  char line[256];
  bool hits = false;  // the hit column, when any run measured one
  for (const RunResult& r : runs) hits = hits || r.hit_ratio() >= 0;
  std::snprintf(line, sizeof(line), "  %-18s %-10s %9s %9s %8s %8s %9s", "engine", "memory",
                "IOPS", "MiB/s", "p50 us", "p99 us", "CPU s/GiB");
  out += line;
  if (hits) out += "   hit %";
  for (const Base& b : bases) {
    if (b.run != nullptr) out += std::string("  ") + b.title;
  }
  out += "\n";
  for (const RunResult& r : runs) {
    HistogramSnapshot lat = r.latency_ns();
    std::snprintf(line, sizeof(line), "  %-18s %-10s %9s %9.1f %8s %8s %9.2f",
                  r.engine.Name().c_str(), MemoryLabel(r.memory).c_str(),
                  FormatIops(r.iops()).c_str(), r.bytes_per_s() / (1024.0 * 1024.0),
                  FormatUs(lat.Percentile(0.5)).c_str(), FormatUs(lat.Percentile(0.99)).c_str(),
                  r.cpu_s_per_gib());
    out += line;
    if (hits) {
      const double h = r.hit_ratio();
      out += h < 0 ? "        -" : Printf("  %7.1f", 100.0 * h);
    }
    for (const Base& b : bases) {
      if (b.run == nullptr) continue;
      const double ratio = b.run->iops() > 0 ? r.iops() / b.run->iops() : 0;
      std::snprintf(line, sizeof(line), "  %*.2fx", static_cast<int>(std::strlen(b.title)) - 1,
                    ratio);
      out += line;
    }
    out += "\n";
  }
  for (const RunResult& r : runs) {
    if (r.has_folio) out += FolioLine(r);
  }
  for (const RunResult& r : runs) {
    if (r.round_iops.size() < 2) continue;
    std::string rounds;
    for (double iops : r.round_iops) rounds += " " + FormatIops(iops);
    out += "  " + r.engine.Name() + ": the median of " + std::to_string(r.round_iops.size()) +
           " runs; IOPS per run, in order:" + rounds + "\n";
  }
  for (const RunResult& r : runs) {
    for (const std::string& n : r.notes) out += "  note: " + n + "\n";
    if (r.timed.interrupted) out += "  note: " + r.engine.Name() + " was interrupted\n";
  }
  for (const std::string& n : job_notes) out += "  note: " + n + "\n";
  return out + "\n";
}

std::string FormatLegend() {
  return "Legend:\n"
         "  IOPS, MiB/s   operations and bytes per second over the timed region (after "
         "ramp_time)\n"
         "  p50, p99 us   per-operation completion latency (histogram buckets, within 25%)\n"
         "  CPU s/GiB     user + system CPU of the whole process during the timed region, per "
         "GiB moved\n"
         "  memory        what the engine ran with: N cache (Folio's --cache), N cg1 / cg2 (the "
         "kernel in a memory cgroup\n"
         "                of N, v1 / v2), all (no limit), N buf (limit's buffer), - (direct=1)\n"
         "  hit %         100 * (1 - bytes read from the device / bytes the job read) over the "
         "timed region: folio from its\n"
         "                device's counters, kernel from /proc/self/io read_bytes (both include "
         "readahead)\n"
         "  vs X          IOPS of this engine divided by X's IOPS in the same job (with "
         "--repeat N: of the median runs)\n"
         "  limit         memcpy from / to an anonymous buffer of the file's size, the same "
         "offsets and threads: the ceiling of a cached run\n"
         "  kernel        pread/pwrite through the kernel page cache (in a memory cgroup of "
         "--kernel-memory, default --cache),\n"
         "                or O_DIRECT through io_uring with iodepth in flight; a note gives "
         "the folio sizes its page cache held the file in\n"
         "  kernel:4k     the same, with the pre-read made without readahead "
         "(POSIX_FADV_RANDOM), so the file is in 4 KiB folios\n"
         "                (ext4 caches a file read in large requests in folios up to 2 MiB); "
         "pre_read jobs only\n"
         "  folio:P       Folio's page cache of --cache bytes, folio policy P, over the file "
         "opened O_DIRECT (direct=1: the io layer alone)\n"
         "  hits/misses   lookups served by a resident folio / folios created for a miss; "
         "resident: bytes per folio size at the end;\n"
         "                readahead windows issued; writeback requests and their mean size; "
         "fallbacks: large folios the arena could not serve;\n"
         "                evictions (N sparse: referenced large folios whose reads went to a few "
         "pages, evicted anyway)\n";
}

Json ResultsJson(const std::vector<RunResult>& runs, uint64_t cache_bytes) {
  Json root;
  root["fio version"] = "folio-0.1.0";
  root["global options"] = {{"cache", std::to_string(cache_bytes)}};
  Json jobs = Json::array();
  for (const RunResult& r : runs) {
    const double secs = r.timed.elapsed_s;
    Json j;
    j["jobname"] = r.job.name;
    j["engine"] = r.engine.Name();
    j["policy"] = r.engine.PolicyName();
    j["seed"] = r.timed.seed;
    j["filename"] = r.file;
    if (r.on_device) j["device"] = r.file;
    j["job options"] = JobOptionsJson(r.job);
    j["job_runtime"] = static_cast<uint64_t>(secs * 1000);
    j["read"] = DirJson(r.timed.read, secs);
    j["write"] = DirJson(r.timed.write, secs);
    // fio's "sync" object: syncs issued by fsync= / fdatasync= / end_fsync / fsync_on_close.
    j["sync"] = {{"total_ios", r.timed.sync.ops},
                 {"lat_ns", {{"mean", r.timed.sync.latency_ns.Mean()},
                             {"max", r.timed.sync.latency_ns.max},
                             {"p99", r.timed.sync.ops ? r.timed.sync.latency_ns.Percentile(0.99)
                                                      : 0}}}};
    j["usr_cpu"] = secs > 0 ? 100.0 * r.timed.usr_cpu_s / secs : 0;
    j["sys_cpu"] = secs > 0 ? 100.0 * r.timed.sys_cpu_s / secs : 0;
    j["cpu_s_per_gib"] = r.cpu_s_per_gib();
    j["interrupted"] = r.timed.interrupted;
    j["memory"] = {{"kind", r.memory.kind}, {"limit_bytes", r.memory.limit_bytes},
                   {"peak_bytes", r.memory.peak_bytes}, {"cgroup", r.memory.cgroup},
                   {"why", r.memory.why}};
    if (r.hit_ratio() >= 0) {
      j["hit_ratio"] = r.hit_ratio();
      j["device_read_bytes"] = r.device_read_bytes;
    }
    if (r.has_folio) j["folio"] = FolioJson(r.folio);
    if (r.kernel_folios) j["kernel_folios"] = KernelFoliosJson(*r.kernel_folios);
    if (!r.round_iops.empty()) j["round_iops"] = r.round_iops;
    j["notes"] = r.notes;
    jobs.push_back(j);
  }
  root["jobs"] = jobs;
  return root;
}

}  // namespace folio::bench
