#include "cache/folio_index.h"

#include <bit>

#include "base/check.h"

namespace folio::cache {

FolioIndex::FolioIndex(uint64_t max_pages)
    : max_pages_(max_pages),
      nr_segments_((max_pages + kSegmentPages - 1) / kSegmentPages),
      dir_(std::make_unique<std::atomic<Segment*>[]>(nr_segments_)),
      whole_(std::make_unique<std::atomic<Folio*>[]>(nr_segments_)),
      dirty_segments_(std::make_unique<std::atomic<uint64_t>[]>((nr_segments_ + 63) / 64)) {}

FolioIndex::~FolioIndex() {
  for (uint64_t s = 0; s < nr_segments_; ++s) delete dir_[s].load(std::memory_order_relaxed);
}

FolioIndex::Segment* FolioIndex::GetOrCreate(uint64_t seg) {
  Segment* s = dir_[seg].load(std::memory_order_relaxed);
  if (s == nullptr) {
    s = new Segment();
    dir_[seg].store(s, std::memory_order_release);
  }
  return s;
}

std::atomic<Folio*>* FolioIndex::Segment::SlotForStore(uint64_t i) {
  if (i < kInlineSlots) return &slots[i];
  std::atomic<Folio*>* r = rest.load(std::memory_order_relaxed);
  if (r == nullptr) {
    r = new std::atomic<Folio*>[kSegmentPages - kInlineSlots]();
    rest.store(r, std::memory_order_release);  // all null: readers see empty slots
  }
  return &r[i - kInlineSlots];
}

void FolioIndex::Store(uint64_t index, int order, Folio* f) {
  uint64_t n = OrderPages(order);
  FOLIO_CHECK(index % n == 0 && index + n <= max_pages_);
  const uint64_t seg = index >> kSegmentShift;
  Segment* s = GetOrCreate(seg);
  if (order < kSegmentShift) whole_[seg].store(nullptr, std::memory_order_release);
  uint64_t slot = index & (kSegmentPages - 1);
  for (uint64_t i = 0; i < n; ++i) s->SlotForStore(slot + i)->store(f, std::memory_order_release);
  if (order == kSegmentShift) whole_[seg].store(f, std::memory_order_release);
}

void FolioIndex::Clear(uint64_t index, int order) {
  uint64_t n = OrderPages(order);
  FOLIO_CHECK(index % n == 0 && index + n <= max_pages_);
  const uint64_t seg = index >> kSegmentShift;
  Segment* s = dir_[seg].load(std::memory_order_relaxed);
  FOLIO_CHECK(s != nullptr);
  whole_[seg].store(nullptr, std::memory_order_release);
  uint64_t slot = index & (kSegmentPages - 1);
  for (uint64_t i = 0; i < n; ++i) {
    // A slot never stored to may lie in the part not allocated: it is empty already.
    std::atomic<Folio*>* c = s->Slot(slot + i);
    if (c != nullptr) c->store(nullptr, std::memory_order_release);
  }
}

bool FolioIndex::RangeEmpty(uint64_t index, int order) const {
  uint64_t n = OrderPages(order);
  if (index + n > max_pages_) return false;
  const Segment* s = dir_[index >> kSegmentShift].load(std::memory_order_acquire);
  if (s == nullptr) return true;
  uint64_t slot = index & (kSegmentPages - 1);
  for (uint64_t i = 0; i < n; ++i) {
    const std::atomic<Folio*>* c = s->Slot(slot + i);
    if (c != nullptr && c->load(std::memory_order_relaxed) != nullptr) return false;
  }
  return true;
}

uint64_t FolioIndex::NextPresent(uint64_t from, uint64_t end) const {
  if (end > max_pages_) end = max_pages_;
  while (from < end) {
    uint64_t seg = from >> kSegmentShift;
    const Segment* s = dir_[seg].load(std::memory_order_acquire);
    uint64_t seg_end = std::min(end, (seg + 1) << kSegmentShift);
    if (s != nullptr) {
      for (uint64_t i = from; i < seg_end; ++i) {
        const std::atomic<Folio*>* c = s->Slot(i & (kSegmentPages - 1));
        if (c == nullptr) break;  // the segment's rest is not allocated: empty
        if (c->load(std::memory_order_relaxed) != nullptr) return i;
      }
    }
    from = seg_end;
  }
  return kNone;
}

void FolioIndex::SetDirty(uint64_t index) {
  uint64_t seg = index >> kSegmentShift;
  Segment* s = dir_[seg].load(std::memory_order_acquire);
  FOLIO_CHECK(s != nullptr);
  uint64_t slot = index & (kSegmentPages - 1);
  s->dirty[slot / 64].fetch_or(uint64_t{1} << (slot % 64), std::memory_order_seq_cst);
  dirty_segments_[seg / 64].fetch_or(uint64_t{1} << (seg % 64), std::memory_order_seq_cst);
}

void FolioIndex::ClearDirty(uint64_t index) {
  Segment* s = dir_[index >> kSegmentShift].load(std::memory_order_acquire);
  FOLIO_CHECK(s != nullptr);
  uint64_t slot = index & (kSegmentPages - 1);
  s->dirty[slot / 64].fetch_and(~(uint64_t{1} << (slot % 64)), std::memory_order_seq_cst);
}

uint64_t FolioIndex::NextDirty(uint64_t from, uint64_t end) {
  if (end > max_pages_) end = max_pages_;
  while (from < end) {
    uint64_t seg = from >> kSegmentShift;
    uint64_t word = dirty_segments_[seg / 64].load(std::memory_order_seq_cst) >> (seg % 64);
    if (word == 0) {
      // No dirty segment in the rest of this 64-segment group.
      from = ((seg / 64) + 1) * 64 * kSegmentPages;
      continue;
    }
    seg += std::countr_zero(word);
    uint64_t seg_start = seg << kSegmentShift;
    if (seg_start >= end) return kNone;
    if (from < seg_start) from = seg_start;
    Segment* s = dir_[seg].load(std::memory_order_acquire);
    uint64_t seg_end = std::min(end, seg_start + kSegmentPages);
    bool whole_segment = from == seg_start;
    auto scan = [&]() -> uint64_t {
      for (uint64_t w = (from - seg_start) / 64; w < kSegmentPages / 64; ++w) {
        uint64_t bits = s->dirty[w].load(std::memory_order_seq_cst);
        if (w == (from - seg_start) / 64) bits &= ~uint64_t{0} << ((from - seg_start) % 64);
        if (bits != 0) {
          uint64_t i = seg_start + w * 64 + std::countr_zero(bits);
          return i < seg_end ? i : kNone;
        }
      }
      return kNone;
    };
    uint64_t found = scan();
    if (found != kNone) return found;
    if (whole_segment && seg_end == seg_start + kSegmentPages) {
      // The segment looked clean: clear its bit, then look again so that a page bit set
      // before our clear is not lost (setters set the page bit first, then the segment bit).
      uint64_t bit = uint64_t{1} << (seg % 64);
      dirty_segments_[seg / 64].fetch_and(~bit, std::memory_order_seq_cst);
      found = scan();
      if (found != kNone) {
        dirty_segments_[seg / 64].fetch_or(bit, std::memory_order_seq_cst);
        return found;
      }
    }
    from = seg_end;
  }
  return kNone;
}

}  // namespace folio::cache
