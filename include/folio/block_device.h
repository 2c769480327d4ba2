// BlockDevice: an asynchronous, batched block device (a file or block device through io_uring,
// a pread/pwrite fallback, memory, a fault-injecting wrapper, and later a RAID volume).
//
// Model: a thread fills IoRequests, hands a batch to Submit(), and later calls Poll() to reap
// completions. Completions of the requests a thread submitted are delivered to that same thread
// by its own Poll() calls: each request's `done` callback runs there, after the device has
// finished reaping the batch (never inside the reaping loop, never inside Submit()). Many
// requests may be in flight from one thread at once, up to queue_depth() device requests;
// Submit() of more than the free depth waits for room by reaping completions itself (their
// callbacks run at the next Poll()).
//
// Ordering: requests in flight together (in one batch or not) are unordered, as on a disk.
// A Flush makes durable the writes that completed before the Flush was submitted.
//
// Requests in one Submit() batch that touch adjacent byte ranges with the same operation are
// merged into one device request up to max_request_bytes (default 1 MiB); the merged request's
// completion completes each original request. Statistics count requests as they reach the
// device (after merging), like blktrace's per-device summary.
//
// Thread safety: every method is thread-safe. Submit/Poll operate on the calling thread's
// queue; a request must be polled to completion by the thread that submitted it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "folio/histogram.h"
#include "folio/status.h"

namespace folio {

class FolioArena;

enum class IoOp : uint8_t { kRead, kWrite, kFlush, kTrim };
std::string_view IoOpName(IoOp op);

struct IoRequest;
using IoDoneFn = void (*)(IoRequest* req);

// One I/O. The submitter owns the memory of the request and of `buf`; both must stay valid
// (not on an unwinding stack) until `done` ran or the request's status was reaped.
struct IoRequest {
  IoOp op = IoOp::kRead;
  uint64_t offset = 0;     // bytes from the start of the device
  uint64_t length = 0;     // bytes (0 for kFlush)
  char* buf = nullptr;     // kRead / kWrite: length bytes
  IoDoneFn done = nullptr; // called once on completion in the submitting thread (may be null)
  void* ctx = nullptr;     // for the submitter
  Status status;           // set before done runs
  // Set by the device when the request completes (release): a waiter may spin on it.
  std::atomic<bool> completed{false};

  // Device-private.
  IoRequest* next_in_merge = nullptr;
  uint64_t submit_ns = 0;

  void Reset(IoOp o, uint64_t off, uint64_t len, char* b) {
    op = o;
    offset = off;
    length = len;
    buf = b;
    status = Status::OK();
    completed.store(false, std::memory_order_relaxed);
    next_in_merge = nullptr;
  }
};

// Counters of requests as they reached the device (after merging).
struct DeviceStatsSnapshot {
  uint64_t read_requests = 0;
  uint64_t read_bytes = 0;
  uint64_t write_requests = 0;
  uint64_t write_bytes = 0;
  uint64_t flushes = 0;
  uint64_t trims = 0;
  uint64_t read_merges = 0;   // submitted reads absorbed into another request
  uint64_t write_merges = 0;
  uint64_t errors = 0;
  HistogramSnapshot read_request_bytes;
  HistogramSnapshot write_request_bytes;
  HistogramSnapshot latency_ns;  // submit -> completion of each device request
};

class DeviceStats {
 public:
  // Without histograms the snapshot's three are empty: a device made per file (Folio FS's
  // InodeDevice, one per cached file) saves their 6 KiB.
  explicit DeviceStats(bool histograms = true)
      : histograms_(histograms ? std::make_unique<Histograms>() : nullptr) {}
  void RecordRequest(IoOp op, uint64_t bytes, uint64_t latency_ns);
  void RecordMerge(IoOp op);
  void RecordError() { errors_.fetch_add(1, std::memory_order_relaxed); }
  DeviceStatsSnapshot Snapshot() const;
  void Reset();

