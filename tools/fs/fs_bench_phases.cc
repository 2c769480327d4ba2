#include "fs/fs_bench_phases.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <latch>
#include <thread>

#include "base/check.h"
#include "base/clock.h"
#include "bench/engine.h"
#include "bench/offsets.h"
#include "bench/runner.h"

namespace folio::cli {

namespace {

constexpr uint32_t kSmallFileThreads = 4;
constexpr uint64_t kSmallFileMaxBytes = 64 << 10;

Status Interrupted() { return Status::Again("interrupted"); }

// Runs fn(thread, &done) on `threads` threads started together; the calling thread draws the
// progress line from the shared `done` counter. Returns the wall time in seconds from the
// start to the last thread's end (each thread's own clock reading, not the progress loop's,
// which wakes every 20 ms: a 10000-entry stat on ext4 takes about that long), or the first
// thread's error.
Result<double> Parallel(uint32_t threads, uint64_t total, const PhaseEnv& env,
                        const std::string& label,
                        const std::function<Status(uint32_t, std::atomic<uint64_t>*)>& fn) {
  std::atomic<uint64_t> done{0};
  std::atomic<uint32_t> finished{0};
  std::vector<Status> status(threads);
  std::vector<uint64_t> end_ns(threads, 0);
  std::latch go(threads + 1);
  std::vector<std::thread> workers;
  for (uint32_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      go.arrive_and_wait();
      status[t] = fn(t, &done);
      end_ns[t] = MonotonicNowNs();
      finished.fetch_add(1);
    });
  }
  ProgressOptions po;
  po.mode = env.progress;
  ProgressReporter progress(label, total, po);
  const uint64_t start = MonotonicNowNs();
  go.arrive_and_wait();
  while (finished.load() < threads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    progress.Update(done.load());
  }
  for (std::thread& w : workers) w.join();
  const uint64_t last_ns = *std::max_element(end_ns.begin(), end_ns.end());
  const double elapsed = static_cast<double>(last_ns - std::min(start, last_ns)) / 1e9;
  progress.Finish();
  for (const Status& s : status) FOLIO_RETURN_IF_ERROR(s);
  if (env.stop->load()) return Interrupted();
  return std::max(elapsed, 1e-9);
}

std::string Path(const std::string& dir, const char* prefix, uint32_t thread, uint32_t i) {
  return dir + "/" + prefix + std::to_string(thread) + "." + std::to_string(i);
}

// The entries of thread t when `entries` are split over `threads`.
uint32_t Share(uint32_t entries, uint32_t threads, uint32_t t) {
  return entries / threads + (t < entries % threads ? 1 : 0);
}

// One metadata op on entry i of thread t.
using EntryOp = std::function<Status(uint32_t t, uint32_t i)>;

// op on entries [0, (*counts)[t]) of every thread t; a thread stops at the deadline (seconds
// after the start) and *counts becomes what it did. Returns ops/s.
Result<double> TimedEntries(std::vector<uint32_t>* counts, double deadline_s, const PhaseEnv& env,
                            const std::string& label, const EntryOp& op) {
  const uint32_t threads = static_cast<uint32_t>(counts->size());
  uint64_t total = 0;
  for (uint32_t n : *counts) total += n;
  const uint64_t deadline_ns = MonotonicNowNs() + static_cast<uint64_t>(deadline_s * 1e9);
  FOLIO_ASSIGN_OR_RETURN(
      double s, Parallel(threads, total, env, label,
                         [&](uint32_t t, std::atomic<uint64_t>* done) -> Status {
                           const uint32_t n = (*counts)[t];
                           uint32_t i = 0;
                           for (; i < n; ++i) {
                             if (env.stop->load()) break;
                             if (i % 8 == 0 && MonotonicNowNs() > deadline_ns) break;
                             FOLIO_RETURN_IF_ERROR(op(t, i));
                             done->fetch_add(1, std::memory_order_relaxed);
                           }
                           (*counts)[t] = i;
                           return Status::OK();
                         }));
  uint64_t did = 0;
  for (uint32_t n : *counts) did += n;
  return static_cast<double>(did) / s;
}

Status Errno(const std::string& what) { return Status::FromErrno(errno, what); }

// Lists dir completely; returns the number of entries other than . and ..
Result<uint64_t> ListDir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Errno(dir + ": opendir");
  uint64_t n = 0;
  errno = 0;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  }
  const int err = errno;
  closedir(d);
  if (err != 0) return Status::FromErrno(err, dir + ": readdir");
  return n;
}

