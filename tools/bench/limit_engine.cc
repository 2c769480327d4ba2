// The `limit` engine: the job's access pattern (the same offsets, sizes and threads from the
// same OpGenerator) as plain memcpy from (reads) or to (writes) an anonymous buffer of the
// file's size in this process. No lookup, no locking, no I/O: the ceiling of a cached read or
// write on this machine, so each cached engine's IOPS can be read as a share of it.
//
// The buffer is mmap'ed with MADV_HUGEPAGE and pre-faulted (filled with pseudo-random data)
// before the run, like Folio's cache arena: a first touch costs ~20 us per 4 KiB page here,
// which would otherwise be measured. It holds the file's bytes (not the data: contents do not
// change a memcpy's cost).
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "base/units.h"
#include "bench/engine.h"

namespace folio::bench {

namespace {

constexpr uint64_t kHugeBytes = 2ull << 20;

class LimitWorker : public WorkerIo {
 public:
  LimitWorker(char* base, uint64_t block_bytes, uint64_t seed)
      : base_(base), block_bytes_(block_bytes),
        buf_(block_bytes) {
    for (uint64_t i = 0; i + 8 <= block_bytes; i += 8) {
      const uint64_t v = SplitMix64(&seed);
      std::memcpy(buf_.data() + i, &v, 8);
    }
  }
  uint32_t depth() const override { return 1; }

  Status Start(const Op& op) override {
    pending_ = true;
    if (op.write) {
      std::memcpy(base_ + op.pos, buf_.data(), block_bytes_);
    } else {
      std::memcpy(buf_.data(), base_ + op.pos, block_bytes_);
    }
    // The copies are the measurement: keep the compiler from dropping or merging them.
    asm volatile("" : : "r"(buf_.data()), "r"(base_) : "memory");
    return Status::OK();
  }

  Status Reap(std::vector<uint32_t>* done) override {
    if (pending_) done->push_back(0);
    pending_ = false;
    return Status::OK();
  }

  // Anonymous memory has nothing to make durable.
  Status Sync(bool) override { return Status::OK(); }

 private:
  char* const base_;
  const uint64_t block_bytes_;
  AlignedBuffer buf_;
  bool pending_ = false;
};

class LimitEngine : public Engine {
 public:
  explicit LimitEngine(const EngineContext& ctx) : ctx_(ctx) {}
  ~LimitEngine() override { Unmap(); }

  Status Prepare() override {
    map_bytes_ = (ctx_.file_bytes + kHugeBytes - 1) / kHugeBytes * kHugeBytes;
    void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      map_bytes_ = 0;
      return Status::FromErrno(err, "limit: mmap of a " + FormatSize(ctx_.file_bytes) +
                                        " buffer");
    }
    base_ = static_cast<char*>(p);
    const bool huge = madvise(base_, map_bytes_, MADV_HUGEPAGE) == 0;
    uint64_t state = 0x243f6a8885a308d3ull;
    for (uint64_t pos = 0; pos < map_bytes_ && !ctx_.stop->load(); pos += 8) {
      const uint64_t v = SplitMix64(&state);
      std::memcpy(base_ + pos, &v, 8);
    }
    notes_.push_back(std::string("limit: memcpy ") + "from / to a pre-faulted anonymous " +
                     FormatSize(ctx_.file_bytes) + " buffer (" +
                     (huge ? "MADV_HUGEPAGE" : "no THP: madvise failed") +
                     "), the same offsets and threads; syncs are no-ops");
    return Status::OK();
  }

  Result<std::unique_ptr<WorkerIo>> NewWorker(uint32_t index) override {
    return std::unique_ptr<WorkerIo>(
        std::make_unique<LimitWorker>(base_, ctx_.job.block_bytes, index + 1));
  }

  Status Finish() override {
    Unmap();
    return Status::OK();
  }

  MemoryReport memory() const override {
    MemoryReport m;
    m.kind = "buffer";
    m.limit_bytes = ctx_.file_bytes;
    return m;
  }
  std::vector<std::string> notes() const override { return notes_; }

 private:
  void Unmap() {
    if (base_ != nullptr) munmap(base_, map_bytes_);
    base_ = nullptr;
  }
  const EngineContext ctx_;
  char* base_ = nullptr;
  uint64_t map_bytes_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<Engine> NewLimitEngine(const EngineContext& ctx) {
  return std::make_unique<LimitEngine>(ctx);
}

}  // namespace folio::bench
