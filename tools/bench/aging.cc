// `folio bench --aging`: see aging.h for what is measured.
#include "bench/aging.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/progress.h"
#include "base/units.h"
#include "bench/datafile.h"
#include "bench/engine.h"
#include "bench/report.h"

namespace folio::bench {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kAgingFiles = 4;
constexpr uint64_t kProbeReadBytes = 32ull << 20;  // per probe: sequential reads
constexpr uint64_t kProbeWriteBytes = 16ull << 20; // per probe: 2 MiB writes
constexpr uint64_t kProbeFileBytes = 2 * (kProbeReadBytes + kProbeWriteBytes);
constexpr uint64_t kMaxIoBytes = 4ull << 20;
constexpr uint64_t kMiBytes = 1ull << 20;

std::string FilePath(const std::string& dir, int i) {
  return i < kAgingFiles ? fmt::format("{}/aging-{}", dir, i) : dir + "/probe";
}

uint64_t AgingFileBytes(const AgingConfig& c) { return c.cache_bytes / 2 / kPageBytes * kPageBytes; }

// A fresh, sparse file of `bytes` under O_DIRECT (buffered where the file system refuses it).
Result<std::unique_ptr<BlockDevice>> FreshFile(const std::string& path, uint64_t bytes) {
  ::unlink(path.c_str());
  FileDeviceOptions o;
  o.create = true;
  o.size_bytes = bytes;
  Result<std::unique_ptr<BlockDevice>> d = OpenFileDevice(path, o);
  if (!d.ok() && d.status().code() == StatusCode::kNotSupported) {
    o.direct = false;
    d = OpenFileDevice(path, o);
  }
  return d;
}

// The cache and files of one (mode, round); the files are removed with it.
struct Setup {
  std::unique_ptr<PageCache> cache;
  std::vector<std::unique_ptr<BlockDevice>> devices;
  std::vector<std::unique_ptr<AddressSpace>> spaces;  // kAgingFiles aging files, then probe
  std::vector<std::string> paths;

  ~Setup() {
    spaces.clear();
    cache.reset();
    devices.clear();
    for (const std::string& p : paths) ::unlink(p.c_str());
  }
  uint64_t DeviceReadBytes() const {
    uint64_t n = 0;
    for (const auto& d : devices) n += d->stats().read_bytes;
    return n;
  }
};

Status Open(const AgingConfig& c, const std::string& dir, const AgingMode& mode, Setup* s) {
  PageCacheOptions o = c.cache_options;
  o.memory_bytes = c.cache_bytes;
  o.compaction = mode.compaction;
  o.compaction_background = mode.background;
  o.policy = FolioPolicy();  // dynamic
  FOLIO_ASSIGN_OR_RETURN(s->cache, PageCache::Create(o));
  for (int i = 0; i <= kAgingFiles; ++i) {
    const uint64_t bytes = i < kAgingFiles ? AgingFileBytes(c) : kProbeFileBytes;
    s->paths.push_back(FilePath(dir, i));
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> d, FreshFile(s->paths.back(), bytes));
    AddressSpaceOptions ao;
    ao.name = i < kAgingFiles ? fmt::format("aging-{}", i) : "probe";
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<AddressSpace> as, s->cache->Open(d.get(), ao));
    s->devices.push_back(std::move(d));
    s->spaces.push_back(std::move(as));
  }
  return Status::OK();
}

// The probe: sequential 1 MiB reads of kProbeReadBytes, then 2 MiB writes of
// kProbeWriteBytes, from `base` in the probe file.
Status Probe(AddressSpace* probe, uint64_t base, std::vector<char>* buf) {
  buf->resize(kMaxFolioBytes);
  for (uint64_t p = 0; p < kProbeReadBytes; p += kMiBytes) {
    FOLIO_RETURN_IF_ERROR(probe->Read(base + p, std::span<char>(buf->data(), kMiBytes)).status());
  }
  for (uint64_t p = 0; p < kProbeWriteBytes; p += kMaxFolioBytes) {
    FOLIO_RETURN_IF_ERROR(
        probe->Write(base + kProbeReadBytes + p, std::span<const char>(*buf)).status());
  }
  return Status::OK();
}

// One aging operation on a random file.
class Ager {
 public:
  Ager(Setup* s, uint64_t file_bytes, uint64_t seed)
      : s_(s), file_bytes_(file_bytes), rng_(seed), buf_(kMaxIoBytes) {
    for (size_t i = 0; i < buf_.size(); i += 8) buf_[i] = static_cast<char>(rng_());
  }