// readdir: every thread lists the whole directory once; ops are entries listed.
Status ListPhase(const std::string& dir, uint32_t threads, const std::vector<uint32_t>& made,
                 const PhaseEnv& env, const std::string& label,
                 std::vector<std::pair<std::string, double>>* out) {
  uint64_t entries = 0;
  for (uint32_t n : made) entries += n;
  FOLIO_ASSIGN_OR_RETURN(
      double list_s,
      Parallel(threads, threads * entries, env, label + " readdir",
               [&](uint32_t, std::atomic<uint64_t>* done) -> Status {
                 FOLIO_ASSIGN_OR_RETURN(uint64_t n, ListDir(dir));
                 if (n != entries) {
                   return Status::Corruption(dir + ": readdir listed " + std::to_string(n) +
                                             " entries of the " + std::to_string(entries) +
                                             " created");
                 }
                 done->fetch_add(n);
                 return Status::OK();
               }));
  out->emplace_back("readdir", static_cast<double>(threads * entries) / list_s);
  return Status::OK();
}

// The size of small file i: 1..64 KiB, from the seed.
uint64_t SmallFileBytes(uint64_t seed, uint32_t i) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + i;
  return 1024 + bench::SplitMix64(&state) % (kSmallFileMaxBytes - 1024 + 1);
}

Status WriteSmallFile(const std::string& path, const char* data, uint64_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(path + ": create");
  const ssize_t n = ::write(fd, data, bytes);
  const int err = errno;
  if (::close(fd) != 0 && n >= 0) return Errno(path + ": close");
  if (n < 0) return Status::FromErrno(err, path + ": write");
  if (static_cast<uint64_t>(n) != bytes) return Status::IOError(path + ": short write");
  return Status::OK();
}

Status ReadSmallFile(const std::string& path, char* buf, uint64_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno(path + ": open");
  uint64_t got = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf, kSmallFileMaxBytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::FromErrno(err, path + ": read");
    }
    if (n == 0) break;
    got += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (got != bytes) {
    return Status::Corruption(path + ": read " + std::to_string(got) + " bytes of the " +
                              std::to_string(bytes) + " written");
  }
  return Status::OK();
}

// Before each op that looks names up again (stat, open+close, rename, unlink), the bench waits
// out the kernel's entry and attribute cache of both FUSE targets (1 s each: passthrough_ll's
// default and Folio's, fuse/fs_adapter.h), so every target's op starts with those names
// expired. Without it the result depended on how fast the op before ran: a target that created
// its entries within the last second served stat from the kernel's dentry cache (809k ops/s
// here), one that took longer sent a lookup per stat (17k). ext4 has no such cache to expire.
constexpr auto kFuseCacheExpiry = std::chrono::milliseconds(1100);

// One RunMetadataPhases call: its directories, what each op covered, the results.
class MetadataRun {
 public:
  MetadataRun(const std::string& root, uint32_t threads, uint32_t entries, double deadline_s,
              const PhaseEnv& env, const std::string& label)
      : threads_(threads), deadline_s_(deadline_s), env_(env), label_(label),
        base_(root + "/md-" + std::to_string(threads) + "t"), dirs_(base_ + "/dirs"),
        files_(base_ + "/files") {
    for (uint32_t t = 0; t < threads; ++t) made_dirs_.push_back(Share(entries, threads, t));
    made_files_ = made_dirs_;
  }

  Status MakeDirs() {
    for (const std::string& d : {base_, dirs_, files_}) {
      if (::mkdir(d.c_str(), 0755) != 0) return Errno(d + ": mkdir");
    }
    return Status::OK();
  }

