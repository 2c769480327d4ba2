// RequestMerger: turns one Submit() batch into device requests (the block layer's plug merge).
//
// The batch is ordered by (op, offset), ties kept in submission order, and runs of reads or of
// writes whose byte ranges are exactly adjacent are merged while the merged request stays within
// max_request_bytes and kMaxSegments iovec segments (segments whose buffers are contiguous in
// memory coalesce into one). Flush and trim never merge. A single request larger than
// max_request_bytes passes through whole (it is never split).
//
// Each output request links its original requests through IoRequest::next_in_merge (the
// chain starts at `head`, in offset order); completing the device request completes each of
// them with the same status.
//
// The merger owns reusable vectors: after the first batches of a given size, Build() does not
// allocate. Keep one merger per (device, thread).
//
// Thread safety: none; one thread uses a merger at a time.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "folio/block_device.h"

namespace folio::io_internal {

struct MergedRequest {
  IoOp op = IoOp::kRead;
  uint64_t offset = 0;
  uint64_t length = 0;
  IoRequest* head = nullptr;  // originals, linked by next_in_merge
  uint32_t nr_requests = 0;
  uint32_t iov_begin = 0;     // into RequestMerger::iovecs(); 0 segments for flush / trim
  uint32_t iov_count = 0;
};

class RequestMerger {
 public:
  // IOV_MAX is 1024 on Linux; a smaller cap keeps per-request iovec copies cheap.
  static constexpr uint32_t kMaxSegments = 256;

  // Pre-sizes the vectors for batches of up to n requests.
  void Reserve(size_t n);
  // Starts a new batch.
  void Clear();
  // Adds a validated request of the batch. REQUIRES: reads / writes have length > 0.
  void Add(IoRequest* req);
  size_t added() const { return pending_.size(); }

  // Builds the device requests of the batch added since Clear(): merged reads of at most
  // max_request_bytes, merged writes of at most max_write_bytes (0: max_request_bytes).
  // Returns the number of original requests absorbed into another request.
  size_t Build(uint64_t max_request_bytes, uint64_t max_write_bytes = 0);

  std::span<const MergedRequest> requests() const { return out_; }
  const iovec* iovecs(const MergedRequest& m) const { return iovs_.data() + m.iov_begin; }

 private:
  struct Entry {
    IoRequest* req;
    uint32_t seq;  // position in the batch: makes the sort stable without a temp buffer
  };
  std::vector<Entry> pending_;
  std::vector<MergedRequest> out_;
  std::vector<iovec> iovs_;
};

}  // namespace folio::io_internal
