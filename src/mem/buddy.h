// BuddyAllocator: the global free lists of a FolioArena. Blocks of 2^order frames (order
// 0..kMaxOrder), each aligned to its own size, are kept on one intrusive doubly linked list per
// order (through Folio::prev / next of the block's head descriptor). Alloc takes the smallest
// free block of at least the wanted order and splits it, pushing the upper halves back; Free
// coalesces a block with its buddy (frame ^ 2^order) for as long as the buddy is a free block
// of the same order, so free memory is always fully coalesced.
//
// Descriptor state (Folio::alloc_state) is the allocator's map of the arena:
//   kStateTail       a frame inside a block (not a head); also every frame at start
//   kStateFree       head of a block on this allocator's free list of order Folio::order
//   kStateAllocated  head of a block handed to a user
//   kStateCached     head of a free block parked in a per-thread cache (not on a list here)
// Only heads carry an order; a tail's order is 0. alloc_state is read and written through
// relaxed atomic_ref: the buddy lock holder reads a neighbour's state while the neighbour's
// owner moves it between allocated and cached under a thread-cache lock. Both are "not free",
// so the race is harmless, but it must not be a data race.
//
// Thread safety: none. FolioArena serialises every call with its buddy lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "folio/arena.h"

namespace folio::mem {

enum AllocState : uint8_t {
  kStateTail = 0,
  kStateFree = 1,
  kStateAllocated = 2,
  kStateCached = 3,
};

inline uint8_t LoadState(const Folio* f) {
  return std::atomic_ref<uint8_t>(const_cast<uint8_t&>(f->alloc_state))
      .load(std::memory_order_relaxed);
}
inline void StoreState(Folio* f, uint8_t state) {
  std::atomic_ref<uint8_t>(f->alloc_state).store(state, std::memory_order_relaxed);
}

class BuddyAllocator {
 public:
  // REQUIRES: frame_count is a multiple of 2^kMaxOrder; descs[i].frame == i; all descriptors
  // in their default state. Puts the whole range on the order-kMaxOrder list.
  BuddyAllocator(Folio* descs, uint32_t frame_count);
  BuddyAllocator(const BuddyAllocator&) = delete;
  BuddyAllocator& operator=(const BuddyAllocator&) = delete;

  // Returns the head of a block of exactly `order`, marked `state` (kStateAllocated or
  // kStateCached), or nullptr when no block of order >= `order` is free.
  Folio* Alloc(int order, AllocState state);
  // Returns the block headed by `head` (state allocated or cached, order in head->order) to
  // the free lists, merging it with free buddies.
  void Free(Folio* head);

  // Compaction (FolioArena::TakeFreeIn / AssembleBlock). Takes every free block inside the
  // aligned range [first, first + 2^order) off the free lists, marks it allocated and appends
  // it to *out; a larger free block holding the range is split so that exactly the range is
  // taken. Blocks in the range that are allocated or cached stay where they are. Returns false
  // (taking nothing) when one allocated or cached block holds the whole range.
  // REQUIRES: first a multiple of 2^order.
  bool TakeFreeIn(uint32_t first, int order, std::vector<Folio*>* out);
  // Merges allocated blocks that tile [first, first + 2^order) exactly into one allocated
  // block of `order` headed by descs[first]. Returns false (changing nothing) when `pieces`
  // (sorted by frame) are not allocated heads tiling the range.
  bool Assemble(uint32_t first, int order, std::span<Folio* const> pieces);

  uint64_t free_count(int order) const { return counts_[order]; }
  uint64_t splits(int order) const { return splits_[order]; }
  uint64_t merges(int order) const { return merges_[order]; }
  // Largest order with a free block, or -1.
  int LargestFreeOrder() const;
  // First block on the free list of `order` (walk with ->next), for invariant checks.
  const Folio* list_head(int order) const { return heads_[order]; }

 private:
  void Push(Folio* f, int order);
  void Remove(Folio* f, int order);

  Folio* const descs_;
  const uint32_t frame_count_;
  Folio* heads_[kNumOrders] = {};
  uint64_t counts_[kNumOrders] = {};
  uint64_t splits_[kNumOrders] = {};
  uint64_t merges_[kNumOrders] = {};
  uint32_t nonempty_mask_ = 0;  // bit o set <=> heads_[o] != nullptr
};

}  // namespace folio::mem