  // The timed ops in mdtest's order; the ops after create cover the files it made.
  Status Run() {
    FOLIO_RETURN_IF_ERROR(Timed("mkdir", &made_dirs_, [&](uint32_t t, uint32_t i) {
      const std::string p = Path(dirs_, "d", t, i);
      return ::mkdir(p.c_str(), 0755) == 0 ? Status::OK() : Errno(p + ": mkdir");
    }));
    FOLIO_RETURN_IF_ERROR(Timed("create", &made_files_, [&](uint32_t t, uint32_t i) {
      const std::string p = Path(files_, "f", t, i);
      const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) return Errno(p + ": create");
      return ::close(fd) == 0 ? Status::OK() : Errno(p + ": close");
    }));
    std::vector<uint32_t> some = made_files_;
    std::this_thread::sleep_for(kFuseCacheExpiry);
    FOLIO_RETURN_IF_ERROR(Timed("stat", &some, [&](uint32_t t, uint32_t i) {
      const std::string p = Path(files_, "f", t, i);
      struct stat st;
      return ::stat(p.c_str(), &st) == 0 ? Status::OK() : Errno(p + ": stat");
    }));
    some = made_files_;
    std::this_thread::sleep_for(kFuseCacheExpiry);
    FOLIO_RETURN_IF_ERROR(Timed("open+close", &some, [&](uint32_t t, uint32_t i) {
      const std::string p = Path(files_, "f", t, i);
      const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Errno(p + ": open");
      return ::close(fd) == 0 ? Status::OK() : Errno(p + ": close");
    }));
    FOLIO_RETURN_IF_ERROR(ListPhase(files_, threads_, made_files_, env_, label_, &out_));
    std::vector<uint32_t> renamed = made_files_;
    std::this_thread::sleep_for(kFuseCacheExpiry);
    FOLIO_RETURN_IF_ERROR(Timed("rename", &renamed, [&](uint32_t t, uint32_t i) {
      const std::string from = Path(files_, "f", t, i), to = Path(files_, "r", t, i);
      return ::rename(from.c_str(), to.c_str()) == 0 ? Status::OK() : Errno(from + ": rename");
    }));
    std::this_thread::sleep_for(kFuseCacheExpiry);
    return Timed("unlink", &renamed, [&](uint32_t t, uint32_t i) {
      const std::string p = Path(files_, "r", t, i);
      return ::unlink(p.c_str()) == 0 ? Status::OK() : Errno(p + ": unlink");
    });
  }

  // Not timed: whatever is left goes, then the directories (the next repeat reuses the names).
  Status RemoveAll() {
    for (uint32_t t = 0; t < threads_; ++t) {
      for (uint32_t i = 0; i < made_files_[t]; ++i) {
        (void)::unlink(Path(files_, "r", t, i).c_str());
        (void)::unlink(Path(files_, "f", t, i).c_str());
      }
      for (uint32_t i = 0; i < made_dirs_[t]; ++i) (void)::rmdir(Path(dirs_, "d", t, i).c_str());
    }
    for (const std::string& d : {files_, dirs_, base_}) {
      if (::rmdir(d.c_str()) != 0) return Errno(d + ": rmdir");
    }
    return Status::OK();
  }

  const std::vector<std::pair<std::string, double>>& results() const { return out_; }

 private:
  // `counts`: the entries the op covers (cut to what it did when the deadline stops it).
  Status Timed(const char* op, std::vector<uint32_t>* counts, const EntryOp& fn) {
    FOLIO_ASSIGN_OR_RETURN(double v,
                           TimedEntries(counts, deadline_s_, env_, label_ + " " + op, fn));
    out_.emplace_back(op, v);
    return Status::OK();
  }

  const uint32_t threads_;
  const double deadline_s_;
  const PhaseEnv& env_;
  const std::string label_;
  const std::string base_, dirs_, files_;
  std::vector<uint32_t> made_dirs_, made_files_;
  std::vector<std::pair<std::string, double>> out_;
};

}  // namespace

std::vector<IoPhase> IoPhases(double runtime_s, uint64_t cached_bytes, uint64_t large_bytes) {
  std::vector<IoPhase> phases;
  auto add = [&](std::string name, bench::RwMode rw, uint64_t bs, uint32_t threads, bool large,
                 bool pre_read, bool end_fsync) {
    IoPhase p;
    p.name = std::move(name);
    p.large_file = large;
    p.mib_per_s = bs >= (1 << 20);
    bench::JobSpec& j = p.job;
    j.name = p.name;
    j.rw = rw;
    j.block_bytes = bs;
    j.size_bytes = large ? large_bytes : cached_bytes;
    j.numjobs = threads;
    j.runtime_us = static_cast<uint64_t>(runtime_s * 1e6);
    j.time_based = true;
    j.pre_read = pre_read;
    j.end_fsync = end_fsync;
    phases.push_back(p);
  };
  for (uint32_t t : {1u, 4u}) {
    const std::string ts = "-" + std::to_string(t) + "t";
    add("randread-4k-cached" + ts, bench::RwMode::kRandRead, 4096, t, false, true, false);
    add("randread-4k-2xcache" + ts, bench::RwMode::kRandRead, 4096, t, true, true, false);
    add("randwrite-4k" + ts, bench::RwMode::kRandWrite, 4096, t, true, false, true);
  }
  add("seqwrite-1m", bench::RwMode::kWrite, 1 << 20, 1, true, false, true);
  add("seqread-1m", bench::RwMode::kRead, 1 << 20, 1, true, false, false);
  return phases;
}

