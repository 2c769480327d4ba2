// Readahead: per-stream windows and their folio order, modelled on mm/readahead.c.
//
//     |<----------------- size ----------------->|
//     |                  |<----- async_size ----->|
//   start          start + size - async_size      start + size
//                        ^ the folio here is marked kFolioReadahead; a reader hitting it
//                          issues the next window asynchronously (and ramps the order by 2)
//
// A sequential miss (at the start of the file, or adjacent to a stream's last read or window)
// starts or pushes a window synchronously; a hit on a marked folio pushes the window
// (start += size, size grows x4 while small, x2 up to the max) and raises the stream's order by
// 2, capped by max_order and log2(size). A miss adjacent to nothing is random: it reads just
// what was asked, at order 0, and leaves a candidate stream behind so that a second adjacent
// read turns sequential. Several streams per address space (kStreams, least recently used one
// replaced) keep numjobs readers of one file from trashing one state.
//
// This class only does the arithmetic; the address space applies alignment, end of file,
// folios already cached and the policy when it turns a window into folios.
//
// Thread safety: none (guarded by the address space's mutex).
#pragma once

#include <cstdint>

namespace folio::cache {

enum class ReadaheadMode { kNormal, kSequential, kRandom };

struct ReadaheadWindow {
  uint64_t start = 0;
  uint64_t nr_pages = 0;                 // 0: nothing to read
  uint64_t mark = ~uint64_t{0};          // page whose folio gets kFolioReadahead, or none
  int order = 0;                         // wanted folio order (before caps)
  bool readahead = false;                // reads more than was asked (counted as a window)
};

class ReadaheadState {
 public:
  static constexpr int kStreams = 8;

  // max_pages: the largest window; at least 4.
  explicit ReadaheadState(uint64_t max_pages);

  uint64_t max_pages() const { return max_pages_; }
  void set_max_pages(uint64_t max_pages);

  // A read of req_pages pages at index missed the cache.
  ReadaheadWindow OnMiss(uint64_t index, uint64_t req_pages, ReadaheadMode mode, int max_order);
  // A read hit a folio [folio_index, folio_index + folio_pages) that carried the mark.
  ReadaheadWindow OnMarkedHit(uint64_t folio_index, uint64_t folio_pages, uint64_t req_pages,
                              int max_order);
  // Forgets every stream (e.g. after Advise(kNormal) or a policy change).
  void Reset();

  // The kernel's window growth rules, exposed for tests.
  uint64_t InitSize(uint64_t req_pages) const;
  uint64_t NextSize(uint64_t size) const;

 private:
  struct Stream {
    bool used = false;
    uint64_t start = 0, size = 0, async_size = 0;
    int order = 0;
    uint64_t next_index = 0;  // the page after the last read that touched this stream
    uint64_t stamp = 0;
  };

  Stream* FindSequential(uint64_t index);
  Stream* Replace();
  ReadaheadWindow WindowOf(const Stream& s, int max_order) const;

  uint64_t max_pages_;
  uint64_t clock_ = 0;
  Stream streams_[kStreams];
};

}  // namespace folio::cache
