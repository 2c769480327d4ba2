// The `kernel` engine: the same job through the kernel's own paths: pread / pwrite on the
// file through the kernel page cache, or with direct=1 O_DIRECT reads and writes through one
// io_uring per thread keeping iodepth in flight, as fio's ioengine=io_uring does (no SQPOLL,
// no registered files or buffers; the ops queued since the last completion go in one
// io_uring_enter that also waits for the next one).
//
// This is the one liburing user outside src/io: the baseline must not go through Folio's
// io layer, which is what it is compared with.
#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "base/units.h"
#include "bench/engine.h"
#include "bench/memcg.h"
#include "cli/cli_util.h"

namespace folio::bench {

namespace {

using cli::FullIo;

// read_bytes of /proc/self/io: bytes this process caused to be read from storage (page cache
// misses and readahead; the whole process, all threads). -1 when unreadable.
int64_t ProcessReadBytes() {
  const int fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[512];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* p = std::strstr(buf, "\nread_bytes: ");
  if (p == nullptr) return -1;
  return std::strtoll(p + 13, nullptr, 10);
}

// An aligned buffer of pseudo-random bytes (writes must not be all zeros).
AlignedBuffer NewRandomBuffer(uint64_t bytes) {
  AlignedBuffer buf(bytes);
  uint64_t state = reinterpret_cast<uintptr_t>(buf.data());
  for (uint64_t i = 0; i + 8 <= buf.size(); i += 8) {
    uint64_t v = SplitMix64(&state);
    std::memcpy(buf.data() + i, &v, 8);
  }
  return buf;
}

// fsync(2) or fdatasync(2) of the job's file, as both workers' Sync does.
Status SyncFile(int fd, const std::string& path, bool datasync) {
  if ((datasync ? fdatasync(fd) : fsync(fd)) != 0) {
    return Status::FromErrno(errno, path + (datasync ? ": fdatasync" : ": fsync"));
  }
  return Status::OK();
}

class KernelWorker : public WorkerIo {
 public:
  KernelWorker(int fd, uint64_t block_bytes, const std::string& path)
      : fd_(fd), block_bytes_(block_bytes), path_(path), buf_(NewRandomBuffer(block_bytes)) {}

  uint32_t depth() const override { return 1; }

  Status Start(const Op& op) override {
    pending_ = true;
    return FullIo(fd_, op.write, buf_.data(), block_bytes_, op.pos, path_);
  }

  Status Reap(std::vector<uint32_t>* done) override {
    if (pending_) done->push_back(0);
    pending_ = false;
    return Status::OK();
  }

  Status Sync(bool datasync) override { return SyncFile(fd_, path_, datasync); }

 private:
  const int fd_;
  const uint64_t block_bytes_;
  const std::string& path_;
  AlignedBuffer buf_;
  bool pending_ = false;
};

// direct=1: iodepth O_DIRECT ops in flight through this thread's own ring.
class KernelUringWorker : public WorkerIo {
 public:
  KernelUringWorker(int fd, const JobSpec& job, const std::string& path)
      : fd_(fd), job_(job), path_(path) {}
  ~KernelUringWorker() override {
    if (ring_ready_) io_uring_queue_exit(&ring_);
  }

  Status Init() {
    const int rc = io_uring_queue_init(std::max<uint32_t>(job_.iodepth, 2), &ring_, 0);
    if (rc < 0) return Status::FromErrno(-rc, "kernel: io_uring_queue_init");
    ring_ready_ = true;
    for (uint32_t i = 0; i < job_.iodepth; ++i) bufs_.push_back(NewRandomBuffer(job_.block_bytes));
    return Status::OK();
  }

  uint32_t depth() const override { return job_.iodepth; }

  Status Start(const Op& op) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    FOLIO_CHECK(sqe != nullptr);  // at most iodepth ops, the ring has iodepth entries
    char* buf = bufs_[op.slot].data();
    if (op.write) {
      io_uring_prep_write(sqe, fd_, buf, static_cast<unsigned>(job_.block_bytes), op.pos);
    } else {
      io_uring_prep_read(sqe, fd_, buf, static_cast<unsigned>(job_.block_bytes), op.pos);
    }
    io_uring_sqe_set_data64(sqe, op.slot);
    // fio's iodepth_batch_submit (default 1: each op as it is queued); Reap submits the rest.
    if (++queued_ >= job_.SubmitBatch()) {
      queued_ = 0;
      int rc;
      do {
        rc = io_uring_submit(&ring_);
      } while (rc == -EINTR);
      if (rc < 0) return Status::FromErrno(-rc, path_ + ": io_uring_enter");
    }
    return Status::OK();
  }