 private:
  std::atomic<uint64_t> read_requests_{0}, read_bytes_{0}, write_requests_{0}, write_bytes_{0};
  std::atomic<uint64_t> flushes_{0}, trims_{0}, read_merges_{0}, write_merges_{0}, errors_{0};
  struct Histograms {
    Histogram read_request_bytes, write_request_bytes, latency_ns;
  };
  const std::unique_ptr<Histograms> histograms_;
};

class BlockDevice {
 public:
  virtual ~BlockDevice() = default;

  // Human-readable identity ("file:/path", "mem:64M", "fault(file:/path)").
  virtual std::string name() const = 0;
  // Required alignment of offset, length and (for O_DIRECT) buffer addresses.
  virtual uint32_t logical_block_bytes() const = 0;
  virtual uint64_t size_bytes() const = 0;
  virtual uint32_t queue_depth() const = 0;
  virtual uint64_t max_request_bytes() const = 0;
  virtual bool supports_trim() const = 0;

  // Queues a batch. Validates each request first (alignment, range): an invalid request is
  // completed with InvalidArgument (naming the required alignment / device size) through the
  // normal completion path, never dropped. Returns non-OK only if the device cannot accept
  // I/O at all (e.g. it was closed).
  // Context: may block while waiting for queue room (reaping this thread's completions).
  virtual Status Submit(std::span<IoRequest* const> batch) = 0;

  // Reaps completions of this thread's requests, waiting until at least min_complete
  // requests (original, pre-merge) have completed or nothing of this thread is in flight.
  // Runs their `done` callbacks after reaping. Returns how many completed.
  virtual Result<size_t> Poll(size_t min_complete) = 0;

  // Requests of the calling thread submitted but not yet reaped.
  virtual size_t InFlight() const = 0;

  // Registers arena memory with the device (io_uring fixed buffers) so requests whose buffer
  // lies in the arena avoid per-request page pinning. Optional; a no-op where meaningless.
  virtual Status RegisterArena(FolioArena* /*arena*/) { return Status::OK(); }

  virtual DeviceStatsSnapshot stats() const = 0;
  virtual void ResetStats() = 0;

  // Synchronous helpers built on Submit + Poll. Buffers follow the same alignment rules.
  Status Read(uint64_t offset, void* buf, uint64_t length);
  Status Write(uint64_t offset, const void* buf, uint64_t length);
  Status Flush();
  Status Trim(uint64_t offset, uint64_t length);
  // Submits the request and polls until it (not just any request) completed.
  Status SubmitAndWait(IoRequest* req);
};

// ---- Factories -------------------------------------------------------------------------

enum class FileEngine { kAuto, kUring, kSync };
std::string_view FileEngineName(FileEngine e);

struct FileDeviceOptions {
  FileEngine engine = FileEngine::kAuto;  // auto: io_uring, else sync with a one-line warning
  bool direct = true;                     // O_DIRECT
  bool create = false;                    // create the file if missing
  uint64_t size_bytes = 0;                // with create (or when larger than the file): extend
  uint32_t queue_depth = 64;
  uint64_t max_request_bytes = 1ull << 20;
  bool read_only = false;
};

// Opens a regular file or block device. Errors: NotFound naming a missing path;
// NotSupported when the file system refuses O_DIRECT ("<path>: file system does not support
// O_DIRECT; use --direct 0"); InvalidArgument for a size not a multiple of 4096.
Result<std::unique_ptr<BlockDevice>> OpenFileDevice(const std::string& path,
                                                    const FileDeviceOptions& options);

struct MemDeviceOptions {
  uint64_t size_bytes = 64ull << 20;
  uint32_t logical_block_bytes = 512;
  uint32_t queue_depth = 64;
  uint64_t max_request_bytes = 1ull << 20;
};
Result<std::unique_ptr<BlockDevice>> NewMemDevice(const MemDeviceOptions& options);

}  // namespace folio
