// `folio fs bench --meta`: see fs_bench_engines.h.
#include "fs/fs_bench_engines.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>

#include "base/clock.h"
#include "base/cpu_placement.h"
#include "base/progress.h"
#include "base/units.h"
#include "bench/datafile.h"
#include "cli/cli_util.h"
#include "cli/device_spec.h"
#include "folio/page_cache.h"
#include "fs/file_system.h"
#include "fs/format.h"
#include "fs/store/rados_store.h"
#include "fs/store/store_url.h"
#include "meta/meta_engine.h"
#include "meta/scratch.h"

namespace folio::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kEnginePrefix[] = "folio fs bench";
constexpr int kEngineExitInterrupted = 130;
constexpr double kOpDeadlineS = 10;
constexpr uint32_t kReaddirEntries = 1000;
constexpr uint64_t kMiB = 1ull << 20;

// The per-op rows, in the order shown.
constexpr const char* kOps[] = {"mkdir",  "create",  "rename",       "unlink",
                                "lookup", "getattr", "slice-commit", "readdir-1k"};

// JuiceFS's published per-op figures in microseconds (its metadata engines benchmark, as the
// issue quotes them: Redis with appendfsync=always, PostgreSQL; their hardware).
struct JuiceFsFigure {
  const char* engine;
  const char* op;
  double us;
};
constexpr JuiceFsFigure kJuiceFs[] = {
    {"redis", "create", 570},         {"redis", "getattr", 87},
    {"redis", "slice-commit", 553},   {"redis", "readdir-1k", 1490},
    {"postgres", "create", 844},      {"postgres", "getattr", 350},
    {"postgres", "slice-commit", 1183}, {"postgres", "readdir-1k", 18414},
};

double JuiceFsUs(const std::string& engine, const std::string& op) {
  for (const JuiceFsFigure& f : kJuiceFs) {
    if (engine == f.engine && op == f.op) return f.us;
  }
  return 0;
}

std::string EngineOf(const std::string& meta) {
  if (meta.starts_with("redis://")) return "redis";
  if (meta.starts_with("postgres://") || meta.starts_with("postgresql://")) return "postgres";
  return meta;
}

std::string StoreLabel(const std::string& store) {
  return store.starts_with("rados:") ? "rados" : store;
}

struct OpFigures {
  uint64_t calls = 0;
  double mean_us = 0, median_us = 0, p99_us = 0, ops_s = 0;
};

OpFigures FiguresOf(std::vector<double> us) {
  OpFigures f;
  f.calls = us.size();
  if (us.empty()) return f;
  double sum = 0;
  for (double v : us) sum += v;
  std::sort(us.begin(), us.end());
  f.mean_us = sum / static_cast<double>(us.size());
  f.median_us = us[us.size() / 2];
  f.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  f.ops_s = sum > 0 ? 1e6 * static_cast<double>(us.size()) / sum : 0;
  return f;
}

struct ComboResult {
  std::string meta;   // engine: sqlite, redis, postgres
  std::string store;  // dir, rados
  std::map<std::string, OpFigures> ops;
  double small_files_s = 0;
  double seq_write_mib_s = 0, seq_read_mib_s = 0;
  // CPU time (user + system) of this whole process per GiB of the sequential write (fsync
  // included) and read: the client's cost, librados's threads included.
  double seq_write_cpu_s_per_gib = 0, seq_read_cpu_s_per_gib = 0;
  std::vector<std::string> notes;  // what the engine said when it opened (durability warnings)
};

// `rados bench` on a pool with 1 MiB objects (Folio's writes) and with objects of the volume's
// block size (Folio's puts and gets), when they differ. The targets use the higher figure of
// each direction: the store's ceiling for what Folio does, whichever object size reaches it.
struct RadosCeiling {
  struct Run {
    uint64_t object_bytes = 0;
    double write_mib_s = 0, seq_mib_s = 0;
    double write_cpu_s_per_gib = 0, seq_cpu_s_per_gib = 0;  // the `rados` command's
  };
  std::string pool;
  std::vector<Run> runs;
  double write_mib_s = 0, seq_mib_s = 0;  // the highest of the runs
  std::string error;
};

// The first error of several steps that all run (cleanup goes on after a failure).
void Keep(Status* s, Status more) {
  if (s->ok() && !more.ok()) *s = std::move(more);
}

