// PageRangeSet: a set of page ranges [first, last), kept merged. The page cache uses it for
// "zero ranges": pages a truncate (or a growing write) made zero whose zeros have not reached
// the device yet. Device reads of those pages are zeroed in memory; writeback writes zeros.
//
// Thread safety: none (guarded by the address space's mutex).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace folio::cache {

struct PageRange {
  uint64_t first = 0;
  uint64_t last = 0;  // exclusive
};

class PageRangeSet {
 public:
  bool empty() const { return ranges_.empty(); }
  void clear() { ranges_.clear(); }
  void Add(uint64_t first, uint64_t last);
  // Removes every page of [first, last).
  void Remove(uint64_t first, uint64_t last);
  // Appends the parts of the set inside [first, last) to out.
  void Overlaps(uint64_t first, uint64_t last, std::vector<PageRange>* out) const;
  bool Contains(uint64_t page) const;
  std::vector<PageRange> ToVector() const;
  uint64_t total_pages() const;

 private:
  std::map<uint64_t, uint64_t> ranges_;  // first -> last, disjoint and not adjacent
};

}  // namespace folio::cache
