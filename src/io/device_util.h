// Helpers shared by every BlockDevice implementation: request validation, completion of merge
// chains, and the arithmetic of short transfers.
//
// Thread safety: pure functions, except CompleteChain which runs callbacks (see there).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "folio/block_device.h"

namespace folio::io_internal {

// What validation needs to know about a device.
struct DeviceGeometry {
  std::string_view name;
  uint32_t logical_block_bytes = 512;
  uint32_t mem_align_bytes = 0;  // required buffer address alignment (O_DIRECT), 0 = none
  uint64_t size_bytes = 0;
  bool read_only = false;
};

// Returns OK or an InvalidArgument (NotSupported for a write to a read-only device) naming
// the device, the offending value and the required alignment or size.
Status ValidateRequest(const IoRequest& req, const DeviceGeometry& geometry);

// Completes every original request of the merge chain starting at head with `status`:
// for each, in chain order, clears next_in_merge, sets status, decrements *in_flight, sets
// `completed` (release) and runs `done`. The request is not touched after `done` ran (it may
// free or reuse it). Returns how many requests completed.
// Context: runs callbacks; call outside any reaping loop and without device locks held.
size_t CompleteChain(IoRequest* head, const Status& status, uint64_t* in_flight);

// Number of requests in the chain starting at head.
size_t ChainLength(const IoRequest* head);

// Fills out[0..max) with the buffers of the chain starting at head, skipping the first
// skip_bytes of the merged range; adjacent buffers are coalesced. Returns the count.
// REQUIRES: the chain's buffers fit in max segments (they did when the chain was merged).
size_t ChainIovecs(const IoRequest* head, uint64_t skip_bytes, iovec* out, size_t max);

// What to do after a transfer of res >= 0 bytes at position *done_bytes of a request of
// length_bytes (file devices; O_DIRECT requires block-aligned resubmission).
enum class ShortTransfer {
  kComplete,   // everything transferred
  kResubmit,   // continue from the updated *done_bytes (block-aligned)
  kEndOfFile,  // a read met end of file at *done_bytes: the file shrank (ShrinkWatch)
  kNoProgress, // a write made no progress: fail
};
ShortTransfer AfterTransfer(IoOp op, uint64_t length_bytes, uint32_t logical_block_bytes,
                            uint64_t res, uint64_t* done_bytes);

}  // namespace folio::io_internal
