// LruList: the page cache's eviction clock, an intrusive doubly linked list of folios through
// Folio::prev / next, cold end at the head, hot end at the tail. Membership is mirrored in the
// kFolioLru flag. A read hit never touches the list (it only sets kFolioReferenced); the
// reclaim scan gives referenced folios a second chance by rotating them to the tail.
//
// Thread safety: none; PageCacheImpl guards it with lru_mu_ (rank 4 in lock_rank.h).
#pragma once

#include <cstdint>

#include "folio/arena.h"

namespace folio::cache {

class LruList {
 public:
  Folio* head() const { return head_; }
  uint64_t size() const { return size_; }

  // REQUIRES: f not on the list.
  void PushTail(Folio* f);
  // REQUIRES: `after` on the list, f not.
  void InsertAfter(Folio* after, Folio* f);
  // REQUIRES: f on the list.
  void Remove(Folio* f);
  // Moves f (on the list) to the tail.
  void Rotate(Folio* f) {
    Remove(f);
    PushTail(f);
  }

 private:
  Folio* head_ = nullptr;
  Folio* tail_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace folio::cache
