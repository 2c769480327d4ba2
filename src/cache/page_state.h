// PageState: the page cache's per-page state of folios, one bit per 4 KiB arena frame, like
// iomap's iomap_folio_state but without an allocation per folio. A folio of order k owns the
// frames [frame, frame + 2^k), aligned to 2^k, so its bits are a run inside one 64-bit word
// (k <= 6) or 2^(k-6) whole words (k = 7..9): a split or a free moves nothing, and the 64-byte
// descriptor stays as it is. Six bitmaps of (memory / 4 KiB) bits each (a 1 GiB cache: 6 x 32
// KiB):
//
//   dirty      the page is newer than the device; writeback writes runs of these pages only
//   uptodate   the page's content is valid; read only while the folio lacks kFolioUptodate
//              (which means "every page"), so full folios never touch it
//   error      the page's last writeback failed and nothing has written it over since
//   writeback  the page is being written: a writer must not change it until the write is done
//   referenced a read hit this page of a large folio (order >= kSparseMinOrder) since reclaim
//              last looked at the folio
//   reread     ... and read it again: reclaim evicts a large folio whose reads since its last
//              look went to a few pages read over and over (SparselyReferenced, reclaim.cc)
//
// Who may change what (the folio lock of the folio owning the frames, unless noted):
//   dirty, error, uptodate   under the folio lock; writeback completion sets error bits of
//                            pages it holds in writeback (no writer touches those)
//   writeback                set by writeback under the folio lock, cleared by its completion
//   referenced, reread       set by read hits (no lock), counted and cleared by reclaim under
//                            lru_mu_, cleared for a folio's frames when it is allocated
// Every bit is atomic, so neighbouring small folios sharing a word never race. A free frame
// has clear dirty, error and writeback bits (FreeFolio checks / clears them).
//
// PageMask is a folio's worth of bits (pages relative to the folio's first page), used to take
// a snapshot (writeback's dirty runs) without holding anything.
//
// Thread safety: all methods are thread-safe (atomic word operations).
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

#include "folio/arena.h"

namespace folio::cache {

// Large folios whose pages read hits mark (PageState::referenced, reread): 64 KiB and up.
// Reclaim evicts such a folio, although it was referenced, when its reads since the last look
// went to fewer than 1 in kSparseShare of its pages and some of those were read again: a few
// hot 4 KiB pages scattered over a file must not keep the 2 MiB folios around them resident
// (what made `dynamic` hit less than `4k` on zipf reads of a file twice the cache); the hot
// pages come back as small folios at their next miss, which the dynamic policy sizes for a
// random reader. Reads that never return to a page (fio's random map, a scan) leave the folio
// alone: its unread pages are as likely to be read next as anything a miss would bring in.
inline constexpr int kSparseMinOrder = 4;
inline constexpr uint32_t kSparseShare = 8;

// Up to 512 pages of one folio, page 0 = the folio's first page.
struct PageMask {
  static constexpr uint32_t kWords = OrderPages(kMaxOrder) / 64;
  uint64_t w[kWords] = {};

  bool Test(uint32_t i) const { return (w[i / 64] >> (i % 64)) & 1; }
  void Set(uint32_t i) { w[i / 64] |= uint64_t{1} << (i % 64); }
  void SetRange(uint32_t first, uint32_t n);
  uint32_t Count() const;
  bool Empty() const;
  // Calls fn(first, n) for each run of set bits below `limit`, in order.
  template <typename Fn>
  void ForEachRun(uint32_t limit, Fn&& fn) const {
    uint32_t i = 0;
    while (i < limit) {
      if (!Test(i)) {
        ++i;
        continue;
      }
      uint32_t j = i + 1;
      while (j < limit && Test(j)) ++j;
      fn(i, j - i);
      i = j;
    }
  }
};

class FrameBitmap {
 public:
  explicit FrameBitmap(uint32_t frames);

  // Each returns / acts on bits [first, first + n), a folio's frames or a part of them.
  // Returns how many bits were clear before.
  uint32_t Set(uint32_t first, uint32_t n);
  // Returns how many bits were set before.
  uint32_t Clear(uint32_t first, uint32_t n);
  bool Any(uint32_t first, uint32_t n) const;
  bool All(uint32_t first, uint32_t n) const;
  uint32_t Count(uint32_t first, uint32_t n) const;
  // A whole folio's bits as a mask (bit i = frame first + i).
  // REQUIRES: n a power of two <= 512, first a multiple of n (a folio's frames).
  PageMask Get(uint32_t first, uint32_t n) const;
  // Sets the bits of mask (relative to first); returns how many were clear before.
  // REQUIRES: as Get.
  uint32_t SetMask(uint32_t first, uint32_t n, const PageMask& mask);
  // Clears the bits of mask; returns how many were set before. REQUIRES: as Get.
  uint32_t ClearMask(uint32_t first, uint32_t n, const PageMask& mask);

 private:
  // Calls fn(word index, the bits of [first, first + n) in that word) for each word touched.
  template <typename Fn>
  void ForWords(uint32_t first, uint32_t n, Fn&& fn) const;

  std::unique_ptr<std::atomic<uint64_t>[]> words_;
};

// The six bitmaps, with helpers that take a folio and pages relative to it.
class PageState {
 public:
  explicit PageState(uint32_t frames)
      : dirty(frames), uptodate(frames), error(frames), writeback(frames), referenced(frames),
        reread(frames) {}

  FrameBitmap dirty;
  FrameBitmap uptodate;
  FrameBitmap error;
  FrameBitmap writeback;
  FrameBitmap referenced;
  FrameBitmap reread;

  // Reclaim's sparse rule (kSparseMinOrder), the one place each of its steps is spelled out:
  // a read hit on frames [first, first + n) of a large folio marks them read, or read again
  // when all are marked already (a load or two when both are).
  void NoteRead(uint32_t first, uint32_t n) {
    if (!referenced.All(first, n)) {
      referenced.Set(first, n);
    } else if (!reread.All(first, n)) {
      reread.Set(first, n);
    }
  }
  // A fresh folio's pages start unread (frames keep their bits when freed).
  void ForgetReads(uint32_t frame, uint32_t n) {
    referenced.Clear(frame, n);
    reread.Clear(frame, n);
  }
  // Compaction moved a folio from `from` to `to`: its pages' reads go with it.
  void MoveReads(uint32_t from, uint32_t to, uint32_t n) {
    for (FrameBitmap* b : {&referenced, &reread}) {
      b->Clear(to, n);
      b->SetMask(to, n, b->Get(from, n));
    }
  }
  // Counts and clears the reads of a folio's n pages since the last look: true when they went
  // to fewer than 1 in kSparseShare of them and some were read again.
  bool TakeSparse(uint32_t frame, uint32_t n) {
    const uint32_t read = referenced.Clear(frame, n);
    const uint32_t again = reread.Clear(frame, n);
    return again > 0 && read * kSparseShare < n;
  }
};

}  // namespace folio::cache