Result<IoPhaseRun> RunIoPhase(const IoPhase& phase, const std::string& file, const PhaseEnv& env,
                              const std::string& label, std::vector<std::string>* notes,
                              bool pre_read_small_folios) {
  bench::EngineContext ctx;
  ctx.job = phase.job;
  ctx.engine = bench::EngineSpec{};  // kernel: pread / pwrite through the target's path
  ctx.path = file;
  ctx.file_bytes = phase.job.size_bytes;
  ctx.region_offset = 0;
  ctx.region_bytes = phase.job.size_bytes;
  ctx.cache_bytes = env.cache_bytes;
  ctx.stop = env.stop;
  ctx.memcg = env.memcg;
  ctx.unlimited_why = env.unlimited_why;
  ctx.pre_read_small_folios = pre_read_small_folios;
  FOLIO_ASSIGN_OR_RETURN(bench::RunResult r,
                         bench::RunEngineJob(ctx, env.seed, env.progress, label));
  if (r.timed.interrupted || env.stop->load()) return Interrupted();
  for (const std::string& n : r.notes) {
    if (std::find(notes->begin(), notes->end(), n) == notes->end()) notes->push_back(n);
  }
  IoPhaseRun run;
  run.value = phase.mib_per_s ? r.bytes_per_s() / (1 << 20) : r.iops();
  run.kernel_folios = r.kernel_folios;
  run.kernel_folios_error = r.kernel_folios_error;
  return run;
}

Result<std::vector<std::pair<std::string, double>>> RunMetadataPhases(
    const std::string& root, uint32_t threads, uint32_t entries, double deadline_s,
    const PhaseEnv& env, const std::string& label) {
  MetadataRun run(root, threads, entries, deadline_s, env, label);
  FOLIO_RETURN_IF_ERROR(run.MakeDirs());
  Status s = run.Run();
  Status removed = run.RemoveAll();
  FOLIO_RETURN_IF_ERROR(s);
  FOLIO_RETURN_IF_ERROR(removed);
  // The report's list of a full run's phases (FsBenchPllPhases) is built from kMetadataOps.
  // (Not `results | std::views::keys`: clang 14 cannot compile it against libstdc++ 12.)
  const std::vector<std::pair<std::string, double>>& results = run.results();
  FOLIO_CHECK(std::equal(results.begin(), results.end(), std::begin(kMetadataOps),
                         std::end(kMetadataOps),
                         [](const auto& r, const char* op) { return r.first == op; }));
  return run.results();
}

Result<SmallFilesResult> RunSmallFiles(const std::string& root, uint32_t files,
                                       const PhaseEnv& env, const std::string& label,
                                       const std::string& sync_file) {
  const std::string dir = root + "/small";
  if (::mkdir(dir.c_str(), 0755) != 0) return Errno(dir + ": mkdir");
  std::vector<char> data(kSmallFileMaxBytes);
  uint64_t state = env.seed;
  for (size_t i = 0; i + 8 <= data.size(); i += 8) {
    const uint64_t v = bench::SplitMix64(&state);
    std::memcpy(data.data() + i, &v, 8);
  }
  SmallFilesResult r;
  for (uint32_t i = 0; i < files; ++i) r.bytes += SmallFileBytes(env.seed, i);
  const uint32_t threads = std::min(kSmallFileThreads, std::max(files, 1u));
  auto index = [&](uint32_t t, uint32_t i) { return i * threads + t; };
  FOLIO_ASSIGN_OR_RETURN(
      double write_s,
      Parallel(threads, files, env, label + " write",
               [&](uint32_t t, std::atomic<uint64_t>* done) -> Status {
                 for (uint32_t i = 0; i < Share(files, threads, t); ++i) {
                   if (env.stop->load()) return Status::OK();
                   const uint32_t k = index(t, i);
                   FOLIO_RETURN_IF_ERROR(WriteSmallFile(Path(dir, "s", 0, k), data.data(),
                                                        SmallFileBytes(env.seed, k)));
                   done->fetch_add(1, std::memory_order_relaxed);
                 }
                 return Status::OK();
               }));
  r.write_files_per_s = files / write_s;
  if (!sync_file.empty()) {
    const uint64_t start = MonotonicNowNs();
    const int fd = ::open(sync_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Errno(sync_file + ": open");
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return Status::FromErrno(err, sync_file + ": fsync");
    const double sync_s = static_cast<double>(MonotonicNowNs() - start) / 1e9;
    r.committed_files_per_s = files / (write_s + sync_s);
  }
  FOLIO_ASSIGN_OR_RETURN(
      double read_s,
      Parallel(threads, files, env, label + " read",
               [&](uint32_t t, std::atomic<uint64_t>* done) -> Status {
                 std::vector<char> buf(kSmallFileMaxBytes);
                 for (uint32_t i = 0; i < Share(files, threads, t); ++i) {
                   if (env.stop->load()) return Status::OK();
                   const uint32_t k = index(t, i);
                   FOLIO_RETURN_IF_ERROR(ReadSmallFile(Path(dir, "s", 0, k), buf.data(),
                                                       SmallFileBytes(env.seed, k)));
                   done->fetch_add(1, std::memory_order_relaxed);
                 }
                 return Status::OK();
               }));
  r.read_files_per_s = files / read_s;
  return r;
}

}  // namespace folio::cli