double Micros(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Where the client and the OSDs on this machine may run. A client sharing the OSD's CPUs
// takes CPU from it: its throughput against `rados bench` then depends on its CPU per byte as
// well as on its I/O (docs/fs.md, "RADOS: the OSD on CPUs of its own").
struct CpuPlacement {
  std::vector<int> client;          // this process's (and its `rados bench` children's)
  std::vector<ProcessCpus> osds;    // ceph-osd processes on this machine
  bool Shared() const {
    for (const ProcessCpus& o : osds) {
      if (CpusOverlap(client, o.cpus)) return true;
    }
    return false;
  }
};

CpuPlacement PlacementNow() {
  CpuPlacement p;
  Result<std::vector<int>> mine = AllowedCpus();
  if (mine.ok()) p.client = std::move(*mine);
  p.osds = ProcessesNamed("ceph-osd");
  return p;
}

// One volume on one engine and store, mounted in this process.
class Volume {
 public:
  Volume(std::string meta_url, std::string store_url, std::string name, uint64_t cache_bytes,
         uint64_t block_bytes, uint64_t readahead_bytes)
      : meta_url_(std::move(meta_url)),
        store_url_(std::move(store_url)),
        name_(std::move(name)),
        cache_bytes_(cache_bytes),
        block_bytes_(block_bytes),
        readahead_bytes_(readahead_bytes) {}
  ~Volume() { (void)Close(); }

  Status Create(std::vector<std::string>* notes) {
    meta::MetaOpenOptions mo;
    mo.log = [notes](std::string_view line) { notes->push_back(std::string(line)); };
    FOLIO_ASSIGN_OR_RETURN(meta_, meta::OpenMetaEngine(meta_url_, mo));
    FOLIO_RETURN_IF_ERROR(store::FormatBlockStore(store_url_, name_, store::FormatOptions{},
                                                  DeviceOpener(DeviceOpenOptions{})));
    formatted_store_ = true;
    fs::FormatOptions fo;
    fo.name = name_;
    fo.store_url = store_url_;
    fo.block_bytes = block_bytes_;
    fo.pack_below_bytes = std::min(fo.pack_below_bytes, block_bytes_ / 2);  // 64K blocks
    FOLIO_RETURN_IF_ERROR(fs::FormatVolume(meta_.get(), fo).status());
    store::StoreOptions so;
    so.prefix = name_;
    FOLIO_ASSIGN_OR_RETURN(store_, store::OpenBlockStore(store_url_, so,
                                                         DeviceOpener(DeviceOpenOptions{})));
    return Mount();
  }
  // A fresh page cache: what is read next comes from the store.
  Status Remount() {
    FOLIO_RETURN_IF_ERROR(Unmount());
    return Mount();
  }
  // Unmounts and removes every object the volume stored.
  Status Close() {
    Status s = Unmount();
    if (store_ != nullptr) {
      for (store::ObjectKind kind : {store::ObjectKind::kBlock, store::ObjectKind::kPack}) {
        Result<std::vector<store::ObjectInfo>> objects = store_->List(kind);
        if (!objects.ok()) {
          Keep(&s, objects.status());
          continue;
        }
        for (const store::ObjectInfo& o : *objects) {
          Status d = store_->Delete(o.key);
          if (!d.ok() && d.code() != StatusCode::kNotFound) Keep(&s, d);
        }
      }
      store_->Close();
      store_.reset();
    }
    if (formatted_store_ && store_url_.starts_with("rados:")) {
      Result<store::RadosUrl> u = store::ParseRadosUrl(store_url_);
      std::string out;
      if (u.ok() && store::RunRadosCommand(*u, "rm " + name_ + "/store.json", &out) != 0) {
        Keep(&s, Status::IOError("rados rm " + name_ + "/store.json: " + OneLine(out)));
      }
    }
    formatted_store_ = false;
    meta_.reset();
    return s;
  }

  fs::FileSystem* fs() const { return fs_.get(); }
  meta::MetaEngine* meta() const { return meta_.get(); }

 private:
  Status Mount() {
    PageCacheOptions po;
    po.memory_bytes = cache_bytes_;
    FOLIO_ASSIGN_OR_RETURN(cache_, PageCache::Create(po));
    fs::FsOptions fo;
    // The engines' figures: every lookup and getattr goes to the engine, as in JuiceFS's
    // pkg/meta benchmarks (a mount's record cache would answer them from memory).
    fo.meta_cache = false;
    fo.readahead_bytes = readahead_bytes_;
    FOLIO_ASSIGN_OR_RETURN(fs_, fs::FileSystem::Mount(meta_.get(), store_.get(), cache_.get(), fo));
    return Status::OK();
  }
  Status Unmount() {
    Status s;
    if (fs_ != nullptr) s = fs_->Unmount();
    fs_.reset();
    cache_.reset();
    return s;
  }

  const std::string meta_url_, store_url_, name_;
  const uint64_t cache_bytes_;
  const uint64_t block_bytes_;
  const uint64_t readahead_bytes_;
  std::unique_ptr<meta::MetaEngine> meta_;
  std::unique_ptr<store::BlockStore> store_;
  std::unique_ptr<PageCache> cache_;
  std::unique_ptr<fs::FileSystem> fs_;
  bool formatted_store_ = false;
};

// Sum and count of an engine transaction's latency so far.
std::pair<uint64_t, uint64_t> TxnTotals(meta::MetaEngine* m, std::string_view op) {
  for (const meta::MetaOpStats& s : m->Stats().ops) {
    if (s.op == op) return {s.latency_ns.sum, s.latency_ns.count};
  }
  return {0, 0};
}

class EngineBench {
 public:
  EngineBench(const FsEngineBenchConfig& c, const bench::StopSignal& stop) : c_(c), stop_(stop) {}
  int Run();

 private:
  Status RunCombo(const std::string& meta, const std::string& store, int index);
  Status MetadataOps(fs::FileSystem* f, meta::MetaEngine* m, ComboResult* r);
  Status SmallFiles(fs::FileSystem* f, ComboResult* r);
  Status Sequential(Volume* v, ComboResult* r);
  void RadosCeilings();
  // Times `op` (called with i = 0, 1, ...) up to c_.ops times or kOpDeadlineS; `untimed`
  // (may be null) runs before each call, outside the time.
  Status Time(const std::string& name, const std::function<Status(uint32_t)>& op,
              const std::function<Status(uint32_t)>& untimed, std::vector<double>* us);
  Status Stopped() const {
    return stop_.stopped() ? Status::Again("interrupted") : Status::OK();
  }
  void Done(const std::string& what) {
    if (c_.json) return;
    std::fprintf(stderr, "%s: [%s] %s\n", kEnginePrefix,
                 FormatElapsed((MonotonicNowNs() - start_ns_) / 1000000).c_str(), what.c_str());
  }
  std::string Text() const;
  std::string JsonText() const;
  std::string PlacementLine() const;
  // The window a file reads ahead: --readahead as the page cache clamps it.
  uint64_t ReadaheadWindow() const {
    return EffectiveReadaheadBytes(c_.readahead_bytes, c_.cache_bytes);
  }

  const FsEngineBenchConfig& c_;
  const bench::StopSignal& stop_;
  const uint64_t start_ns_ = MonotonicNowNs();
  std::string work_;
  std::string label_;  // the combination running, for the progress line
  std::vector<ComboResult> results_;
  std::vector<RadosCeiling> rados_;
  CpuPlacement placement_;  // taken with the `rados bench` runs
};

Status EngineBench::Time(const std::string& name, const std::function<Status(uint32_t)>& op,
                         const std::function<Status(uint32_t)>& untimed, std::vector<double>* us) {
  ProgressOptions po;
  po.mode = c_.json ? ProgressMode::kOff : ProgressMode::kAuto;
  ProgressReporter progress(label_ + " " + name, c_.ops, po);
  const uint64_t deadline = MonotonicNowNs() + static_cast<uint64_t>(kOpDeadlineS * 1e9);
  for (uint32_t i = 0; i < c_.ops && MonotonicNowNs() < deadline; ++i) {
    FOLIO_RETURN_IF_ERROR(Stopped());
    if (untimed) FOLIO_RETURN_IF_ERROR(untimed(i).WithContext(name));
    const uint64_t t0 = MonotonicNowNs();
    FOLIO_RETURN_IF_ERROR(op(i).WithContext(name));
    us->push_back(Micros(MonotonicNowNs() - t0));
    progress.Update(i + 1);
  }
  progress.Finish();
  return Status::OK();
}

Status EngineBench::MetadataOps(fs::FileSystem* f, meta::MetaEngine* m, ComboResult* r) {
  const fs::Cred root = fs::Cred::Root();
  auto dir = [&](const std::string& name) -> Result<fs::InodeId> {
    FOLIO_ASSIGN_OR_RETURN(fs::Attr a, f->Mkdir(root, fs::kRootInode, name, 0755));
    return a.ino();
  };
  auto create = [&](fs::InodeId parent, const std::string& name) -> Result<fs::InodeId> {
    FOLIO_ASSIGN_OR_RETURN(fs::FileSystem::Opened o,
                           f->Create(root, parent, name, 0644, O_RDWR | O_CREAT | O_EXCL));
    FOLIO_RETURN_IF_ERROR(f->Release(o.fh));
    return o.attr.ino();
  };
  std::vector<double> us;
  auto record = [&](const std::string& op) {
    r->ops[op] = FiguresOf(us);
    us.clear();
  };
  {
    FOLIO_ASSIGN_OR_RETURN(fs::InodeId d, dir("mkdir"));
    FOLIO_RETURN_IF_ERROR(Time("mkdir", [&](uint32_t i) {
      return f->Mkdir(root, d, "d" + std::to_string(i), 0755).status();
    }, nullptr, &us));
    record("mkdir");
  }
  {
    // JuiceFS's Create makes and opens the file; the handle's release is not timed.
    FOLIO_ASSIGN_OR_RETURN(fs::InodeId d, dir("create"));
    std::vector<uint64_t> handles;
    FOLIO_RETURN_IF_ERROR(Time("create", [&](uint32_t i) -> Status {
      FOLIO_ASSIGN_OR_RETURN(fs::FileSystem::Opened o,
                             f->Create(root, d, "f" + std::to_string(i), 0644,
                                       O_RDWR | O_CREAT | O_EXCL));
      handles.push_back(o.fh);
      return Status::OK();
    }, nullptr, &us));
    for (uint64_t fh : handles) FOLIO_RETURN_IF_ERROR(f->Release(fh));
    record("create");
  }
  {
    FOLIO_ASSIGN_OR_RETURN(fs::InodeId d, dir("rename"));
    FOLIO_RETURN_IF_ERROR(create(d, "f0").status());
    FOLIO_RETURN_IF_ERROR(Time("rename", [&](uint32_t i) {
      return f->Rename(root, d, "f" + std::to_string(i), d, "f" + std::to_string(i + 1), 0);
    }, nullptr, &us));
    record("rename");
  }
  {
    FOLIO_ASSIGN_OR_RETURN(fs::InodeId d, dir("unlink"));
    FOLIO_RETURN_IF_ERROR(Time("unlink", [&](uint32_t) { return f->Unlink(root, d, "file"); },
                               [&](uint32_t) { return create(d, "file").status(); }, &us));
    record("unlink");
  }
  FOLIO_ASSIGN_OR_RETURN(fs::InodeId attrs_dir, dir("attrs"));
  FOLIO_ASSIGN_OR_RETURN(fs::InodeId file, create(attrs_dir, "file"));
  FOLIO_RETURN_IF_ERROR(Time("lookup", [&](uint32_t) {
    return f->Lookup(root, attrs_dir, "file").status();
  }, nullptr, &us));
  record("lookup");
  FOLIO_RETURN_IF_ERROR(Time("getattr", [&](uint32_t) { return f->GetAttr(file).status(); },
                             nullptr, &us));
  record("getattr");
  {
    // Each fsync commits one 4 KiB slice: the engine's "write" transaction (its latency is
    // the figure; the op's wall time also holds the block's put to the store).
    FOLIO_ASSIGN_OR_RETURN(fs::FileSystem::Opened o,
                           f->Create(root, attrs_dir, "slices", 0644, O_RDWR | O_CREAT | O_EXCL));
    const std::string page(4096, 'x');
    const auto [sum0, count0] = TxnTotals(m, "write");
    std::vector<double> wall;
    Status s = Time("slice-commit", [&](uint32_t i) -> Status {
      FOLIO_RETURN_IF_ERROR(f->Write(o.fh, uint64_t{i} * page.size(), page).status());
      return f->Fsync(o.fh, false);
    }, nullptr, &wall);
    Status closed = f->Release(o.fh);
    FOLIO_RETURN_IF_ERROR(s);
    FOLIO_RETURN_IF_ERROR(closed);
    const auto [sum1, count1] = TxnTotals(m, "write");
    OpFigures fig = FiguresOf(wall);
    if (count1 > count0) {
      fig.mean_us = Micros(sum1 - sum0) / static_cast<double>(count1 - count0);
      fig.ops_s = fig.mean_us > 0 ? 1e6 / fig.mean_us : 0;
    }
    r->ops["slice-commit"] = fig;
  }
  {
    FOLIO_ASSIGN_OR_RETURN(fs::InodeId d, dir("readdir"));
    for (uint32_t i = 0; i < kReaddirEntries; ++i) {
      FOLIO_RETURN_IF_ERROR(Stopped());
      FOLIO_RETURN_IF_ERROR(create(d, "f" + std::to_string(i)).status());
    }
    FOLIO_RETURN_IF_ERROR(Time("readdir-1k", [&](uint32_t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(uint64_t dh, f->OpenDir(root, d));
      size_t seen = 0;
      uint64_t offset = 0;
      Status s;
      for (;;) {
        Result<std::vector<fs::DirEntryOut>> page = f->ReadDir(dh, offset, 4096, true);
        if (!page.ok()) {
          s = page.status();
          break;
        }
        if (page->empty()) break;
        seen += page->size();
        offset = page->back().offset;
      }
      Keep(&s, f->ReleaseDir(dh));
      if (s.ok() && seen != kReaddirEntries + 2) {
        s = Status::Corruption(fmt::format("readdir listed {} entries, want {}", seen,
                                         kReaddirEntries + 2));
      }
      return s;
    }, nullptr, &us));
    record("readdir-1k");
  }
  return Status::OK();
}

Status EngineBench::SmallFiles(fs::FileSystem* f, ComboResult* r) {
  FOLIO_ASSIGN_OR_RETURN(fs::Attr d, f->Mkdir(fs::Cred::Root(), fs::kRootInode, "small", 0755));
  std::mt19937_64 rng(42);
  std::string data(64 << 10, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + rng() % 26);
  ProgressOptions po;
  po.mode = c_.json ? ProgressMode::kOff : ProgressMode::kAuto;
  ProgressReporter progress(label_ + " small files", c_.small_files, po);
  const uint64_t t0 = MonotonicNowNs();
  for (uint32_t i = 0; i < c_.small_files; ++i) {
    FOLIO_RETURN_IF_ERROR(Stopped());
    const size_t len = 1024 + rng() % (data.size() - 1024 + 1);
    FOLIO_ASSIGN_OR_RETURN(fs::FileSystem::Opened o,
                           f->Create(fs::Cred::Root(), d.ino(), "s" + std::to_string(i), 0644,
                                     O_RDWR | O_CREAT | O_EXCL));
    Status s = f->Write(o.fh, 0, std::string_view(data).substr(0, len)).status();
    Keep(&s, f->Release(o.fh));
    FOLIO_RETURN_IF_ERROR(s.WithContext("small file " + std::to_string(i)));
    progress.Update(i + 1);
  }
  FOLIO_RETURN_IF_ERROR(f->SyncAll());
  progress.Finish();
  const double s = static_cast<double>(MonotonicNowNs() - t0) / 1e9;
  r->small_files_s = s > 0 ? c_.small_files / s : 0;
  return Status::OK();
}

Status EngineBench::Sequential(Volume* v, ComboResult* r) {
  const fs::Cred root = fs::Cred::Root();
  const std::string chunk(kMiB, 's');
  const uint64_t n = std::max<uint64_t>(1, c_.seq_bytes / kMiB);
  ProgressOptions po;
  po.mode = c_.json ? ProgressMode::kOff : ProgressMode::kAuto;
  po.unit = ProgressUnit::kBytes;
  fs::InodeId ino{0};
  {
    ProgressReporter progress(label_ + " 1 MiB sequential write", n * kMiB, po);
    FOLIO_ASSIGN_OR_RETURN(fs::FileSystem::Opened o,
                           v->fs()->Create(root, fs::kRootInode, "seq", 0644,
                                           O_RDWR | O_CREAT | O_EXCL));
    ino = o.attr.ino();
    const uint64_t t0 = MonotonicNowNs();
    const double cpu0 = RusageCpuS(CpuOf::kProcess);
    Status s;
    for (uint64_t i = 0; i < n && s.ok(); ++i) {
      s = Stopped();
      if (s.ok()) s = v->fs()->Write(o.fh, i * kMiB, chunk).status();
      progress.Update((i + 1) * kMiB);
    }
    if (s.ok()) s = v->fs()->Fsync(o.fh, false);
    const double secs = static_cast<double>(MonotonicNowNs() - t0) / 1e9;
    r->seq_write_cpu_s_per_gib =
        (RusageCpuS(CpuOf::kProcess) - cpu0) * 1024.0 / static_cast<double>(n);
    Keep(&s, v->fs()->Release(o.fh));
    FOLIO_RETURN_IF_ERROR(s.WithContext("sequential write"));
    r->seq_write_mib_s = static_cast<double>(n) / secs;
  }
  FOLIO_RETURN_IF_ERROR(v->Remount());
  {
    ProgressReporter progress(label_ + " 1 MiB sequential read", n * kMiB, po);
    FOLIO_ASSIGN_OR_RETURN(fs::FileSystem::Opened o, v->fs()->Open(root, ino, O_RDONLY));
    std::vector<char> buf(kMiB);
    const uint64_t t0 = MonotonicNowNs();
    const double cpu0 = RusageCpuS(CpuOf::kProcess);
    Status s;
    for (uint64_t i = 0; i < n && s.ok(); ++i) {
      s = Stopped();
      if (!s.ok()) break;
      Result<size_t> got = v->fs()->Read(o.fh, i * kMiB, buf);
      if (!got.ok()) {
        s = got.status();
      } else if (*got != kMiB || std::memcmp(buf.data(), chunk.data(), kMiB) != 0) {
        s = Status::Corruption(fmt::format("sequential read of MiB {}: not what was written", i));
      }
      progress.Update((i + 1) * kMiB);
    }
    const double secs = static_cast<double>(MonotonicNowNs() - t0) / 1e9;
    r->seq_read_cpu_s_per_gib =
        (RusageCpuS(CpuOf::kProcess) - cpu0) * 1024.0 / static_cast<double>(n);
    Keep(&s, v->fs()->Release(o.fh));
    FOLIO_RETURN_IF_ERROR(s.WithContext("sequential read"));
    r->seq_read_mib_s = static_cast<double>(n) / secs;
  }
  return Status::OK();
}

Status EngineBench::RunCombo(const std::string& meta, const std::string& store, int index) {
  ComboResult r;
  r.meta = EngineOf(meta);
  r.store = StoreLabel(store);
  label_ = r.meta + "+" + r.store;
  const std::string name = fmt::format("folio_bench_{}_{}", ::getpid(), index);
  FOLIO_ASSIGN_OR_RETURN(std::string meta_url, meta::CreateScratchNamespace(meta, name, work_));
  const std::string store_url =
      store == "dir" ? "dir:" + work_ + "/store-" + std::to_string(index) : store;
  Status s;
  {
    Volume v(meta_url, store_url, fmt::format("fbench-{}-{}", ::getpid(), index), c_.cache_bytes,
             c_.block_bytes, c_.readahead_bytes);
    s = v.Create(&r.notes);
    if (s.ok()) s = MetadataOps(v.fs(), v.meta(), &r);
    if (s.ok()) s = SmallFiles(v.fs(), &r);
    if (s.ok()) s = Sequential(&v, &r);
    Keep(&s, v.Close());
  }
  Keep(&s, meta::DropScratchNamespace(meta_url));
  FOLIO_RETURN_IF_ERROR(s.WithContext(label_));
  Done(fmt::format("{}: create {:.0f} us, getattr {:.0f} us, slice commit {:.0f} us, "
                   "{:.0f} small files/s, sequential {:.0f} / {:.0f} MiB/s",
                   label_, r.ops["create"].mean_us, r.ops["getattr"].mean_us,
                   r.ops["slice-commit"].mean_us, r.small_files_s, r.seq_write_mib_s,
                   r.seq_read_mib_s));
  results_.push_back(std::move(r));
  return Status::OK();
}

void EngineBench::RadosCeilings() {
  for (const std::string& store : c_.stores) {
    if (!store.starts_with("rados:")) continue;
    if (rados_.empty()) placement_ = PlacementNow();  // once, and only with a rados: store
    Result<store::RadosUrl> u = store::ParseRadosUrl(store);
    if (!u.ok()) continue;  // checked before the run
    RadosCeiling rc;
    rc.pool = u->pool;
    std::vector<uint64_t> sizes{kMiB};
    if (c_.block_bytes != kMiB) sizes.push_back(c_.block_bytes);
    for (uint64_t size : sizes) {
      const std::string run = fmt::format("fbench-{}-{}", ::getpid(), size);
      const uint64_t objects = std::max<uint64_t>(1, c_.seq_bytes / size);
      Done(fmt::format("rados bench write, then seq, {} objects, at most {} s each, pool {}",
                       FormatSize(size), c_.rados_seconds, u->pool));
      Result<store::RadosBenchRun> w =
          store::RunRadosBench(*u, "write", c_.rados_seconds, 16, objects, run, size);
      Result<store::RadosBenchRun> q =
          w.ok() ? store::RunRadosBench(*u, "seq", c_.rados_seconds, 16, objects, run, size) : w;
      std::string out;
      store::RunRadosCommand(*u, "cleanup --run-name " + run, &out);
      if (!q.ok()) {
        rc.error = std::string(q.status().message());
        break;
      }
      rc.runs.push_back({size, w->mib_s, q->mib_s, w->CpuSPerGiB(), q->CpuSPerGiB()});
      rc.write_mib_s = std::max(rc.write_mib_s, w->mib_s);
      rc.seq_mib_s = std::max(rc.seq_mib_s, q->mib_s);
    }
    rados_.push_back(rc);
  }
}

std::string Cell(const OpFigures& f) {
  if (f.calls == 0) return "-";
  return fmt::format("{:.0f} ({:.0f}/{:.0f})", f.mean_us, f.median_us, f.p99_us);
}

std::string EngineBench::Text() const {
  std::string t;
  t += fmt::format(
      "Per-op metadata latency through Folio FS's core (in-process, no FUSE), one thread, up "
      "to {} calls each: mean us (median / p99)\n", c_.ops);
  t += fmt::format("{:<14}", "op");
  for (const ComboResult& r : results_) t += fmt::format("{:>22}", r.meta + "+" + r.store);
  t += fmt::format("{:>16}{:>18}\n", "JuiceFS redis", "JuiceFS postgres");
  for (const char* op : kOps) {
    t += fmt::format("{:<14}", op);
    for (const ComboResult& r : results_) {
      auto it = r.ops.find(op);
      t += fmt::format("{:>22}", it == r.ops.end() ? "-" : Cell(it->second));
    }
    const double jr = JuiceFsUs("redis", op), jp = JuiceFsUs("postgres", op);
    t += fmt::format("{:>16}{:>18}\n", jr > 0 ? fmt::format("{:.0f}", jr) : "-",
                     jp > 0 ? fmt::format("{:.0f}", jp) : "-");
  }
  t += fmt::format("{:<14}", "ops/s create");
  for (const ComboResult& r : results_) {
    auto it = r.ops.find("create");
    t += fmt::format("{:>22.0f}", it == r.ops.end() ? 0.0 : it->second.ops_s);
  }
  t += "\n";
  t += fmt::format("{:<14}", "small files/s");
  for (const ComboResult& r : results_) t += fmt::format("{:>22.0f}", r.small_files_s);
  t += "\n" + fmt::format("{:<14}", "seq write/s");
  for (const ComboResult& r : results_) t += fmt::format("{:>22.1f}", r.seq_write_mib_s);
  t += "\n" + fmt::format("{:<14}", "seq read/s");
  for (const ComboResult& r : results_) t += fmt::format("{:>22.1f}", r.seq_read_mib_s);
  t += "\n" + fmt::format("{:<14}", "write CPU/GiB");
  for (const ComboResult& r : results_) t += fmt::format("{:>22.2f}", r.seq_write_cpu_s_per_gib);
  t += "\n" + fmt::format("{:<14}", "read CPU/GiB");
  for (const ComboResult& r : results_) t += fmt::format("{:>22.2f}", r.seq_read_cpu_s_per_gib);
  t += "\n";
  t += fmt::format(
      "seq write/s, seq read/s: MiB/s; write / read CPU/GiB: CPU seconds (user + system) of "
      "this whole process per GiB of them (librados's threads included). slice-commit: the "
      "engine's \"write\" transaction (mean); median / p99 are of the whole "
      "4 KiB write + fsync, the block's put included. JuiceFS's figures: its metadata engines "
      "benchmark (Redis appendfsync=always, PostgreSQL 15; AWS c5, its own hardware): a "
      "reference, not a same-run ratio. Small files: {} of 1-64 KiB, create + write + close, "
      "then one SyncAll; sequential: {} in 1 MiB writes + fsync, read back after a remount. "
      "Volumes formatted with {} blocks; a {} page cache, readahead windows of {}{}.\n",
      c_.small_files, FormatSize(c_.seq_bytes), FormatSize(c_.block_bytes),
      FormatSize(c_.cache_bytes), FormatSize(ReadaheadWindow()),
      ReadaheadWindow() < c_.readahead_bytes
          ? fmt::format(" (--readahead {}, at most an eighth of the cache)",
                        FormatSize(c_.readahead_bytes))
          : std::string());
  for (const RadosCeiling& rc : rados_) {
    if (!rc.error.empty()) {
      t += "rados bench on pool " + rc.pool + ": " + rc.error + "\n";
      continue;
    }
    for (const RadosCeiling::Run& run : rc.runs) {
      t += fmt::format("rados bench on pool {} ({} objects, 16 in flight, {} each as Folio, at "
                       "most {} s each): write {:.1f} MiB/s, seq {:.1f} MiB/s; CPU/GiB of the "
                       "command: write {:.2f} s, seq {:.2f} s\n",
                       rc.pool, FormatSize(run.object_bytes), FormatSize(c_.seq_bytes),
                       c_.rados_seconds, run.write_mib_s, run.seq_mib_s,
                       run.write_cpu_s_per_gib, run.seq_cpu_s_per_gib);
    }
    if (rc.runs.size() > 1) {
      t += fmt::format("the targets use the higher of each: write {:.1f} MiB/s, seq {:.1f} MiB/s\n",
                       rc.write_mib_s, rc.seq_mib_s);
    }
  }
  if (!rados_.empty()) t += PlacementLine();
  // The targets.
  for (const ComboResult& r : results_) {
    for (const char* op : kOps) {
      const double ref = JuiceFsUs(r.meta, op);
      auto it = r.ops.find(op);
      if (ref == 0 || it == r.ops.end()) continue;
      t += fmt::format("target {}+{} {} below JuiceFS's {:.0f} us: {} ({:.0f} us)\n", r.meta,
                       r.store, op, ref, it->second.mean_us < ref ? "met" : "NOT met",
                       it->second.mean_us);
    }
    if (r.store == "rados") {
      for (const RadosCeiling& rc : rados_) {
        if (!rc.error.empty() || rc.write_mib_s <= 0 || rc.seq_mib_s <= 0) continue;
        const double w = r.seq_write_mib_s / rc.write_mib_s, q = r.seq_read_mib_s / rc.seq_mib_s;
        t += fmt::format("target {}+rados sequential >= 0.8x rados bench: write {:.2f}x {}, "
                         "read {:.2f}x {}{}\n", r.meta, w, w >= 0.8 ? "met" : "NOT met", q,
                         q >= 0.8 ? "met" : "NOT met",
                         placement_.osds.empty() ? ""
                         : placement_.Shared()   ? " (the OSD shares the client's CPUs)"
                                                 : " (the OSD on CPUs apart from the client's)");
      }
    }
    for (const std::string& n : r.notes) t += r.meta + ": " + n + "\n";
  }
  return t;
}

std::string EngineBench::PlacementLine() const {
  std::string t = fmt::format("CPUs: this bench and its `rados bench` on {}; ",
                              FormatCpuList(placement_.client));
  if (placement_.osds.empty()) return t + "no ceph-osd on this machine\n";
  t += "ceph-osd on this machine:";
  for (const ProcessCpus& o : placement_.osds) {
    t += fmt::format(" pid {} on {}", o.pid, FormatCpuList(o.cpus));
  }
  if (!placement_.Shared()) return t + ", apart from the bench's\n";
  return t + ": shared with the bench, whose CPU per GiB (above) then slows the OSD as well; "
             "`CEPH_CPUS=1 scripts/services/ceph-up.sh DIR` and `taskset -c 0 folio fs bench "
             "...` keep them apart (docs/fs.md, \"RADOS: the OSD on CPUs of its own\")\n";
}

std::string EngineBench::JsonText() const {
  Json j;
  j["ops_per_op"] = c_.ops;
  j["small_files"] = c_.small_files;
  j["seq_bytes"] = c_.seq_bytes;
  j["block_bytes"] = c_.block_bytes;
  j["cache_bytes"] = c_.cache_bytes;
  j["readahead_bytes"] = c_.readahead_bytes;
  j["readahead_window_bytes"] = ReadaheadWindow();
  Json combos = Json::array();
  for (const ComboResult& r : results_) {
    Json cj;
    cj["meta"] = r.meta;
    cj["store"] = r.store;
    Json ops = Json::object();
    for (const auto& [op, f] : r.ops) {
      Json o;
      o["calls"] = f.calls;
      o["mean_us"] = f.mean_us;
      o["median_us"] = f.median_us;
      o["p99_us"] = f.p99_us;
      o["ops_per_s"] = f.ops_s;
      const double ref = JuiceFsUs(r.meta, op);
      if (ref > 0) o["juicefs_us"] = ref;
      ops[op] = o;
    }
    cj["ops"] = ops;
    cj["small_files_per_s"] = r.small_files_s;
    cj["seq_write_mib_s"] = r.seq_write_mib_s;
    cj["seq_read_mib_s"] = r.seq_read_mib_s;
    cj["seq_write_cpu_s_per_gib"] = r.seq_write_cpu_s_per_gib;
    cj["seq_read_cpu_s_per_gib"] = r.seq_read_cpu_s_per_gib;
    cj["notes"] = r.notes;
    combos.push_back(cj);
  }
  j["combinations"] = combos;
  Json rados = Json::array();
  for (const RadosCeiling& rc : rados_) {
    Json o;
    o["pool"] = rc.pool;
    o["seconds"] = c_.rados_seconds;
    o["write_mib_s"] = rc.write_mib_s;  // the highest of the runs: the targets' ceiling
    o["seq_mib_s"] = rc.seq_mib_s;
    Json runs = Json::array();
    for (const RadosCeiling::Run& run : rc.runs) {
      Json r;
      r["object_bytes"] = run.object_bytes;
      r["write_mib_s"] = run.write_mib_s;
      r["seq_mib_s"] = run.seq_mib_s;
      r["write_cpu_s_per_gib"] = run.write_cpu_s_per_gib;
      r["seq_cpu_s_per_gib"] = run.seq_cpu_s_per_gib;
      runs.push_back(r);
    }
    o["runs"] = runs;
    if (!rc.error.empty()) o["error"] = rc.error;
    rados.push_back(o);
  }
  j["rados_bench"] = rados;
  if (!rados_.empty()) {
    Json p;
    p["client_cpus"] = FormatCpuList(placement_.client);
    Json osds = Json::array();
    for (const ProcessCpus& o : placement_.osds) {
      osds.push_back(Json{{"pid", o.pid}, {"cpus", FormatCpuList(o.cpus)}});
    }
    p["local_osds"] = osds;
    p["osd_shares_client_cpus"] = placement_.Shared();
    j["cpu_placement"] = p;
  }
  return j.dump(2) + "\n";
}

int EngineBench::Run() {
  std::vector<std::string> stores = c_.stores.empty() ? std::vector<std::string>{"dir"} : c_.stores;
  for (const std::string& s : stores) {
    if (s == "dir") continue;
    if (!s.starts_with("rados:")) {
      return UsageError(kEnginePrefix, "--store " + s + ": with --meta, use dir or rados:POOL?conf=PATH");
    }
    Result<store::RadosUrl> u = store::ParseRadosUrl(s);
    if (!u.ok()) return UsageError(kEnginePrefix, StatusLine(u.status()));
  }
  std::string tmpl = c_.dir + "/folio-fs-bench.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    return ExitWithStatus(kEnginePrefix, Status::FromErrno(errno, "--dir " + c_.dir));
  }
  work_ = tmpl;
  Status s;
  int index = 0;
  for (const std::string& meta : c_.metas) {
    for (const std::string& store : stores) {
      s = RunCombo(meta, store, index++);
      if (!s.ok()) break;
    }
    if (!s.ok()) break;
  }
  if (s.ok() && !stop_.stopped()) RadosCeilings();
  std::error_code ec;
  std::filesystem::remove_all(work_, ec);
  if (stop_.stopped() || s.code() == StatusCode::kAgain) {
    PrintError(kEnginePrefix, "interrupted; everything the bench stored was removed");
    return kEngineExitInterrupted;
  }
  if (!s.ok()) return ExitWithStatus(kEnginePrefix, s);
  std::fputs(c_.json ? JsonText().c_str() : Text().c_str(), stdout);
  return 0;
}

}  // namespace

int RunFsEngineBench(const FsEngineBenchConfig& c) {
  bench::StopSignal stop;
  EngineBench b(c, stop);
  return b.Run();
}

}  // namespace folio::cli
