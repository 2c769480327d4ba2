// MemDevice: a BlockDevice in memory, for tests and for RAID / cache experiments without disks.
//
// The device is an array of 1 MiB chunks allocated on first write (a "mem:8G" device commits
// only what is written); unwritten ranges read as zeros; a trim zeroes its range and frees the
// chunks it covers whole; a flush does nothing. Each chunk has its own mutex, so writes to
// disjoint chunks never serialise, and overlapping concurrent requests see whole-chunk-piece
// atomicity rather than a data race.
//
// Thread safety: all methods are thread-safe (per-chunk locks, per-thread completion queues).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "base/check.h"
#include "base/units.h"
#include "io/queued_device.h"

namespace folio {
namespace {

using io_internal::DeviceGeometry;
using io_internal::MergedRequest;

constexpr uint64_t kChunkBytes = 1ull << 20;

class MemDevice final : public io_internal::QueuedDevice {
 public:
  explicit MemDevice(const MemDeviceOptions& o)
      : QueuedDevice(o.queue_depth, o.max_request_bytes),
        name_("mem:" + FormatSize(o.size_bytes)),
        size_bytes_(o.size_bytes),
        logical_block_bytes_(o.logical_block_bytes),
        chunk_count_((o.size_bytes + kChunkBytes - 1) / kChunkBytes),
        chunks_(std::make_unique<Chunk[]>(chunk_count_)) {}

  ~MemDevice() override {
    for (uint64_t i = 0; i < chunk_count_; ++i) std::free(chunks_[i].data);
  }

  std::string name() const override { return name_; }
  uint32_t logical_block_bytes() const override { return logical_block_bytes_; }
  uint64_t size_bytes() const override { return size_bytes_; }
  bool supports_trim() const override { return true; }

 protected:
  DeviceGeometry geometry() const override {
    return DeviceGeometry{name_, logical_block_bytes_, 0, size_bytes_, false};
  }

  Status Execute(const MergedRequest& m, const iovec* iov) override {
    switch (m.op) {
      case IoOp::kRead:
      case IoOp::kWrite: return Transfer(m, iov);
      case IoOp::kFlush: return Status::OK();
      case IoOp::kTrim: return Discard(m.offset, m.length);
    }
    return Status::OK();
  }

 private:
  struct Chunk {
    std::mutex mu;
    char* data = nullptr;  // GUARDED_BY(mu); null = all zeros
  };

  // Copies between the iovecs and the chunks, one chunk piece at a time.
  Status Transfer(const MergedRequest& m, const iovec* iov) {
    uint64_t pos = m.offset;
    for (uint32_t i = 0; i < m.iov_count; ++i) {
      char* mem = static_cast<char*>(iov[i].iov_base);
      uint64_t left = iov[i].iov_len;
      while (left > 0) {
        const uint64_t index = pos / kChunkBytes;
        const uint64_t in_chunk = pos % kChunkBytes;
        const uint64_t n = std::min(left, kChunkBytes - in_chunk);
        Chunk& c = chunks_[index];
        std::lock_guard<std::mutex> lock(c.mu);
        if (m.op == IoOp::kRead) {
          if (c.data == nullptr) {
            std::memset(mem, 0, n);
          } else {
            std::memcpy(mem, c.data + in_chunk, n);
          }
        } else {
          if (c.data == nullptr) {
            c.data = static_cast<char*>(std::calloc(1, kChunkBytes));
            if (c.data == nullptr) {
              return Status::NoSpace(name_ + ": out of memory allocating a 1M chunk at offset " +
                                     std::to_string(index * kChunkBytes));
            }
          }
          std::memcpy(c.data + in_chunk, mem, n);
        }
        mem += n;
        pos += n;
        left -= n;
      }
    }
    FOLIO_CHECK(pos == m.offset + m.length);
    return Status::OK();
  }

  Status Discard(uint64_t offset, uint64_t length) {
    uint64_t pos = offset;
    const uint64_t end = offset + length;
    while (pos < end) {
      const uint64_t index = pos / kChunkBytes;
      const uint64_t in_chunk = pos % kChunkBytes;
      const uint64_t n = std::min(end - pos, kChunkBytes - in_chunk);
      Chunk& c = chunks_[index];
      std::lock_guard<std::mutex> lock(c.mu);
      if (c.data != nullptr) {
        if (n == kChunkBytes) {
          std::free(c.data);
          c.data = nullptr;
        } else {
          std::memset(c.data + in_chunk, 0, n);
        }
      }
      pos += n;
    }
    return Status::OK();
  }

  const std::string name_;
  const uint64_t size_bytes_;
  const uint32_t logical_block_bytes_;
  const uint64_t chunk_count_;
  std::unique_ptr<Chunk[]> chunks_;
};

}  // namespace

Result<std::unique_ptr<BlockDevice>> NewMemDevice(const MemDeviceOptions& options) {
  const uint32_t lbs = options.logical_block_bytes;
  if (lbs < 512 || !IsPowerOfTwo(lbs)) {
    return Status::InvalidArgument("mem device: logical block size " + std::to_string(lbs) +
                                   " must be a power of two >= 512 (e.g. 512 or 4096)");
  }
  if (options.size_bytes == 0 || options.size_bytes % lbs != 0) {
    return Status::InvalidArgument("mem device: size " + std::to_string(options.size_bytes) +
                                   " must be a positive multiple of the " + std::to_string(lbs) +
                                   "-byte logical block size (e.g. 64M)");
  }
  if (options.queue_depth == 0 || options.max_request_bytes < lbs) {
    return Status::InvalidArgument("mem device: queue depth must be >= 1 and max request bytes"
                                   " >= the logical block size");
  }
  return std::unique_ptr<BlockDevice>(std::make_unique<MemDevice>(options));
}

}  // namespace folio