  Status Reap(std::vector<uint32_t>* done) override {
    int rc;
    queued_ = 0;
    do {
      rc = io_uring_submit_and_wait(&ring_, 1);
    } while (rc == -EINTR);
    if (rc < 0) return Status::FromErrno(-rc, path_ + ": io_uring_enter");
    Status first;
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      done->push_back(static_cast<uint32_t>(io_uring_cqe_get_data64(cqe)));
      if (!first.ok()) continue;
      if (cqe->res < 0) {
        first = Status::FromErrno(-cqe->res, path_);
      } else if (static_cast<uint64_t>(cqe->res) != job_.block_bytes) {
        first = Status::IOError(path_ + ": short O_DIRECT transfer of " +
                                std::to_string(cqe->res) + " of " +
                                std::to_string(job_.block_bytes) + " bytes");
      }
    }
    io_uring_cq_advance(&ring_, seen);
    return first;
  }

  Status Sync(bool datasync) override { return SyncFile(fd_, path_, datasync); }

 private:
  const int fd_;
  const JobSpec& job_;
  const std::string& path_;
  io_uring ring_{};
  bool ring_ready_ = false;
  uint32_t queued_ = 0;  // SQEs prepared since the last submission
  std::vector<AlignedBuffer> bufs_;
};

class KernelEngine : public Engine {
 public:
  explicit KernelEngine(const EngineContext& ctx) : ctx_(ctx) {}
  ~KernelEngine() override {
    LeaveCgroup();
    if (fd_ >= 0) close(fd_);
  }

