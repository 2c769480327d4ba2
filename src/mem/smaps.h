// Reading what the kernel actually mapped for an address range, from /proc/self/smaps.
//
// Sums the VMAs that overlap [begin, end): Rss, AnonHugePages (THP) and Private_Hugetlb +
// Shared_Hugetlb (hugetlb pages, which smaps does not count in Rss), and notes the largest
// KernelPageSize (a hugetlb VMA says 2048 kB even before its pages are faulted). The arena keeps its range
// in VMAs of its own (guard pages on both sides stop merging with neighbours), so the sums are
// the range's own.
//
// Thread safety: pure functions over their arguments / a fresh read of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "folio/status.h"

namespace folio::mem {

struct SmapsTotals {
  size_t rss_bytes = 0;
  size_t anon_huge_bytes = 0;
  size_t hugetlb_bytes = 0;
  size_t vmas = 0;                // VMAs that overlapped the range
  size_t kernel_page_bytes = 0;   // largest KernelPageSize among them (2M for hugetlb VMAs)
};

// Parses smaps text (the format of /proc/<pid>/smaps) and sums the VMAs overlapping
// [begin, end).
SmapsTotals ParseSmapsRange(std::string_view text, uintptr_t begin, uintptr_t end);

// Reads /proc/self/smaps. Returns IOError if it cannot be read.
Result<SmapsTotals> ReadSmapsRange(const void* begin, const void* end);

}  // namespace folio::mem
