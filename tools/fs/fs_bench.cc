// `folio fs bench`: sets up the three targets in one temp directory, runs every phase on each
// side by side (fs_bench_phases.cc), and prints the report (fs_bench_report.cc).
#include "fs/fs_bench.h"

#include <linux/magic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "base/clock.h"
#include "base/progress.h"
#include "base/units.h"
#include "bench/datafile.h"
#include "bench/memcg.h"
#include "cli/cli_util.h"
#include "fs/fs_bench_mounts.h"
#include "fs/fs_bench_phases.h"

#ifndef FOLIO_BENCH_SCRIPT_DIR
#define FOLIO_BENCH_SCRIPT_DIR ""
#endif

namespace folio::cli {

namespace {

// Whether the phase group `name` runs (FsBenchConfig::phases).
bool Selected(const FsBenchConfig& c, const std::string& name) {
  if (c.phases.empty()) return true;
  for (const std::string& p : c.phases) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

constexpr char kPrefix[] = "folio fs bench";
constexpr int kExitInterrupted = 130;

// How long each metadata op may run on one target.
double MetadataDeadlineSeconds(const FsBenchConfig& c) { return std::max(1.0, 2 * c.runtime_s); }

// The temp directory: removed with everything in it when the bench ends. Declared before the
// mounts so they are gone first.
class WorkDir {
 public:
  static Result<std::unique_ptr<WorkDir>> Create(const std::string& parent) {
    std::string tmpl = parent + "/folio-fs-bench.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return Status::FromErrno(errno, "--dir " + parent);
    return std::unique_ptr<WorkDir>(new WorkDir(tmpl));
  }
  ~WorkDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit WorkDir(std::string path) : path_(std::move(path)) {}
  const std::string path_;
};

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  in >> a >> b >> c;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", a, b, c);
  return buf;
}

std::string FsTypeName(const std::string& path) {
  struct statfs s;
  if (statfs(path.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case EXT4_SUPER_MAGIC: return "ext4";
    case TMPFS_MAGIC: return "tmpfs";
    case XFS_SUPER_MAGIC: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    default: return "a file system of type 0x" + fmt::format("{:x}", s.f_type);
  }
}

struct Target {
  std::string name;
  std::string root;    // where its metadata and small-file phases work
  std::string data;    // directory of its data files
};

class FsBench {
 public:
  FsBench(const FsBenchConfig& c, const bench::StopSignal& stop) : c_(c), stop_(stop) {}
  int Run();

 private:
  Status Setup();
  Status FillData();
  Status RunIo(const IoPhase& phase);
  Status RunMetadata(uint32_t threads);
  Status RunSmall(int rep);
  // The row of a phase, added when missing. The reference is valid until the next call that
  // adds a row (report_.phases is a vector).
  FsPhaseResult& Phase(const std::string& name, const std::string& group,
                       const std::string& unit, uint32_t threads);
  int Fail(const Status& s) {
    if (stop_.stopped() || s.code() == StatusCode::kAgain) {
      PrintError(kPrefix, "interrupted; everything unmounted and the temp directory removed");
      return kExitInterrupted;
    }
    return ExitWithStatus(kPrefix, s);
  }
  void Say(const std::string& line) {
    if (c_.json) return;
    std::printf("%s: %s\n", kPrefix, line.c_str());
    std::fflush(stdout);
  }
  // A step done: one plain line on stderr when stderr is not a terminal (a log, a pipe, `make
  // run` under a CI; a terminal has the live progress line instead), with the time since the
  // start. Also under --json: stdout stays the JSON alone.
  void Done(const std::string& what) {
    if (!plain_progress_) return;
    std::fprintf(stderr, "%s: [%s] %s\n", kPrefix,
                 FormatElapsed((MonotonicNowNs() - start_ns_) / 1000000).c_str(), what.c_str());
    std::fflush(stderr);
  }
  Status UnmountAll();

  const FsBenchConfig& c_;
  const bench::StopSignal& stop_;
  const bool plain_progress_ = isatty(STDERR_FILENO) == 0;
  const uint64_t start_ns_ = MonotonicNowNs();
  PhaseEnv env_;
  FsBenchReport report_;
  std::unique_ptr<WorkDir> work_;  // destroyed last (members are destroyed bottom-up)
  std::unique_ptr<bench::MemoryCgroup> memcg_;
  std::vector<Target> targets_;
  std::string store_dir_;          // the dir: store's directory ("" for --store dev:)
  std::string nopack_store_dir_;
  std::unique_ptr<BenchMount> folio_, pll_, nopack_;
};

FsPhaseResult& FsBench::Phase(const std::string& name, const std::string& group,
                              const std::string& unit, uint32_t threads) {
  for (FsPhaseResult& p : report_.phases) {
    if (p.name == name) return p;
  }
  FsPhaseResult p;
  p.name = name;
  p.group = group;
  p.unit = unit;
  p.threads = threads;
  report_.phases.push_back(p);
  return report_.phases.back();
}

// passthrough_ll holds a descriptor for every inode the kernel knows (O_PATH) and for every
// open file, and inherits this process's limit: a run needs about the larger of --small-files
// and --md-files of them (each phase's files are gone before the next one's). When each run's
// small files stayed, `--repeat 2` failed in its second run under a limit of 20000 ("close:
// Bad file descriptor": its flush is close(dup(fd)), and dup hit EMFILE). The soft limit goes
// up to the hard one, and the hard one up to fs.nr_open when that is too low (setrlimit refuses
// without CAP_SYS_RESOURCE); a limit still too low is one line before anything starts.
Status RaiseFdLimit(uint64_t need) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return Status::FromErrno(errno, "getrlimit");
  if (lim.rlim_cur >= need) return Status::OK();
  rlimit want = lim;
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need) {
    uint64_t nr_open = 0;
    std::ifstream in("/proc/sys/fs/nr_open");
    if (in >> nr_open && nr_open > lim.rlim_max) want.rlim_max = std::min<uint64_t>(nr_open, need);
  }
  want.rlim_cur = want.rlim_max == RLIM_INFINITY ? need : std::min<uint64_t>(want.rlim_max, need);
  if (::setrlimit(RLIMIT_NOFILE, &want) != 0) want = lim;
  if (want.rlim_cur >= need) return Status::OK();
  return Status::FromErrno(
      EMFILE, fmt::format("passthrough_ll needs about {} open files (the larger of "
                          "--small-files and --md-files, plus 1024) and the limit is {}: raise it "
                          "(ulimit -n) or lower --small-files / --md-files",
                          need, static_cast<uint64_t>(want.rlim_cur)));
}

Status FsBench::Setup() {
  const std::string w = work_->path();
  // The metadata phases remove their entries before the next phase, and passthrough_ll's
  // small files go after each run (RunSmall): one set of either at a time.
  const bool md = Selected(c_, "md-1t") || Selected(c_, "md-4t");
  FOLIO_RETURN_IF_ERROR(RaiseFdLimit(
      std::max(md ? c_.md_files : 0u, Selected(c_, "smallfiles") ? c_.small_files : 0u) + 1024));
  std::string pll = c_.passthrough_ll;
  if (pll.empty()) {
    const std::string script = std::string(FOLIO_BENCH_SCRIPT_DIR) + "/build-passthrough-ll.sh";
    if (access(script.c_str(), X_OK) != 0) {
      return Status::NotSupported(script + ": not found (a folio binary outside its source "
                                           "tree); give --passthrough-ll PATH");
    }
    pll = w + "/passthrough_ll";
    Say("building libfuse's passthrough_ll: " + script + " " + pll);
    FOLIO_RETURN_IF_ERROR(RunChild({script, pll}, w + "/build.log"));
  }
  Result<std::unique_ptr<bench::MemoryCgroup>> cg = bench::MemoryCgroup::Create(c_.cache_bytes);
  if (cg.ok()) {
    memcg_ = std::move(cg).value();
    report_.fairness.push_back(
        "equal memory: the reader (this process) runs every I/O phase in memory cgroup " +
        memcg_->path() + " (" + memcg_->LimitName() + " " + FormatSize(c_.cache_bytes) +
        "), so the kernel page cache of ext4's files and of both FUSE mounts' files is capped "
        "at --cache; passthrough_ll's server runs in the same cgroup, so the page cache of its "
        "backing files shares that limit");
  } else {
    env_.unlimited_why = std::string(cg.status().message());
    report_.fairness.push_back("NOT equal memory: the kernel page cache is not capped (" +
                               env_.unlimited_why + "): the 2x-cache rows read from memory on "
                               "ext4 and passthrough_ll");
  }
  report_.fairness.push_back(
      "Folio FS has its own page cache (--cache " + FormatSize(c_.cache_bytes) +
      ") below the kernel's page cache of the mount (FOPEN_KEEP_CACHE), and a dir: store's "
      "block files are read (puts write them with O_DIRECT) through the machine's page cache "
      "in the mount process, outside the "
      "cgroup (its cache arena would be charged there and cannot be reclaimed without swap): "
      "Folio has more memory than the others, so the 2x-cache rows are not an equal-memory "
      "comparison");
  report_.fairness.push_back(
      "both FUSE targets use the kernel page cache with their defaults (passthrough_ll "
      "cache=auto, 1 s timeouts; Folio keep_cache, 1 s timeouts); files are re-read right "
      "before every cached run (pre_read): the machine's proactive reclaim evicts cold pages");
  report_.fairness.push_back(
      "NOT the same folios: a cached read on either FUSE mount is served from the kernel's page "
      "cache of the FUSE file, which the kernel may hold in 4 KiB folios only (6.18 does), "
      "while ext4 holds a file read in large requests in folios of up to 2 MiB; the cached-read "
      "rows say which folios each file was in and add ext4 with its file in 4 KiB folios "
      "(ext4-4k-folios: pre-read without readahead), the like-for-like figure");
  report_.fairness.push_back(
      "small files and metadata: no fsync on any target (ext4 and passthrough_ll keep the data "
      "in the kernel's page cache; the kernel sends no syncfs to a FUSE server); Folio is "
      "mounted with -o meta_sync=fsync, ext4's durability contract (metadata durable at "
      "fsync and every 5 s; the default meta_sync=each fsyncs SQLite's WAL per operation), "
      "and commits a closed file's data to the store (a durable put) in the background after "
      "the close, which the small-file writes do not wait for (smallfiles-committed does)");
  report_.fairness.push_back(
      "each metadata op stops after " + fmt::format("{}", MetadataDeadlineSeconds(c_)) +
      " s (2 x --runtime, at least 1 s): a slow target covers fewer entries");
  const std::string fstype = FsTypeName(w);
  if (fstype != "ext4") {
    report_.fairness.push_back("the 'ext4' target is " + fstype + " (the file system of --dir "
                               + c_.dir + "), not ext4");
  }
  env_.stop = stop_.flag();
  env_.progress = c_.json ? ProgressMode::kOff : ProgressMode::kAuto;
  env_.memcg = memcg_.get();
  env_.cache_bytes = c_.cache_bytes;

  const std::string ext4 = w + "/ext4";
  std::filesystem::create_directories(ext4);
  store_dir_ = c_.store.empty() ? w + "/store" : "";
  const std::string storage = c_.store.empty() ? "dir:" + store_dir_ : c_.store;
  FOLIO_ASSIGN_OR_RETURN(folio_, BenchMount::Folio(c_.folio_binary, w, "folio", storage,
                                                   /*packing=*/true, c_.cache_bytes,
                                                   c_.readahead_bytes));
  Say("$ " + folio_->command());
  FOLIO_ASSIGN_OR_RETURN(pll_, BenchMount::Passthrough(pll, ext4, w + "/mnt-pll",
                                                       w + "/pll.log", memcg_.get()));
  Say("$ " + pll_->command());
  targets_ = {{kTargetFolio, folio_->path() + "/work", folio_->path()},
              {kTargetExt4, ext4 + "/work-ext4", ext4},
              {kTargetPll, pll_->path() + "/work-pll", pll_->path()}};
  for (const Target& t : targets_) {
    if (::mkdir(t.root.c_str(), 0755) != 0) return Status::FromErrno(errno, t.root);
  }
  return Status::OK();
}

// The data files: one set on Folio, one on ext4 (passthrough_ll reads ext4's).
Status FsBench::FillData() {
  const ProgressMode pm = env_.progress;
  for (const std::string& dir : {folio_->path(), targets_[1].data}) {
    FOLIO_RETURN_IF_ERROR(bench::FillFile(dir + "/cached.img", 0, FsBenchCachedFileBytes(c_),
                                          stop_.flag(), pm));
    FOLIO_RETURN_IF_ERROR(bench::FillFile(dir + "/large.img", 0, FsBenchLargeFileBytes(c_),
                                          stop_.flag(), pm));
  }
  if (stop_.stopped()) return Status::Again("interrupted");
  Done("data files written: " + FormatSize(FsBenchCachedFileBytes(c_)) + " and " +
       FormatSize(FsBenchLargeFileBytes(c_)) + " on folio and on ext4");
  return Status::OK();
}

Status FsBench::RunIo(const IoPhase& phase) {
  FsPhaseResult& p = Phase(phase.name, phase.mib_per_s ? "large-files" : "io",
                           phase.mib_per_s ? "MiB/s" : "IOPS", phase.job.numjobs);
  if (phase.name.starts_with("seqread")) {
    const std::string n = "seqread-1m reads the 2x-cache file cold for the kernel (its pages "
                          "dropped first); Folio's own cache may still hold part of it";
    if (p.notes.empty()) p.notes.push_back(n);
  }
  // The cached reads also run on ext4 with its file in 4 KiB folios (kTargetExt4SmallFolios).
  const bool cached_reads = phase.name.starts_with("randread-4k-cached");
  std::vector<std::pair<std::string, std::string>> runs;  // (target, file)
  for (const Target& t : targets_) {
    const std::string file = t.data + (phase.large_file ? "/large.img" : "/cached.img");
    runs.emplace_back(t.name, file);
    if (cached_reads && t.name == kTargetExt4) runs.emplace_back(kTargetExt4SmallFolios, file);
  }
  for (const auto& [name, file] : runs) {
    std::vector<std::string> notes;
    const bool small_folios = name == kTargetExt4SmallFolios;
    FOLIO_ASSIGN_OR_RETURN(IoPhaseRun r, RunIoPhase(phase, file, env_, name + " " + phase.name,
                                                    &notes, small_folios));
    p.runs[name].push_back(r.value);
    if (cached_reads && r.kernel_folios) p.kernel_folios[name] = *r.kernel_folios;
    if (cached_reads && !r.kernel_folios_error.empty() && p.notes.empty()) {
      p.notes.push_back("the kernel's folio sizes are not known: " + r.kernel_folios_error);
    }
    Done(name + " " + phase.name + ": " + FormatFsBenchValue(r.value) + " " + p.unit +
         (r.kernel_folios ? "; kernel page cache: " + r.kernel_folios->Summary() : ""));
  }
  return Status::OK();
}

Status FsBench::RunMetadata(uint32_t threads) {
  const std::string ts = "-" + std::to_string(threads) + "t";
  for (const Target& t : targets_) {
    FOLIO_ASSIGN_OR_RETURN(auto ops, RunMetadataPhases(t.root, threads, c_.md_files,
                                                       MetadataDeadlineSeconds(c_), env_,
                                                       t.name + " md" + ts));
    std::string line = t.name + " md" + ts + ":";
    const char* sep = " ";
    for (const auto& [op, v] : ops) {
      line += sep + op + " " + FormatFsBenchValue(v);
      sep = ", ";
      FsPhaseResult& p = Phase("md-" + op + ts, "metadata", "ops/s", threads);
      if (op == "readdir" && p.notes.empty()) {
        p.notes.push_back("md-readdir: every thread lists the whole directory of " +
                          std::to_string(c_.md_files) + " entries; ops/s are entries listed");
      }
      p.runs[t.name].push_back(v);
    }
    Done(line + " ops/s");
  }
  return Status::OK();
}

// Waits until the Folio mount at `mountpoint` has committed every closed file (`.stats`
// files.unsettled is 0), at most timeout_s seconds; Again naming what is left otherwise.
Status WaitSettled(const std::string& mountpoint, int timeout_s) {
  const uint64_t deadline = MonotonicNowNs() + static_cast<uint64_t>(timeout_s) * 1000000000;
  uint64_t left = 0;
  for (;;) {
    std::ifstream in(mountpoint + "/.stats");
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("files")) {
      return Status::IOError(mountpoint + "/.stats: not the JSON of a Folio mount");
    }
    left = j["files"].value("unsettled", uint64_t{0});
    if (left == 0) return Status::OK();
    if (MonotonicNowNs() > deadline) break;
    ::usleep(50000);
  }
  return Status::Again(fmt::format("{}: {} closed files still not committed after {} s; the "
                                   "objects were counted then",
                                   mountpoint, left, timeout_s));
}

