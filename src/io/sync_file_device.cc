// SyncFileDevice: the pread / pwrite engine of the file device, used when io_uring is
// unavailable or asked for (engine=sync). Each merged request runs with preadv / pwritev /
// fsync / fallocate inside Submit; completions are delivered by Poll.
//
// Thread safety: all methods are thread-safe (positioned I/O on a shared fd).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "io/file_device_impl.h"
#include "io/queued_device.h"

namespace folio::io_internal {
namespace {

class SyncFileDevice final : public QueuedDevice {
 public:
  SyncFileDevice(OpenedFile file, const FileDeviceOptions& options)
      : QueuedDevice(options.queue_depth, options.max_request_bytes), file_(std::move(file)) {}

  std::string name() const override { return file_.name; }
  uint32_t logical_block_bytes() const override { return file_.logical_block_bytes; }
  uint64_t size_bytes() const override { return file_.size_bytes; }
  bool supports_trim() const override { return !file_.read_only; }

 protected:
  DeviceGeometry geometry() const override {
    return DeviceGeometry{file_.name, file_.logical_block_bytes, file_.mem_align_bytes,
                          file_.size_bytes, file_.read_only};
  }

  Status Execute(const MergedRequest& m, const iovec* iov) override {
    FOLIO_RETURN_IF_ERROR(shrink_.Check(file_));
    switch (m.op) {
      case IoOp::kRead:
      case IoOp::kWrite: return Transfer(m, iov);
      case IoOp::kFlush:
        while (::fsync(file_.fd) != 0) {
          if (errno != EINTR) return Status::FromErrno(errno, file_.name + ": fsync");
        }
        return shrink_.AfterFlush(file_);
      case IoOp::kTrim:
        while (::fallocate(file_.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                           static_cast<off_t>(m.offset), static_cast<off_t>(m.length)) != 0) {
          if (errno != EINTR) return Status::FromErrno(errno, Context(m));
        }
        return Status::OK();
    }
    return Status::OK();
  }

 private:
  static std::string Describe(const MergedRequest& m) {
    return std::string(IoOpName(m.op)) + " of " + std::to_string(m.length) + " bytes at offset " +
           std::to_string(m.offset);
  }
  std::string Context(const MergedRequest& m) const { return file_.name + ": " + Describe(m); }

  Status Transfer(const MergedRequest& m, const iovec* iov) {
    iovec rest[RequestMerger::kMaxSegments];
    uint64_t done = 0;
    for (;;) {
      const iovec* v = iov;
      int n = static_cast<int>(m.iov_count);
      if (done > 0) {
        n = static_cast<int>(ChainIovecs(m.head, done, rest, RequestMerger::kMaxSegments));
        v = rest;
      }
      const off_t pos = static_cast<off_t>(m.offset + done);
      ssize_t res = m.op == IoOp::kRead ? ::preadv(file_.fd, v, n, pos)
                                        : ::pwritev(file_.fd, v, n, pos);
      if (res < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return Status::FromErrno(errno, Context(m));
      }
      switch (AfterTransfer(m.op, m.length, file_.logical_block_bytes,
                            static_cast<uint64_t>(res), &done)) {
        case ShortTransfer::kComplete: return Status::OK();
        case ShortTransfer::kResubmit: break;
        case ShortTransfer::kEndOfFile:
          return shrink_.ReadHitEnd(file_, Describe(m), m.offset + done);
        case ShortTransfer::kNoProgress:
          return Status::IOError(Context(m) + ": write made no progress at byte " +
                                 std::to_string(done));
      }
    }
  }

  OpenedFile file_;
  ShrinkWatch shrink_;
};

}  // namespace

std::unique_ptr<BlockDevice> NewSyncFileDevice(OpenedFile file, const FileDeviceOptions& options) {
  return std::make_unique<SyncFileDevice>(std::move(file), options);
}

}  // namespace folio::io_internal
