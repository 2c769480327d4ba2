#include "mem/buddy.h"

#include <bit>

#include "base/check.h"

namespace folio::mem {

BuddyAllocator::BuddyAllocator(Folio* descs, uint32_t frame_count)
    : descs_(descs), frame_count_(frame_count) {
  FOLIO_CHECK(frame_count % OrderPages(kMaxOrder) == 0);
  // Push in reverse so the lowest addresses are handed out first.
  for (uint32_t f = frame_count; f > 0;) {
    f -= static_cast<uint32_t>(OrderPages(kMaxOrder));
    Folio* head = &descs_[f];
    head->order = kMaxOrder;
    StoreState(head, kStateFree);
    Push(head, kMaxOrder);
  }
}

void BuddyAllocator::Push(Folio* f, int order) {
  f->prev = nullptr;
  f->next = heads_[order];
  if (heads_[order] != nullptr) heads_[order]->prev = f;
  heads_[order] = f;
  ++counts_[order];
  nonempty_mask_ |= 1u << order;
}

void BuddyAllocator::Remove(Folio* f, int order) {
  if (f->prev != nullptr) {
    f->prev->next = f->next;
  } else {
    FOLIO_CHECK(heads_[order] == f);
    heads_[order] = f->next;
  }
  if (f->next != nullptr) f->next->prev = f->prev;
  f->prev = nullptr;
  f->next = nullptr;
  --counts_[order];
  if (heads_[order] == nullptr) nonempty_mask_ &= ~(1u << order);
}

Folio* BuddyAllocator::Alloc(int order, AllocState state) {
  uint32_t mask = nonempty_mask_ >> order;
  if (mask == 0) return nullptr;
  int o = order + std::countr_zero(mask);
  Folio* head = heads_[o];
  Remove(head, o);
  while (o > order) {
    ++splits_[o];
    --o;
    Folio* upper = &descs_[head->frame + OrderPages(o)];
    upper->order = static_cast<uint8_t>(o);
    StoreState(upper, kStateFree);
    Push(upper, o);
  }
  head->order = static_cast<uint8_t>(order);
  StoreState(head, state);
  return head;
}

void BuddyAllocator::Free(Folio* head) {
  uint8_t state = LoadState(head);
  FOLIO_CHECK(state == kStateAllocated || state == kStateCached);
  uint32_t frame = head->frame;
  int order = head->order;
  FOLIO_CHECK(order <= kMaxOrder && frame % OrderPages(order) == 0);
  while (order < kMaxOrder) {
    uint32_t buddy_frame = frame ^ static_cast<uint32_t>(OrderPages(order));
    FOLIO_DCHECK(buddy_frame < frame_count_);
    Folio* buddy = &descs_[buddy_frame];
    if (LoadState(buddy) != kStateFree || buddy->order != order) break;
    Remove(buddy, order);
    ++merges_[order];
    // The upper of the two heads becomes a tail of the merged block.
    Folio* upper = buddy_frame > frame ? buddy : &descs_[frame];
    StoreState(upper, kStateTail);
    upper->order = 0;
    frame &= ~static_cast<uint32_t>(OrderPages(order));
    ++order;
  }
  Folio* merged = &descs_[frame];
  merged->order = static_cast<uint8_t>(order);
  StoreState(merged, kStateFree);
  Push(merged, order);
}

int BuddyAllocator::LargestFreeOrder() const {
  if (nonempty_mask_ == 0) return -1;
  return 31 - std::countl_zero(nonempty_mask_);
}

}  // namespace folio::mem