Status FsBench::RunSmall(int rep) {
  const std::string w = work_->path();
  if (nopack_ == nullptr) {
    // Always a dir: store (a dev: store given with --store holds the packing volume).
    nopack_store_dir_ = w + "/store-nopack";
    FOLIO_ASSIGN_OR_RETURN(nopack_, BenchMount::Folio(c_.folio_binary, w, "folio-nopack",
                                                      "dir:" + nopack_store_dir_,
                                                      /*packing=*/false, c_.cache_bytes,
                                                      c_.readahead_bytes));
    Say("$ " + nopack_->command());
    const std::string root = nopack_->path() + "/work";
    if (::mkdir(root.c_str(), 0755) != 0) return Status::FromErrno(errno, root);
  }
  std::vector<Target> runs = targets_;
  runs.push_back({"folio-nopack", nopack_->path() + "/work", nopack_->path()});
  const std::string sub = "/sf" + std::to_string(rep);
  for (const Target& t : runs) {
    const std::string root = t.root + sub;
    if (::mkdir(root.c_str(), 0755) != 0) return Status::FromErrno(errno, root);
    const bool nopack = t.name == "folio-nopack";
    const std::string store = nopack ? nopack_store_dir_ : t.name == kTargetFolio ? store_dir_ : "";
    const uint64_t before = store.empty() ? 0 : CountStoreObjects(store);
    // On Folio, the fsync of .stats after the writes commits every file to the store (timed:
    // what packing changes is the work of that commit, done in the background otherwise).
    const std::string sync_file =
        store.empty() ? "" : (nopack ? *nopack_ : *folio_).path() + "/.stats";
    FOLIO_ASSIGN_OR_RETURN(SmallFilesResult r, RunSmallFiles(root, c_.small_files, env_,
                                                             t.name + " small files", sync_file));
    const std::string target = nopack ? kTargetFolio : t.name;
    const std::string suffix = nopack ? "-nopack" : "";
    // Folio's objects are counted once the closed files are in the store (their settle runs
    // in the background after the close; counted at once, a loaded machine showed 6 of 200
    // unpacked files stored). Not timed.
    std::string settled_note;
    if (!store.empty()) {
      const BenchMount& m = nopack ? *nopack_ : *folio_;
      Status settled = WaitSettled(m.path(), 120);
      if (!settled.ok()) settled_note = std::string(settled.message());
    }
    // Both rows exist before a reference to either is taken: Phase grows report_.phases, which
    // moves the rows (a reference to the write row taken first dangled when the small-file
    // phases ran alone and the read row was added).
    (void)Phase("smallfiles-write" + suffix, "small-files", "files/s", 4);
    if (!store.empty()) (void)Phase("smallfiles-committed" + suffix, "small-files", "files/s", 4);
    FsPhaseResult& rp = Phase("smallfiles-read" + suffix, "small-files", "files/s", 4);
    FsPhaseResult& wp = Phase("smallfiles-write" + suffix, "small-files", "files/s", 4);
    wp.runs[target].push_back(r.write_files_per_s);
    rp.runs[target].push_back(r.read_files_per_s);
    if (!store.empty()) {
      FsPhaseResult& cp = Phase("smallfiles-committed" + suffix, "small-files", "files/s", 4);
      cp.runs[target].push_back(r.committed_files_per_s);
      if (cp.notes.empty()) {
        cp.notes.push_back("smallfiles-committed: Folio only, the writes and then `sync .stats` "
                           "on the mount, which commits every file to the store; files / (write "
                           "+ sync seconds)");
      }
    }
    if (t.name == kTargetExt4 || t.name == kTargetPll) {
      wp.objects[target] = c_.small_files;  // a file is an inode: one object each
    } else if (!store.empty()) {
      wp.objects[target] = CountStoreObjects(store) - before;
      if (!settled_note.empty()) wp.notes.push_back(settled_note);
    }
    Done(t.name + " small files: write " + FormatFsBenchValue(r.write_files_per_s) + ", read " +
         FormatFsBenchValue(r.read_files_per_s) + " files/s");
    if (nopack && wp.notes.empty()) {
      wp.notes.push_back("smallfiles-*-nopack: Folio only, a second volume formatted with "
                         "--pack-below 0 (ext4 and passthrough_ll have no packing)");
    }
    if (t.name == kTargetPll) {
      // Not timed. passthrough_ll holds a descriptor per inode the kernel knows: its files go
      // (the kernel forgets them), so --repeat N needs no more descriptors than one run.
      std::error_code ec;
      std::filesystem::remove_all(root, ec);
      if (ec) return Status::FromErrno(ec.value(), root + ": remove");
    }
  }
  return Status::OK();
}