  Status Op() {
    AddressSpace* as = s_->spaces[Rand(kAgingFiles)].get();
    const uint64_t r = Rand(1000);
    if (r < 300) return Write(as, RandomPos(), Small());
    if (r < 600) return Read(as, RandomPos(), Small());
    if (r < 770) return Sequential(as, /*write=*/false, (256 << 10) + Rand(kMaxIoBytes - (256 << 10)));
    if (r < 870) return Sequential(as, /*write=*/true, (64 << 10) * (1 + Rand(32)));
    if (r < 920) return Truncate(as);
    if (r < 990) return as->Invalidate(RandomPos() & ~((64 << 10) - 1), kMiBytes);
    return as->Fsync();
  }

 private:
  uint64_t Rand(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  uint64_t Small() { return kPageBytes * (1 + Rand(4)); }
  uint64_t RandomPos() {
    uint64_t pos = Rand(file_bytes_ - kMaxIoBytes);
    return Rand(4) == 0 ? pos : pos & ~(kPageBytes - 1);
  }
  Status Write(AddressSpace* as, uint64_t pos, uint64_t len) {
    return as->Write(pos, std::span<const char>(buf_.data() + Rand(kPageBytes), len)).status();
  }
  Status Read(AddressSpace* as, uint64_t pos, uint64_t len) {
    return as->Read(pos, std::span<char>(buf_.data(), len)).status();
  }
  Status Sequential(AddressSpace* as, bool write, uint64_t len) {
    const uint64_t chunk = 64 << 10;
    uint64_t pos = RandomPos() & ~(chunk - 1);
    len = std::min(len, file_bytes_ - pos) & ~(chunk - 1);
    for (uint64_t p = 0; p < len; p += chunk) {
      FOLIO_RETURN_IF_ERROR(write ? Write(as, pos + p, chunk) : Read(as, pos + p, chunk));
    }
    return Status::OK();
  }
  // Shrinks by up to 4 MiB (dropping and splitting the folios past the new end); grows back to
  // the whole file once it lost 16 MiB (the growth reads as zeros, written by writeback).
  Status Truncate(AddressSpace* as) {
    const uint64_t size = as->size();
    if (size + (16 << 20) < file_bytes_) return as->Truncate(file_bytes_);
    return as->Truncate(size - Rand(std::min<uint64_t>(size / 2, 4 << 20)));
  }

  Setup* const s_;
  const uint64_t file_bytes_;
  std::mt19937_64 rng_;
  std::vector<char> buf_;
};

uint64_t Requests(const PageCacheStats& s, int min_order) {
  uint64_t n = 0;
  for (int o = min_order; o < kNumOrders; ++o) n += s.orders[o].requests;
  return n;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string Percent(double share) { return fmt::format("{:.1f}%", 100 * share); }

}  // namespace

double ServedShare(const PageCacheStats& phase, int min_order) {
  uint64_t requests = 0, fallbacks = 0;
  for (int o = std::max(min_order, 1); o < kNumOrders; ++o) {
    requests += phase.orders[o].requests;
    fallbacks += phase.orders[o].fallbacks;
  }
  return requests == 0 ? 1.0 : 1.0 - static_cast<double>(fallbacks) / static_cast<double>(requests);
}

std::string AgingMode::Name() const {
  std::string name(CompactionModeName(compaction));
  if (compaction != CompactionMode::kOff && !background) name += "-direct";
  return name;
}

Result<AgingRun> RunAgingOnce(const AgingConfig& config, const std::string& dir_path,
                              const AgingMode& mode, int round, const std::atomic<bool>* stop) {
  AgingRun run;
  run.mode = mode;
  run.round = round;
  Setup s;
  FOLIO_RETURN_IF_ERROR(Open(config, dir_path, mode, &s));
  const uint64_t file_bytes = AgingFileBytes(config);
  std::vector<char> buf(1 << 20);
  // Fill: every aging file read once, sequentially.
  for (int i = 0; i < kAgingFiles; ++i) {
    for (uint64_t p = 0; p < file_bytes && !stop->load(); p += buf.size()) {
      FOLIO_RETURN_IF_ERROR(s.spaces[i]->Read(p, buf).status());
    }
  }
  AddressSpace* probe = s.spaces[kAgingFiles].get();
  PageCacheStats t0 = s.cache->Stats();
  FOLIO_RETURN_IF_ERROR(Probe(probe, 0, &buf));
  PageCacheStats t1 = s.cache->Stats();
  const PageCacheStats before = DiffCacheStats(t1, t0);
  run.before_share = ServedShare(before, 1);
  run.before_share_2m = ServedShare(before, kMaxOrder);
  run.before_requests = Requests(before, 1);

  const uint64_t reads0 = s.DeviceReadBytes();
  ProgressOptions po;
  po.mode = config.json ? ProgressMode::kOff : ProgressMode::kAuto;
  po.unit = ProgressUnit::kSeconds;
  const uint64_t total_ms = static_cast<uint64_t>(config.seconds * 1000);
  ProgressReporter progress(fmt::format("aging {} round {}/{}", mode.Name(),
                                        round + 1, config.rounds),
                            total_ms, po);
  Ager ager(&s, file_bytes, config.seed + static_cast<uint64_t>(round));
  const uint64_t start = MonotonicNowNs();
  uint64_t now = start;
  while (now - start < total_ms * 1000000 && !stop->load()) {
    FOLIO_RETURN_IF_ERROR(ager.Op());
    ++run.aging_ops;
    if (run.aging_ops % 64 == 0) {
      now = MonotonicNowNs();
      progress.Update((now - start) / 1000000);
      progress.SetDetail(fmt::format("{} ops", FormatCount(run.aging_ops)));
    }
  }
  progress.Finish();
  run.aging_s = static_cast<double>(MonotonicNowNs() - start) / 1e9;
  PageCacheStats t2 = s.cache->Stats();
  FOLIO_RETURN_IF_ERROR(Probe(probe, kProbeReadBytes + kProbeWriteBytes, &buf));
  PageCacheStats t3 = s.cache->Stats();
  const PageCacheStats after = DiffCacheStats(t3, t2);
  run.after_share = ServedShare(after, 1);
  run.after_share_2m = ServedShare(after, kMaxOrder);
  run.after_requests = Requests(after, 1);
  run.aged = DiffCacheStats(t3, t1);
  run.device_read_bytes = s.DeviceReadBytes() - reads0;
  for (auto& as : s.spaces) (void)as->WriteBack();
  return run;
}

namespace {

Json RunJson(const AgingRun& r) {
  const PageCacheStats& a = r.aged;
  return Json{{"round", r.round},
              {"before_share", r.before_share},
              {"after_share", r.after_share},
              {"before_share_2m", r.before_share_2m},
              {"after_share_2m", r.after_share_2m},
              {"before_requests", r.before_requests},
              {"after_requests", r.after_requests},
              {"aging_ops", r.aging_ops},
              {"aging_s", r.aging_s},
              {"aging_ops_per_s", static_cast<double>(r.aging_ops) / r.aging_s},
              {"device_read_bytes", r.device_read_bytes},
              {"compact_attempts", a.compact_attempts},
              {"compact_successes", a.compact_successes},
              {"compact_background_blocks", a.compact_background_blocks},
              {"compact_background_reclaimed_bytes", a.compact_background_reclaimed_bytes},
              {"compact_blocks_scanned", a.compact_blocks_scanned},
              {"compact_migrated_bytes", a.compact_migrated_bytes},
              {"compact_evicted_bytes", a.compact_evicted_bytes},
              {"evictions", a.evictions}};
}

struct ModeSummary {
  AgingMode mode;
  std::vector<const AgingRun*> runs;
  double Med(double AgingRun::*field) const {
    std::vector<double> v;
    for (const AgingRun* r : runs) v.push_back(r->*field);
    return Median(v);
  }
  double MedOpsPerS() const {
    std::vector<double> v;
    for (const AgingRun* r : runs) v.push_back(static_cast<double>(r->aging_ops) / r->aging_s);
    return Median(v);
  }
  double MedCounter(uint64_t PageCacheStats::*field) const {
    std::vector<double> v;
    for (const AgingRun* r : runs) v.push_back(static_cast<double>(r->aged.*field));
    return Median(v);
  }
  double MedReads() const {
    std::vector<double> v;
    for (const AgingRun* r : runs) v.push_back(static_cast<double>(r->device_read_bytes));
    return Median(v);
  }
};

void PrintTable(const AgingConfig& c, const std::vector<ModeSummary>& modes) {
  std::printf("aging: cache %s, %d files of %s + a probe file, %d round(s) of %.1f s per mode, "
              "seed %llu\n",
              FormatSize(c.cache_bytes).c_str(), kAgingFiles, FormatSize(AgingFileBytes(c)).c_str(),
              c.rounds, c.seconds, static_cast<unsigned long long>(c.seed));
  std::printf("large-folio requests (order >= 1) served at the order asked for; medians of the "
              "rounds\n");
  std::printf("%-14s %8s %8s %9s %9s %8s %10s %10s %10s %10s %10s\n", "mode", "before",
              "after", "2M before", "2M after", "direct", "background", "moved", "evicted",
              "re-read", "aging op/s");
  for (const ModeSummary& m : modes) {
    std::printf("%-14s %8s %8s %9s %9s %8s %10s %10s %10s %10s %10s\n", m.mode.Name().c_str(),
                Percent(m.Med(&AgingRun::before_share)).c_str(),
                Percent(m.Med(&AgingRun::after_share)).c_str(),
                Percent(m.Med(&AgingRun::before_share_2m)).c_str(),
                Percent(m.Med(&AgingRun::after_share_2m)).c_str(),
                FormatCount(static_cast<uint64_t>(m.MedCounter(&PageCacheStats::compact_successes))).c_str(),
                FormatCount(static_cast<uint64_t>(m.MedCounter(&PageCacheStats::compact_background_blocks))).c_str(),
                FormatSize(static_cast<uint64_t>(m.MedCounter(&PageCacheStats::compact_migrated_bytes))).c_str(),
                FormatSize(static_cast<uint64_t>(m.MedCounter(&PageCacheStats::compact_evicted_bytes))).c_str(),
                FormatSize(static_cast<uint64_t>(m.MedReads())).c_str(),
                FormatCount(static_cast<uint64_t>(m.MedOpsPerS())).c_str());
  }
  std::printf("direct: blocks the requests compacted for themselves (aging + after probe); "
              "background: blocks the background compactor built ahead of them; moved / evicted: "
              "bytes both migrated / dropped; re-read: device reads during aging and the after "
              "probe. Modes without -direct run the background compactor (the default). "
              "The machine is shared: absolute rates are noisy, compare the rows.\n");
}

}  // namespace

int RunAging(const AgingConfig& config) {
  StopSignal stop;
  Result<std::unique_ptr<BenchDir>> dir = BenchDir::Create(config.dir);
  if (!dir.ok()) {
    std::fprintf(stderr, "folio bench: %s\n", std::string(dir.status().message()).c_str());
    return 1;
  }
  std::vector<AgingRun> runs;
  Status failed;
  for (int round = 0; round < config.rounds && failed.ok() && !stop.stopped(); ++round) {
    for (const AgingMode& mode : config.modes) {
      Result<AgingRun> r = RunAgingOnce(config, (*dir)->path(), mode, round, stop.flag());
      if (!r.ok()) {
        failed = r.status();
        break;
      }
      runs.push_back(*r);
      if (stop.stopped()) break;
    }
  }
  if (!failed.ok()) {
    std::fprintf(stderr, "folio bench --aging: %s\n", std::string(failed.message()).c_str());
    return 1;
  }
  if (stop.stopped()) {
    std::fprintf(stderr, "folio bench --aging: interrupted\n");
    return 130;
  }
  std::vector<ModeSummary> modes;
  for (const AgingMode& m : config.modes) {
    ModeSummary s{m, {}};
    for (const AgingRun& r : runs) {
      if (r.mode == m) s.runs.push_back(&r);
    }
    modes.push_back(s);
  }
  if (!config.json) {
    PrintTable(config, modes);
    return 0;
  }
  Json j;
  j["cache_bytes"] = config.cache_bytes;
  j["aging_files"] = kAgingFiles;
  j["aging_file_bytes"] = AgingFileBytes(config);
  j["seconds_per_round"] = config.seconds;
  j["rounds"] = config.rounds;
  j["seed"] = config.seed;
  Json jm = Json::array();
  for (const ModeSummary& m : modes) {
    Json runs_j = Json::array();
    for (const AgingRun* r : m.runs) runs_j.push_back(RunJson(*r));
    jm.push_back(Json{{"mode", m.mode.Name()},
                      {"before_share", m.Med(&AgingRun::before_share)},
                      {"after_share", m.Med(&AgingRun::after_share)},
                      {"before_share_2m", m.Med(&AgingRun::before_share_2m)},
                      {"after_share_2m", m.Med(&AgingRun::after_share_2m)},
                      {"aging_ops_per_s", m.MedOpsPerS()},
                      {"runs", runs_j}});
  }
  j["modes"] = jm;
  std::printf("%s\n", Json{{"aging", j}}.dump(2).c_str());
  return 0;
}

}  // namespace folio::bench
