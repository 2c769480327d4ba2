#include "cache/lru.h"

#include "base/check.h"

namespace folio::cache {

void LruList::PushTail(Folio* f) {
  FOLIO_DCHECK(!f->TestFlag(kFolioLru));
  f->prev = tail_;
  f->next = nullptr;
  if (tail_ != nullptr) {
    tail_->next = f;
  } else {
    head_ = f;
  }
  tail_ = f;
  ++size_;
  f->SetFlag(kFolioLru);
}

void LruList::InsertAfter(Folio* after, Folio* f) {
  FOLIO_DCHECK(after->TestFlag(kFolioLru) && !f->TestFlag(kFolioLru));
  f->prev = after;
  f->next = after->next;
  if (after->next != nullptr) {
    after->next->prev = f;
  } else {
    tail_ = f;
  }
  after->next = f;
  ++size_;
  f->SetFlag(kFolioLru);
}

void LruList::Remove(Folio* f) {
  FOLIO_DCHECK(f->TestFlag(kFolioLru));
  if (f->prev != nullptr) {
    f->prev->next = f->next;
  } else {
    FOLIO_CHECK(head_ == f);
    head_ = f->next;
  }
  if (f->next != nullptr) {
    f->next->prev = f->prev;
  } else {
    FOLIO_CHECK(tail_ == f);
    tail_ = f->prev;
  }
  f->prev = nullptr;
  f->next = nullptr;
  --size_;
  f->ClearFlag(kFolioLru);
}

}  // namespace folio::cache
