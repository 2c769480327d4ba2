// ForwardingDevice: a BlockDevice that passes every call to another one, the base of a wrapper
// that changes or adds to a few of them: the CLI's LockedDevice (device_spec.cc, which also
// owns the device and its path locks) and the tests' devices that gate, slow or fail one call
// (io_test_util.h). RegisterArena keeps BlockDevice's no-op: the inner device gets the arena's
// fixed buffers only from a wrapper that overrides it to say so (LockedDevice does).
//
// Thread safety: as the inner device's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "folio/block_device.h"

namespace folio {

class ForwardingDevice : public BlockDevice {
 public:
  // inner: not owned; it outlives this device.
  explicit ForwardingDevice(BlockDevice* inner) : inner_(inner) {}
  std::string name() const override { return inner_->name(); }
  uint32_t logical_block_bytes() const override { return inner_->logical_block_bytes(); }
  uint64_t size_bytes() const override { return inner_->size_bytes(); }
  uint32_t queue_depth() const override { return inner_->queue_depth(); }
  uint64_t max_request_bytes() const override { return inner_->max_request_bytes(); }
  bool supports_trim() const override { return inner_->supports_trim(); }
  Status Submit(std::span<IoRequest* const> batch) override { return inner_->Submit(batch); }
  Result<size_t> Poll(size_t min_complete) override { return inner_->Poll(min_complete); }
  size_t InFlight() const override { return inner_->InFlight(); }
  DeviceStatsSnapshot stats() const override { return inner_->stats(); }
  void ResetStats() override { inner_->ResetStats(); }

 protected:
  BlockDevice* forward_to() const { return inner_; }

 private:
  BlockDevice* const inner_;
};

}  // namespace folio
