// CompletionQueue: a thread's completed device requests whose callbacks have not run yet.
//
// Reaping pushes (merge-chain head, status); Poll pops and completes each chain outside the
// reaping loop. Pop copies the entry out before the callbacks run, so a callback may re-enter
// Submit / Poll of the same device (pushing and popping this queue) safely. Storage is a
// vector reused across batches: no allocation once it reached the working size.
//
// Thread safety: none; owned by one (device, thread) state.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "folio/block_device.h"

namespace folio::io_internal {

class CompletionQueue {
 public:
  struct Item {
    IoRequest* head = nullptr;
    Status status;
  };

  void Reserve(size_t n) { items_.reserve(n); }
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }

  void Push(IoRequest* head, Status status) { items_.push_back(Item{head, std::move(status)}); }

  // REQUIRES: !empty().
  Item Pop() {
    Item item = std::move(items_[head_++]);
    if (head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= items_.size()) {
      // Keep a queue that never fully drains (callbacks keep it busy) bounded.
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    return item;
  }

 private:
  std::vector<Item> items_;
  size_t head_ = 0;
};

}  // namespace folio::io_internal
