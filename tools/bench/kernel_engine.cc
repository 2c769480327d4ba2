// The `kernel` engine: the same job through the kernel's own paths, pread / pwrite on the
// file, buffered (the kernel page cache) or O_DIRECT as the job says.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/check.h"
#include "bench/engine.h"
#include "cli_util.h"

namespace folio::bench {

namespace {

using cli::FullIo;

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, FreeDeleter>;

AlignedBuffer NewAlignedBuffer(uint64_t bytes) {
  const uint64_t rounded = (bytes + 4095) / 4096 * 4096;
  AlignedBuffer buf(static_cast<char*>(std::aligned_alloc(4096, rounded)));
  FOLIO_CHECK(buf != nullptr);
  uint64_t state = reinterpret_cast<uintptr_t>(buf.get());
  for (uint64_t i = 0; i + 8 <= rounded; i += 8) {
    uint64_t v = SplitMix64(&state);
    std::memcpy(buf.get() + i, &v, 8);
  }
  return buf;
}

class KernelWorker : public WorkerIo {
 public:
  KernelWorker(int fd, uint64_t block_bytes, const std::string& path)
      : fd_(fd), block_bytes_(block_bytes), path_(path), buf_(NewAlignedBuffer(block_bytes)) {}

  uint32_t depth() const override { return 1; }

  Status Start(const Op& op) override {
    pending_ = true;
    return FullIo(fd_, op.write, buf_.get(), block_bytes_, op.pos, path_);
  }

  Status Reap(std::vector<uint32_t>* done) override {
    if (pending_) done->push_back(0);
    pending_ = false;
    return Status::OK();
  }

 private:
  const int fd_;
  const uint64_t block_bytes_;
  const std::string& path_;
  AlignedBuffer buf_;
  bool pending_ = false;
};

class KernelEngine : public Engine {
 public:
  explicit KernelEngine(const EngineContext& ctx) : ctx_(ctx) {}
  ~KernelEngine() override {
    if (fd_ >= 0) close(fd_);
  }

  Status Prepare() override {
    fd_ = open(ctx_.path.c_str(), O_RDWR | O_CLOEXEC | (ctx_.job.direct ? O_DIRECT : 0));
    if (fd_ < 0) return Status::FromErrno(errno, ctx_.path);
    // Start cold like the folio engines: write back, then drop the file's cached pages.
    if (fdatasync(fd_) != 0) return Status::FromErrno(errno, ctx_.path + ": fdatasync");
    posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    if (ctx_.job.direct) {
      notes_.push_back("kernel: O_DIRECT pread/pwrite, one request in flight per thread");
      return Status::OK();
    }
    if (ctx_.job.pre_read) {
      // Read right before the run, not at file creation: the machine's proactive reclaim
      // evicts cold page cache, so an earlier read would not still be resident.
      AlignedBuffer buf = NewAlignedBuffer(1 << 20);
      for (uint64_t pos = 0; pos < ctx_.file_bytes && !ctx_.stop->load(); pos += 1 << 20) {
        const uint64_t len = std::min<uint64_t>(1 << 20, ctx_.file_bytes - pos);
        FOLIO_RETURN_IF_ERROR(FullIo(fd_, false, buf.get(), len, pos, ctx_.path));
      }
      notes_.push_back("kernel: page cache dropped, then the file read once right before the "
                       "run (proactive reclaim evicts cold page cache)");
    } else {
      notes_.push_back("kernel: buffered, page cache dropped before the run");
    }
    return Status::OK();
  }

  Result<std::unique_ptr<WorkerIo>> NewWorker(uint32_t) override {
    return std::unique_ptr<WorkerIo>(
        std::make_unique<KernelWorker>(fd_, ctx_.job.block_bytes, ctx_.path));
  }

  Status Finish() override {
    if (RwModeWrites(ctx_.job.rw) && fdatasync(fd_) != 0) {
      return Status::FromErrno(errno, ctx_.path + ": fdatasync");
    }
    return Status::OK();
  }

  std::vector<std::string> notes() const override { return notes_; }

 private:
  const EngineContext ctx_;
  int fd_ = -1;
  std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<Engine> NewKernelEngine(const EngineContext& ctx) {
  return std::make_unique<KernelEngine>(ctx);
}

std::unique_ptr<Engine> NewEngine(const EngineContext& ctx) {
  if (!ctx.engine.is_folio()) return NewKernelEngine(ctx);
  return ctx.job.direct ? NewFolioDirectEngine(ctx) : NewFolioCachedEngine(ctx);
}

}  // namespace folio::bench
