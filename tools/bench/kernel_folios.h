// How the kernel's page cache holds a file: the sizes of the folios its resident pages are in.
//
// Why: a kernel file system that supports large folios (ext4 and XFS on 6.x kernels) caches a
// file read in large requests in folios of up to 2 MiB, while the kernel gives a FUSE file
// (passthrough_ll's and Folio FS's alike, on 6.18) 4 KiB folios only. A cached 4 KiB random read
// costs about twice as much in 4 KiB folios (measured: docs/fs.md "The kernel's folios"), so
// a comparison of cached reads is only like for like when the report says what each side ran on.
//
// How: the file is mapped read-only; mincore(2) tells which pages are resident, each resident
// page is touched once (a minor fault: no I/O), /proc/self/pagemap gives its physical frame and
// /proc/kpageflags that frame's compound-head / compound-tail bits. A folio is a head and the
// tails that follow it in consecutive frames; a page with neither bit is a folio of its own.
// Reading frame numbers needs CAP_SYS_ADMIN (root); without it the census is NotSupported.
//
// Thread safety: pure functions, except TakeKernelFolioCensus (reads /proc, maps the file).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "folio/status.h"

namespace folio::bench {

// Bits of /proc/kpageflags (include/uapi/linux/kernel-page-flags.h).
inline constexpr int kKpfCompoundHead = 15;
inline constexpr int kKpfCompoundTail = 16;
inline constexpr int kKpfAnon = 12;

// One page of the file, in file order.
struct KernelPageInfo {
  bool resident = false;  // in the page cache (and its frame known)
  uint64_t pfn = 0;
  uint64_t kpageflags = 0;
};

struct KernelFolioCensus {
  uint64_t pages = 0;           // 4 KiB pages of the range looked at
  uint64_t resident_pages = 0;  // of them, in the page cache
  uint64_t folios = 0;          // folios the resident pages are in
  // Resident pages by the size of their folio: [k] holds pages in folios of 2^k pages
  // (4 KiB << k), a folio cut by the range's ends counted by its pages seen.
  std::array<uint64_t, 10> pages_by_order{};

  // Mean bytes per folio of the resident pages (0 when none is resident).
  uint64_t MeanFolioBytes() const;
  // The folio sizes holding at least 1% of the resident pages, most first: "2M 92%, 4K 3%"
  // ("none resident").
  std::string Shares() const;
  // "65536 of 65536 pages resident, in 137 folios (mean 1.9M; 2M 92%, 4K 3%)".
  std::string Summary() const;
};

// {"pages", "resident_pages", "folios", "mean_folio_bytes", "pages_by_folio_bytes": {"4096": n,
// ...}} (sizes holding no page left out).
nlohmann::ordered_json KernelFoliosJson(const KernelFolioCensus& c);

// The census of pages given in file order (the pure half of TakeKernelFolioCensus).
KernelFolioCensus CountKernelFolios(const std::vector<KernelPageInfo>& pages);

// The census of [offset, offset + bytes) of the file open as `fd` (readable; `path` names it in
// errors; offset and bytes multiples of 4096). It uses the caller's descriptor because an open
// may drop the cache: a FUSE file opened without FOPEN_KEEP_CACHE (passthrough_ll's) loses its
// cached pages at every open. NotSupported when frame numbers cannot be read (not root); an
// errno Status naming the file when it cannot be mapped.
Result<KernelFolioCensus> TakeKernelFolioCensus(int fd, const std::string& path, uint64_t offset,
                                                uint64_t bytes);

}  // namespace folio::bench
