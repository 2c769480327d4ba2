// RequestStats: what the kernel asked a FUSE server for, counted by the adapter as requests
// arrive: requests and errors per operation, the sizes of reads and writes, and the time the
// server took to answer them.
//
// Thread safety: Record* run concurrently from every worker thread (relaxed atomics and
// lock-free histograms); Snapshot may run at any time and sees each counter at a recent value.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "folio/histogram.h"

namespace folio::fuse {

enum class FuseOp : uint8_t {
  kInit,
  kLookup,
  kForget,
  kGetAttr,
  kSetAttr,
  kOpen,
  kRead,
  kWrite,
  kFlush,
  kRelease,
  kFsync,
  kOpenDir,
  kReadDir,
  kReleaseDir,
  kStatFs,
  kFallocate,
  kAccess,
  kCreate,
  kMknod,
  kMkdir,
  kUnlink,
  kRmdir,
  kSymlink,
  kReadLink,
  kRename,
  kLink,
  kXattr,  // get / set / list / remove
  kLock,   // flock, getlk, setlk
  kLseek,
  kCopyFileRange,
  kOther,  // namespace changes and the rest: refused by the adapter
  kCount,
};
inline constexpr size_t kNumFuseOps = static_cast<size_t>(FuseOp::kCount);
std::string_view FuseOpName(FuseOp op);

struct RequestStatsSnapshot {
  std::array<uint64_t, kNumFuseOps> requests{};
  std::array<uint64_t, kNumFuseOps> errors{};  // replied with an errno
  HistogramSnapshot read_request_bytes;        // size asked for
  HistogramSnapshot write_request_bytes;
  HistogramSnapshot read_latency_ns;           // from the request's arrival to the reply
  HistogramSnapshot write_latency_ns;
  HistogramSnapshot fsync_latency_ns;
  uint64_t read_bytes = 0;                     // bytes replied
  uint64_t write_bytes = 0;                    // bytes accepted
};

class RequestStats {
 public:
  void RecordRequest(FuseOp op) { requests_[Index(op)].fetch_add(1, std::memory_order_relaxed); }
  void RecordError(FuseOp op) { errors_[Index(op)].fetch_add(1, std::memory_order_relaxed); }
  void RecordRead(uint64_t asked_bytes, uint64_t done_bytes, uint64_t latency_ns);
  void RecordWrite(uint64_t asked_bytes, uint64_t done_bytes, uint64_t latency_ns);
  void RecordFsync(uint64_t latency_ns) { fsync_latency_ns_.Record(latency_ns); }
  RequestStatsSnapshot Snapshot() const;

 private:
  static size_t Index(FuseOp op) { return static_cast<size_t>(op); }

  std::array<std::atomic<uint64_t>, kNumFuseOps> requests_{};
  std::array<std::atomic<uint64_t>, kNumFuseOps> errors_{};
  std::atomic<uint64_t> read_bytes_{0};
  std::atomic<uint64_t> write_bytes_{0};
  Histogram read_request_bytes_, write_request_bytes_;
  Histogram read_latency_ns_, write_latency_ns_, fsync_latency_ns_;
};

}  // namespace folio::fuse
