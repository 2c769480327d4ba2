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

bool BuddyAllocator::TakeFreeIn(uint32_t first, int order, std::vector<Folio*>* out) {
  const uint32_t pages = static_cast<uint32_t>(OrderPages(order));
  FOLIO_CHECK(first % pages == 0 && first + pages <= frame_count_);
  // A block of order >= `order` holding the range has its head at first rounded down to it.
  for (int o = order; o <= kMaxOrder; ++o) {
    const uint32_t h = first & ~static_cast<uint32_t>(OrderPages(o) - 1);
    Folio* head = &descs_[h];
    const uint8_t state = LoadState(head);
    if (state == kStateTail || head->order < o) continue;
    if (state != kStateFree) return false;  // one block in use holds the whole range
    // A free block covers the range: split it down to the range.
    o = head->order;
    Remove(head, o);
    uint32_t cur = h;
    while (o > order) {
      ++splits_[o];
      --o;
      const uint32_t half = static_cast<uint32_t>(OrderPages(o));
      Folio* lower = &descs_[cur];
      Folio* upper = &descs_[cur + half];
      Folio* keep = first >= cur + half ? upper : lower;
      Folio* other = keep == lower ? upper : lower;
      other->order = static_cast<uint8_t>(o);
      StoreState(other, kStateFree);
      Push(other, o);
      cur = keep->frame;
    }
    Folio* block = &descs_[cur];
    block->order = static_cast<uint8_t>(order);
    StoreState(block, kStateAllocated);
    out->push_back(block);
    return true;
  }
  // The range is made of smaller blocks: take the free ones.
  for (uint32_t f = first; f < first + pages;) {
    Folio* head = &descs_[f];
    const uint8_t state = LoadState(head);
    FOLIO_CHECK_MSG(state != kStateTail, "buddy: a tail frame where a block should start");
    const int o = head->order;
    if (state == kStateFree) {
      Remove(head, o);
      StoreState(head, kStateAllocated);
      out->push_back(head);
    }
    f += static_cast<uint32_t>(OrderPages(o));
  }
  return true;
}

bool BuddyAllocator::Assemble(uint32_t first, int order, std::span<Folio* const> pieces) {
  const uint32_t end = first + static_cast<uint32_t>(OrderPages(order));
  uint32_t cur = first;
  for (const Folio* p : pieces) {
    if (p->frame != cur || LoadState(p) != kStateAllocated || p->order > order) return false;
    cur += static_cast<uint32_t>(OrderPages(p->order));
    if (cur > end) return false;
  }
  if (cur != end) return false;
  for (Folio* p : pieces) {
    if (p->frame == first) continue;
    StoreState(p, kStateTail);
    p->order = 0;
  }
  descs_[first].order = static_cast<uint8_t>(order);
  return true;
}

int BuddyAllocator::LargestFreeOrder() const {
  if (nonempty_mask_ == 0) return -1;
  return 31 - std::countl_zero(nonempty_mask_);
}

}  // namespace folio::mem
