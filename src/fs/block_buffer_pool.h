// BlockBufferPool: spare write-log block buffers (InodeDevice), kept for the next block to
// fill instead of being freed once their block is durable.
//
// A block buffer is a few MiB: a fresh one is a new mapping that page-faults on every 4 KiB
// page as the block fills (in a guest VM about as costly as the copy itself), and freeing it
// unmaps it again. A sequential write fills and frees one per block; reusing them keeps the
// pages mapped. At most spares_max buffers are kept (the rest are freed), only of the pool's
// size.
//
// Thread safety: thread-safe; its mutex is a leaf (taken under InodeDevice::mu_).
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace folio::fs {

class BlockBufferPool {
 public:
  BlockBufferPool(size_t block_bytes, size_t spares_max)
      : block_bytes_(block_bytes), spares_max_(spares_max) {}

  // An empty buffer with room for a block: a spare, else a new one.
  std::vector<char> Take();
  // Keeps buf (contents dropped) when it has exactly a block's room and the pool has space;
  // frees it otherwise.
  void Give(std::vector<char> buf);
  size_t spares() const;

 private:
  const size_t block_bytes_;
  const size_t spares_max_;
  mutable std::mutex mu_;
  std::vector<std::vector<char>> spares_;  // GUARDED_BY(mu_)
};

}  // namespace folio::fs