Status FsBench::UnmountAll() {
  Status s = Status::OK();
  for (std::unique_ptr<BenchMount>* m : {&nopack_, &pll_, &folio_}) {
    if (*m == nullptr) continue;
    Status u = (*m)->Unmount();
    if (s.ok() && !u.ok()) s = u.WithContext("unmount " + (*m)->path());
  }
  return s;
}

int FsBench::Run() {
  report_.load = LoadAverage();
  report_.command = "folio fs bench" + std::string(c_.quick ? " --quick" : "") +
                    " --cache " + FormatSize(c_.cache_bytes) + " --runtime " +
                    fmt::format("{}", c_.runtime_s) + " --md-files " +
                    std::to_string(c_.md_files) + " --small-files " +
                    std::to_string(c_.small_files) +
                    (c_.repeat > 1 ? " --repeat " + std::to_string(c_.repeat) : "") +
                    (c_.store.empty() ? "" : " --store " + c_.store) +
                    (c_.phases.empty() ? "" : " --phases " + fmt::format("{}", fmt::join(c_.phases, ",")));
  Result<std::unique_ptr<WorkDir>> w = WorkDir::Create(c_.dir);
  if (!w.ok()) return ExitWithStatus(kPrefix, w.status());
  work_ = std::move(w).value();
  Say("temp directory " + work_->path() + ", cache " + FormatSize(c_.cache_bytes) +
      ", load average " + report_.load);
  std::vector<IoPhase> io;
  for (IoPhase& p : IoPhases(c_.runtime_s, FsBenchCachedFileBytes(c_), FsBenchLargeFileBytes(c_))) {
    if (Selected(c_, p.name)) io.push_back(std::move(p));
  }
  Status s = Setup();
  if (s.ok()) {
    Done("folio and passthrough_ll mounted");
    if (!io.empty()) s = FillData();
  }
  for (int rep = 0; rep < c_.repeat && s.ok(); ++rep) {
    if (c_.repeat > 1) Done(fmt::format("run {} of {}", rep + 1, c_.repeat));
    for (size_t i = 0; i < io.size() && s.ok(); ++i) s = RunIo(io[i]);
    for (uint32_t threads : {1u, 4u}) {
      if (s.ok() && Selected(c_, fmt::format("md-{}t", threads))) s = RunMetadata(threads);
    }
    if (s.ok() && Selected(c_, "smallfiles")) s = RunSmall(rep);
  }
  Status u = UnmountAll();
  if (!s.ok()) return Fail(s);
  if (!u.ok()) return Fail(u);
  Done("unmounted (Folio's mounts commit what their closed files still held)");
  if (c_.json) {
    std::fputs(FsBenchJson(report_, c_).c_str(), stdout);
  } else {
    std::fputs(FormatFsBenchTable(report_, c_).c_str(), stdout);
  }
  if (std::fflush(stdout) != 0) return RuntimeError(kPrefix, "stdout: write failed");
  if (!c_.plot_path.empty()) {
    std::ofstream out(c_.plot_path, std::ios::trunc);
    out << FsBenchPlotSvg(report_);
    out.close();
    if (!out) return RuntimeError(kPrefix, c_.plot_path + ": " + std::strerror(errno));
    Say("plot written to " + c_.plot_path);
  }
  work_.reset();  // here rather than at destruction, so its time shows
  Done("temp directory removed");
  return kExitOk;
}

}  // namespace

