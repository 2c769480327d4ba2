// QueuedDevice: base of the devices that execute I/O synchronously inside Submit (the pread /
// pwrite file device and the memory device) while keeping the asynchronous contract.
//
// Submit validates, merges the batch (RequestMerger), executes each merged request through
// Execute(), and queues its completion on the calling thread's CompletionQueue; Poll runs the
// callbacks. Callbacks never run inside Submit.
//
// Thread safety: Submit / Poll / InFlight use the calling thread's state; Execute must be
// thread-safe in subclasses; stats are atomic.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>

#include "folio/block_device.h"
#include "io/device_util.h"
#include "io/per_thread.h"
#include "io/request_merger.h"

namespace folio::io_internal {

class QueuedDevice : public BlockDevice {
 public:
  uint32_t queue_depth() const override { return queue_depth_; }
  uint64_t max_request_bytes() const override { return max_request_bytes_; }

  Status Submit(std::span<IoRequest* const> batch) override;
  Result<size_t> Poll(size_t min_complete) override;
  size_t InFlight() const override;

  DeviceStatsSnapshot stats() const override { return stats_.Snapshot(); }
  void ResetStats() override { stats_.Reset(); }

 protected:
  // histograms: whether stats() keeps request size and latency histograms (DeviceStats).
  // max_write_bytes: the largest merged write Execute gets (0: max_request_bytes).
  QueuedDevice(uint32_t queue_depth, uint64_t max_request_bytes, bool histograms = true,
               uint64_t max_write_bytes = 0);

  // Performs one merged request (iov has m.iov_count segments for reads and writes).
  // Context: called from Submit of any thread, concurrently; must be thread-safe.
  virtual Status Execute(const MergedRequest& m, const iovec* iov) = 0;
  // Geometry for validation; its name must stay valid for the device's lifetime.
  virtual DeviceGeometry geometry() const = 0;

 private:
  struct State;
  Result<State*> GetState();

  const uint32_t queue_depth_;
  const uint64_t max_request_bytes_;
  const uint64_t max_write_bytes_;
  DeviceStats stats_;
  PerThreadRegistry threads_;  // last: thread states die before the rest of the device
};

}  // namespace folio::io_internal
