// FolioIndex: the page index of one address space: page index -> Folio*, lock-free for
// readers, the same cost whatever the folio's order.
//
//   directory (one entry per 2 MiB of the device)      segment (512 pages)
//   +------+------+------+-----                        +----+----+----+----+----+-- ... --+
//   | seg* | null | seg* | ...          ------------>  | F0 | F0 | F0 | F0 | F1 |         |
//   +------+------+------+-----                        +----+----+----+----+----+-- ... --+
//                                                       an order-2 folio F0 fills 4 slots
//
// A folio of order k occupies all 2^k slots of its (aligned) range, so a lookup is two
// acquire loads. Folios are aligned to their size and k <= 9, so a folio never spans two
// segments. A segment that one order-9 (2 MiB) folio fills is also named in whole_, one
// pointer per 2 MiB (2 KiB per GiB, hot in cache), so a lookup in a 2 MiB folio is one load
// and never touches the 4 KiB slot array: in a cached 4 KiB random read of a 512M file that
// slot load (a miss in a megabyte of slots) was a quarter of the cost besides the copy. Segments are allocated on first insert and published with a release store; they
// live as long as the index. The directory is sized from the device (the logical size never
// exceeds it).
//
// Dirty tracking: one bit per page slot (set at a dirty folio's first page) plus one bit per
// segment, so writeback walks dirty folios in index order without scanning clean memory.
//
// Thread safety: Load / NextDirty / NextPresent are lock-free and may run concurrently with
// anything. Store / Clear require the owning address space's mutex. SetDirty / ClearDirty
// require the folio lock of the folio at that index (they are atomic; the folio lock keeps the
// bit equal to the folio's kFolioDirty flag).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "folio/arena.h"

namespace folio::cache {

class FolioIndex {
 public:
  static constexpr int kSegmentShift = kMaxOrder;  // 512 pages per segment
  static constexpr uint64_t kSegmentPages = uint64_t{1} << kSegmentShift;
  static constexpr uint64_t kNone = ~uint64_t{0};

  explicit FolioIndex(uint64_t max_pages);
  ~FolioIndex();
  FolioIndex(const FolioIndex&) = delete;
  FolioIndex& operator=(const FolioIndex&) = delete;

  uint64_t max_pages() const { return max_pages_; }

  // The folio in the slot of `index`, or null. The folio may be frozen or stale by the time
  // the caller looks at it: validate with TryGet and a reload of the slot.
  Folio* Load(uint64_t index) const {
    if (index >= max_pages_) return nullptr;
    if (Folio* w = whole_[index >> kSegmentShift].load(std::memory_order_acquire)) return w;
    const Segment* s = dir_[index >> kSegmentShift].load(std::memory_order_acquire);
    if (s == nullptr) return nullptr;
    const std::atomic<Folio*>* slot = s->Slot(index & (kSegmentPages - 1));
    return slot == nullptr ? nullptr : slot->load(std::memory_order_acquire);
  }

  // Fills the 2^order slots from index with f (release stores).
  // REQUIRES: the mapping mutex; index aligned to 2^order; f fully initialised.
  void Store(uint64_t index, int order, Folio* f);
  // Clears the 2^order slots from index. REQUIRES: the mapping mutex.
  void Clear(uint64_t index, int order);
  // True when no slot of [index, index + 2^order) holds a folio.
  bool RangeEmpty(uint64_t index, int order) const;

  // First index in [from, end) whose slot holds a folio, or kNone.
  uint64_t NextPresent(uint64_t from, uint64_t end) const;

  void SetDirty(uint64_t index);
  void ClearDirty(uint64_t index);
  // First index in [from, end) with a dirty bit, or kNone.
  uint64_t NextDirty(uint64_t from, uint64_t end);

 private:
  // A segment holds its first kInlineSlots slots (64 KiB of pages) itself and the rest in an
  // array allocated at the first Store beyond them, published with a release store and never
  // replaced or freed before the segment (lock-free readers may hold it). A file of up to
  // 64 KiB costs its index a 200-byte segment instead of 4 KiB: the mount of a file system
  // keeps thousands of small closed files' address spaces (fs/data_path.h), and this segment
  // was the largest part of each one's heap.
  static constexpr uint64_t kInlineSlots = 16;
  struct Segment {
    std::atomic<Folio*> slots[kInlineSlots] = {};
    std::atomic<std::atomic<Folio*>*> rest{nullptr};  // kSegmentPages - kInlineSlots slots
    std::atomic<uint64_t> dirty[kSegmentPages / 64] = {};

    Segment() = default;
    ~Segment() { delete[] rest.load(std::memory_order_relaxed); }
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;
    // Slot i, or null when i lies in the part not allocated yet (an empty slot).
    const std::atomic<Folio*>* Slot(uint64_t i) const {
      if (i < kInlineSlots) return &slots[i];
      const std::atomic<Folio*>* r = rest.load(std::memory_order_acquire);
      return r == nullptr ? nullptr : &r[i - kInlineSlots];
    }
    std::atomic<Folio*>* Slot(uint64_t i) {
      return const_cast<std::atomic<Folio*>*>(std::as_const(*this).Slot(i));
    }
    // Slot i, allocating the rest of the segment when i lies there. REQUIRES: the mapping mutex.
    std::atomic<Folio*>* SlotForStore(uint64_t i);
  };

  Segment* GetOrCreate(uint64_t seg);  // REQUIRES: the mapping mutex

  const uint64_t max_pages_;
  const uint64_t nr_segments_;
  std::unique_ptr<std::atomic<Segment*>[]> dir_;
  // whole_[seg]: the order-9 folio filling segment seg, or null. Set by Store of order 9 after
  // the slots, cleared by any other Store or Clear in the segment before the slots change.
  std::unique_ptr<std::atomic<Folio*>[]> whole_;
  // One bit per segment with (possibly) dirty page bits. Set after the page bit; cleared
  // lazily by NextDirty when a segment's page bits are all clear.
  std::unique_ptr<std::atomic<uint64_t>[]> dirty_segments_;
};

}  // namespace folio::cache
