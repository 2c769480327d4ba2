// BlockBufferPool (see the header).
#include "fs/block_buffer_pool.h"

#include <utility>

namespace folio::fs {

std::vector<char> BlockBufferPool::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!spares_.empty()) {
      std::vector<char> buf = std::move(spares_.back());
      spares_.pop_back();
      return buf;
    }
  }
  return std::vector<char>(buffer_bytes_);
}

void BlockBufferPool::Give(std::vector<char> buf) {
  if (buf.size() != buffer_bytes_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (spares_.size() < spares_max_) spares_.push_back(std::move(buf));
}

size_t BlockBufferPool::spares() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spares_.size();
}

}  // namespace folio::fs
