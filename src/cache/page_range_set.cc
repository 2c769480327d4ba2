#include "cache/page_range_set.h"

#include <algorithm>

namespace folio::cache {

void PageRangeSet::Add(uint64_t first, uint64_t last) {
  if (first >= last) return;
  auto it = ranges_.upper_bound(first);
  if (it != ranges_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= first) {
      first = prev->first;
      last = std::max(last, prev->second);
      it = ranges_.erase(prev);
    }
  }
  while (it != ranges_.end() && it->first <= last) {
    last = std::max(last, it->second);
    it = ranges_.erase(it);
  }
  ranges_.emplace(first, last);
}

void PageRangeSet::Remove(uint64_t first, uint64_t last) {
  if (first >= last) return;
  auto it = ranges_.upper_bound(first);
  if (it != ranges_.begin()) --it;
  while (it != ranges_.end() && it->first < last) {
    uint64_t a = it->first, b = it->second;
    if (b <= first) {
      ++it;
      continue;
    }
    it = ranges_.erase(it);
    if (a < first) ranges_.emplace(a, first);
    if (b > last) ranges_.emplace(last, b);
  }
}

void PageRangeSet::Overlaps(uint64_t first, uint64_t last, std::vector<PageRange>* out) const {
  auto it = ranges_.upper_bound(first);
  if (it != ranges_.begin()) --it;
  for (; it != ranges_.end() && it->first < last; ++it) {
    uint64_t a = std::max(first, it->first), b = std::min(last, it->second);
    if (a < b) out->push_back({a, b});
  }
}

bool PageRangeSet::Contains(uint64_t page) const {
  auto it = ranges_.upper_bound(page);
  if (it == ranges_.begin()) return false;
  --it;
  return page < it->second;
}

std::vector<PageRange> PageRangeSet::ToVector() const {
  std::vector<PageRange> v;
  v.reserve(ranges_.size());
  for (const auto& [a, b] : ranges_) v.push_back({a, b});
  return v;
}

uint64_t PageRangeSet::total_pages() const {
  uint64_t n = 0;
  for (const auto& [a, b] : ranges_) n += b - a;
  return n;
}

}  // namespace folio::cache
