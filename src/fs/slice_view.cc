#include "fs/slice_view.h"

#include <algorithm>

#include "base/check.h"

namespace folio::fs {

std::vector<Segment> ResolveSlices(std::span<const meta::Slice> slices, uint32_t from,
                                   uint32_t to) {
  FOLIO_CHECK(from <= to && to <= meta::kChunkBytes);
  std::vector<Segment> out;
  if (from == to) return out;
  // Uncovered intervals of [from, to), ascending and disjoint.
  std::vector<std::pair<uint32_t, uint32_t>> open{{from, to}};
  std::vector<std::pair<uint32_t, uint32_t>> next;
  for (size_t k = slices.size(); k-- > 0 && !open.empty();) {
    const uint32_t s = slices[k].pos;
    const uint32_t e = slices[k].pos + slices[k].len;
    next.clear();
    for (const auto& [a, b] : open) {
      if (e <= a || b <= s) {
        next.emplace_back(a, b);
        continue;
      }
      const uint32_t ca = std::max(a, s), cb = std::min(b, e);
      out.push_back(Segment{ca, cb - ca, static_cast<int>(k)});
      if (a < ca) next.emplace_back(a, ca);
      if (cb < b) next.emplace_back(cb, b);
    }
    open.swap(next);
  }
  for (const auto& [a, b] : open) out.push_back(Segment{a, b - a, -1});
  std::sort(out.begin(), out.end(), [](const Segment& x, const Segment& y) { return x.pos < y.pos; });
  return out;
}

uint64_t DataBytes(std::span<const meta::Slice> slices) {
  if (slices.empty()) return 0;
  uint64_t n = 0;
  for (const Segment& seg : ResolveSlices(slices, 0, meta::kChunkBytes)) {
    if (seg.src >= 0 && slices[seg.src].kind != meta::SliceKind::kZero) n += seg.len;
  }
  return n;
}

std::vector<meta::Slice> CutSlices(std::span<const meta::Slice> slices, uint32_t end) {
  std::vector<meta::Slice> out;
  for (const meta::Slice& s : slices) {
    if (s.pos >= end) continue;
    meta::Slice t = s;
    if (t.pos + t.len > end) t.len = end - t.pos;
    out.push_back(t);
  }
  return out;
}

bool SameSlices(std::span<const meta::Slice> a, std::span<const meta::Slice> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (meta::EncodeSlice(a[i]) != meta::EncodeSlice(b[i])) return false;
  }
  return true;
}

}  // namespace folio::fs
