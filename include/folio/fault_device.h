// FaultDevice: wraps any BlockDevice and injects the faults a storage stack must survive.
//
// Fault atlas (what the layers above must recover from, and how the tests prove it):
//   fail Nth op         -> EIO on one request; cache: sticky writeback error, the next Fsync of
//                          every handle open at the error fails (errseq)
//   fail LBA range      -> EIO on any request touching [offset, offset+length); RAID: reconstruct
//   injected errno      -> the same failures with another errno (ENOSPC: a full file system;
//                          FailRange over a sparse file's holes); RAID: the member fails, as on
//                          any write error; forced assembly brings it back
//   latency model       -> no data effect; benchmarks (hdd model: seek + transfer)
//   torn write          -> only a prefix of one write lands, the write reports success or EIO
//   shrink              -> as a file truncated while in use (io/file_device_impl.h ShrinkWatch):
//                          the first read reaching past the new end, or the next flush, fails
//                          with IOError, and so does every request after it; RAID: the member
//                          fails and its data comes from parity
//   crash               -> every write not covered by a completed Flush is dropped (or, with
//                          CrashMode::kRandomSubset, each unflushed write independently kept or
//                          dropped, at write-request granularity); after Crash() all I/O fails
//                          until Restart().
//
// Durability model: the wrapper keeps an undo log of unflushed writes (the old contents of each
// range written since the last completed Flush). Crash() rolls those back on the inner device.
//
// Thread safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "folio/block_device.h"

namespace folio {

struct LatencyModel {
  enum class Kind { kNone, kFixed, kHdd } kind = Kind::kNone;
  uint64_t fixed_us = 0;
  // hdd: a request not starting where the previous one ended costs seek_us; every request
  // costs bytes / bandwidth. Requests are served one at a time (one head).
  uint64_t seek_us = 8000;
  uint64_t bandwidth_bytes_per_s = 150ull << 20;

  // Parses "none", "fixed:US", "hdd", "hdd:SEEK_US:MBPS".
  static Result<LatencyModel> Parse(std::string_view text);
  std::string ToString() const;
};

enum class CrashMode { kDropUnflushed, kRandomSubset };

// What the latency model charged since SetLatency(): the simulated device time, for tests and
// benchmarks that must not measure wall-clock time.
struct LatencyModelStats {
  uint64_t requests = 0;  // device requests (after the wrapper's merging) the model served
  uint64_t seeks = 0;     // hdd: requests that paid a seek (backward, or a long forward gap)
  uint64_t skips = 0;     // hdd: requests after a short forward gap, paid at media speed
  uint64_t busy_ns = 0;   // sum of modelled service times (seek + transfer, or fixed)
};

class FaultDevice : public BlockDevice {
 public:
  // Takes ownership of inner.
  static std::unique_ptr<FaultDevice> Wrap(std::unique_ptr<BlockDevice> inner);
  // Does not take ownership: inner must outlive the wrapper.
  static std::unique_ptr<FaultDevice> WrapUnowned(BlockDevice* inner);

  // Fail the n-th (1-based, counting from now) request of op (any op if op is empty).
  virtual void FailNth(uint64_t n) = 0;
  virtual void FailNthOf(IoOp op, uint64_t n) = 0;
  // Fail every read and/or write touching [offset, offset + length).
  virtual void FailRange(uint64_t offset, uint64_t length, bool reads, bool writes) = 0;
  // The device behaves as a file truncated to end_bytes (see the atlas above) until
  // ClearFailures. Writes before the shrink is seen land (a real file would grow back around a
  // hole); the bytes past end_bytes stay on the inner device.
  virtual void Shrink(uint64_t end_bytes) = 0;
  virtual void ClearFailures() = 0;
  // The errno every injected failure carries from now on (FailNth, FailNthOf, FailRange; EIO
  // until set): ENOSPC makes them NoSpace, as a full file system under a file device would.
  // ClearFailures() resets it to EIO.
  virtual void SetInjectedErrno(int err) = 0;
  virtual void SetLatency(const LatencyModel& model) = 0;
  // The next write lands only its first prefix_bytes (rounded down to the block size) and
  // completes with `result` (OK or an IOError).
  virtual void TearNextWrite(uint64_t prefix_bytes, bool report_error) = 0;
  // Simulated power loss: applies the crash mode to unflushed writes; all I/O then fails with
  // IOError until Restart(). seed drives kRandomSubset.
  virtual void Crash(CrashMode mode, uint64_t seed) = 0;
  virtual void Restart() = 0;
  virtual uint64_t injected_errors() const = 0;
  virtual BlockDevice* inner() const = 0;
  virtual LatencyModelStats latency_stats() const = 0;
  // Crash tracking (on by default) costs a read of the old contents and a copy of the data of
  // every write until the next flush. Turning it off (e.g. for benchmarks) forgets the log;
  // a Crash() then only makes I/O fail, it rolls nothing back.
  virtual void SetCrashTracking(bool enabled) = 0;
};

}  // namespace folio