bool FsBenchPhaseKnown(const std::string& prefix) {
  std::vector<std::string> groups = {"md-1t", "md-4t", "smallfiles"};
  for (const IoPhase& p : IoPhases(1, 1 << 20, 1 << 20)) groups.push_back(p.name);
  for (const std::string& g : groups) {
    if (g.starts_with(prefix)) return true;
  }
  return false;
}

std::vector<std::string> FsBenchPllPhases() {
  std::vector<std::string> names;
  for (const IoPhase& p : IoPhases(1, 1 << 20, 1 << 20)) names.push_back(p.name);
  for (const char* t : {"1t", "4t"}) {
    for (const char* op : kMetadataOps) names.push_back(fmt::format("md-{}-{}", op, t));
  }
  names.push_back("smallfiles-write");  // RunSmall: the -nopack rows are Folio's alone
  names.push_back("smallfiles-read");
  return names;
}

uint64_t FsBenchCachedFileBytes(const FsBenchConfig& c) { return c.cache_bytes / 2; }
uint64_t FsBenchLargeFileBytes(const FsBenchConfig& c) { return c.cache_bytes * 2; }

uint64_t FsBenchNeededBytes(const FsBenchConfig& c) {
  const uint64_t data = FsBenchCachedFileBytes(c) + FsBenchLargeFileBytes(c);
  // Two copies (Folio's store, ext4), the small files on four targets per repeat, slack.
  return 2 * data + 4ull * c.small_files * (33 << 10) * c.repeat + (256ull << 20);
}

int RunFsBench(const FsBenchConfig& c) {
  bench::StopSignal stop;
  FsBench b(c, stop);
  return b.Run();
}

}  // namespace folio::cli