  Status Prepare() override {
    if (!ctx_.job.direct && ctx_.memcg != nullptr) {
      // Inside the cgroup before the file's pages are dropped and pre-read, so every page this
      // run caches is charged to (and capped by) it.
      ctx_.memcg->Empty();
      ctx_.memcg->ResetPeak();
      FOLIO_RETURN_IF_ERROR(ctx_.memcg->Join());
      joined_ = true;
    }
    fd_ = open(ctx_.path.c_str(), O_RDWR | O_CLOEXEC | (ctx_.job.direct ? O_DIRECT : 0));
    if (fd_ < 0) return Status::FromErrno(errno, ctx_.path);
    // Start cold like the folio engines: write back, then drop the file's cached pages.
    if (fdatasync(fd_) != 0) return Status::FromErrno(errno, ctx_.path + ": fdatasync");
    posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    if (ctx_.job.direct) {
      notes_.push_back(Name() + ": O_DIRECT through io_uring, " + std::to_string(ctx_.job.iodepth) +
                       " in flight per thread (as fio's ioengine=io_uring)");
      return Status::OK();
    }
    if (ctx_.job.pre_read) {
      // Read right before the run, not at file creation: the machine's proactive reclaim
      // evicts cold page cache, so an earlier read would not still be resident. Readahead
      // puts the pages in large folios where the file system supports them; without it
      // (POSIX_FADV_RANDOM) every page is a 4 KiB folio of its own.
      const bool small_folios =
          ctx_.pre_read_small_folios || ctx_.engine.kind == EngineSpec::Kind::kKernel4k;
      if (small_folios) posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM);
      AlignedBuffer buf = NewRandomBuffer(1 << 20);
      const uint64_t end = ctx_.region_offset + ctx_.region_bytes;
      for (uint64_t pos = ctx_.region_offset; pos < end && !ctx_.stop->load(); pos += 1 << 20) {
        const uint64_t len = std::min<uint64_t>(1 << 20, end - pos);
        FOLIO_RETURN_IF_ERROR(FullIo(fd_, false, buf.data(), len, pos, ctx_.path));
      }
      if (small_folios) posix_fadvise(fd_, 0, 0, POSIX_FADV_NORMAL);
      notes_.push_back(
          small_folios
              ? Name() + ": page cache dropped, then the file read once right before the run "
                "with POSIX_FADV_RANDOM (no readahead, so in 4 KiB folios)"
              : Name() + ": page cache dropped, then the file read once right before the "
                "run (proactive reclaim evicts cold page cache)");
    } else {
      notes_.push_back(Name() + ": buffered, page cache dropped before the run");
    }
    return Status::OK();
  }

  Result<std::unique_ptr<WorkerIo>> NewWorker(uint32_t) override {
    if (ctx_.job.direct) {
      auto w = std::make_unique<KernelUringWorker>(fd_, ctx_.job, ctx_.path);
      FOLIO_RETURN_IF_ERROR(w->Init());
      return std::unique_ptr<WorkerIo>(std::move(w));
    }
    return std::unique_ptr<WorkerIo>(
        std::make_unique<KernelWorker>(fd_, ctx_.job.block_bytes, ctx_.path));
  }

  void OnMeasureStart() override { read_bytes_start_ = ProcessReadBytes(); }

  Status Finish() override {
    const int64_t end = ProcessReadBytes();
    if (!ctx_.job.direct && read_bytes_start_ >= 0 && end >= read_bytes_start_) {
      read_bytes_ = end - read_bytes_start_;
    }
    if (RwModeWrites(ctx_.job.rw) && fdatasync(fd_) != 0) {
      return Status::FromErrno(errno, ctx_.path + ": fdatasync");
    }
    if (ctx_.job.direct) return Status::OK();
    if (ctx_.memcg == nullptr) {
      memory_.kind = "machine";
      memory_.why = ctx_.unlimited_why;
    } else {
      memory_.kind = ctx_.memcg->version() == 1 ? "cgroup v1" : "cgroup v2";
      memory_.limit_bytes = ctx_.memcg->limit_bytes();
      memory_.peak_bytes = ctx_.memcg->PeakBytes();
      memory_.cgroup = ctx_.memcg->path();
      notes_.push_back(Name() + ": in memory cgroup " + ctx_.memcg->path() + " (" +
                       ctx_.memcg->LimitName() + " " + FormatSize(memory_.limit_bytes) +
                       ", peak " + FormatSize(memory_.peak_bytes) + ")");
      LeaveCgroup();
    }
    // Outside the cgroup, so the census's own memory (its arrays, the mapping's page tables) is
    // never charged to the limit the runs share; before emptying it, which drops the pages.
    if (ctx_.job.pre_read) TakeCensus();
    if (ctx_.memcg != nullptr) ctx_.memcg->Empty();  // the next engine starts cold
    return Status::OK();
  }

  int64_t device_read_bytes() const override { return read_bytes_; }
  MemoryReport memory() const override { return memory_; }
  const Result<KernelFolioCensus>* kernel_folios() const override {
    return census_ ? &*census_ : nullptr;
  }
  std::vector<std::string> notes() const override { return notes_; }

 private:
  std::string Name() const { return ctx_.engine.Name(); }

  // What the cached run read from: the folios of its region in the kernel's page cache.
  void TakeCensus() {
    const uint64_t page = 4096;
    const uint64_t start = ctx_.region_offset / page * page;
    const uint64_t end = (ctx_.region_offset + ctx_.region_bytes) / page * page;
    if (end <= start) return;
    census_ = TakeKernelFolioCensus(fd_, ctx_.path, start, end - start);
    notes_.push_back(census_->ok() ? Name() + ": the file's page cache after the run: " +
                                         (*census_)->Summary()
                                   : Name() + ": the sizes of the file's folios are not known: " +
                                         std::string(census_->status().message()));
  }

  void LeaveCgroup() {
    if (!joined_) return;
    joined_ = false;
    Status s = ctx_.memcg->Leave();
    // Staying in the cgroup would cap the folio engines that run next: never silently.
    FOLIO_CHECK_MSG(s.ok(), "folio bench: cannot leave the kernel engine's memory cgroup");
  }

  const EngineContext ctx_;
  int fd_ = -1;
  bool joined_ = false;
  int64_t read_bytes_start_ = -1;
  int64_t read_bytes_ = -1;
  MemoryReport memory_;
  std::optional<Result<KernelFolioCensus>> census_;
  std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<Engine> NewKernelEngine(const EngineContext& ctx) {
  return std::make_unique<KernelEngine>(ctx);
}

std::unique_ptr<Engine> NewEngine(const EngineContext& ctx) {
  if (ctx.engine.kind == EngineSpec::Kind::kLimit) return NewLimitEngine(ctx);
  if (ctx.engine.kind == EngineSpec::Kind::kFio) return NewFioEngine(ctx);
  if (!ctx.engine.is_folio()) return NewKernelEngine(ctx);
  return ctx.job.direct ? NewFolioDirectEngine(ctx) : NewFolioCachedEngine(ctx);
}

}  // namespace folio::bench
