// BlockBufferPool: spare write-log block buffers (InodeDevice), kept for the next block to
// fill instead of being freed once their block is durable.
//
// A block buffer is a few MiB (a block's sector encoding, sector_codec.h): a fresh one is a
// new mapping that page-faults on every 4 KiB page (in a guest VM about as costly as the copy
// itself), and freeing it unmaps it again. A sequential write fills and frees one per block;
// reusing them keeps the pages mapped. At most spares_max buffers are kept (the rest are
// freed), only of the pool's size.
//
// Thread safety: thread-safe; its mutex is a leaf (taken under InodeDevice::mu_).
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace folio::fs {

class BlockBufferPool {
 public:
  BlockBufferPool(size_t buffer_bytes, size_t spares_max)
      : buffer_bytes_(buffer_bytes), spares_max_(spares_max) {}

  // A buffer of buffer_bytes (its bytes unspecified: a spare's old ones, or zeros).
  std::vector<char> Take();
  // Keeps buf, bytes and all, when it is buffer_bytes long and the pool has space; frees it
  // otherwise.
  void Give(std::vector<char> buf);
  size_t spares() const;

 private:
  const size_t buffer_bytes_;
  const size_t spares_max_;
  mutable std::mutex mu_;
  std::vector<std::vector<char>> spares_;  // GUARDED_BY(mu_)
};

}  // namespace folio::fs
