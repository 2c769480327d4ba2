#include "bench/kernel_folios.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "base/units.h"
#include "cli/cli_util.h"

namespace folio::bench {

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kPfnMask = (1ull << 55) - 1;  // pagemap bits 0-54
constexpr uint64_t kPresent = 1ull << 63;

bool Bit(uint64_t flags, int bit) { return (flags >> bit) & 1; }

// A file descriptor closed on every path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Status NotThisMapping(const std::string& path) {
  return Status::NotSupported(path + ": /proc/self/pagemap does not show this process's mapping");
}

}  // namespace

uint64_t KernelFolioCensus::MeanFolioBytes() const {
  return folios == 0 ? 0 : resident_pages * kPage / folios;
}

std::string KernelFolioCensus::Shares() const {
  if (resident_pages == 0) return "none resident";
  // The sizes holding the most pages first, those under 1% left out.
  std::vector<std::pair<uint64_t, int>> by;
  for (int k = 0; k < static_cast<int>(pages_by_order.size()); ++k) {
    if (pages_by_order[k] * 100 >= resident_pages) by.emplace_back(pages_by_order[k], k);
  }
  std::stable_sort(by.begin(), by.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string s;
  for (const auto& [n, k] : by) {
    s += fmt::format("{}{} {}%", s.empty() ? "" : ", ", FormatSize(kPage << k),
                     n * 100 / resident_pages);
  }
  return s;
}

std::string KernelFolioCensus::Summary() const {
  std::string s = fmt::format("{} of {} pages resident", resident_pages, pages);
  if (folios == 0) return s;
  return s + fmt::format(", in {} folios (mean {}; {})", folios, FormatSize(MeanFolioBytes()),
                         Shares());
}

nlohmann::ordered_json KernelFoliosJson(const KernelFolioCensus& c) {
  nlohmann::ordered_json by = nlohmann::ordered_json::object();
  for (size_t k = 0; k < c.pages_by_order.size(); ++k) {
    if (c.pages_by_order[k] > 0) by[std::to_string(kPage << k)] = c.pages_by_order[k];
  }
  return {{"pages", c.pages},
          {"resident_pages", c.resident_pages},
          {"folios", c.folios},
          {"mean_folio_bytes", c.MeanFolioBytes()},
          {"pages_by_folio_bytes", by}};
}

KernelFolioCensus CountKernelFolios(const std::vector<KernelPageInfo>& pages) {
  KernelFolioCensus c;
  c.pages = pages.size();
  uint64_t run = 0;  // pages of the folio being counted
  uint64_t last_pfn = 0;
  auto close_run = [&] {
    if (run == 0) return;
    const int order = std::min<int>(std::bit_width(run) - 1,
                                    static_cast<int>(c.pages_by_order.size()) - 1);
    c.pages_by_order[order] += run;
    ++c.folios;
    run = 0;
  };
  for (const KernelPageInfo& p : pages) {
    if (!p.resident) {
      close_run();
      continue;
    }
    ++c.resident_pages;
    // A tail continues the folio only right after its previous page; a tail seen first (the
    // range starts inside a folio) starts one of its own.
    const bool continues =
        run > 0 && Bit(p.kpageflags, kKpfCompoundTail) && p.pfn == last_pfn + 1;
    if (!continues) close_run();
    ++run;
    last_pfn = p.pfn;
    if (!Bit(p.kpageflags, kKpfCompoundHead) && !Bit(p.kpageflags, kKpfCompoundTail)) {
      close_run();  // an order-0 folio
    }
  }
  close_run();
  return c;
}

Result<KernelFolioCensus> TakeKernelFolioCensus(int fd, const std::string& path, uint64_t offset,
                                                uint64_t bytes) {
  if (offset % kPage != 0 || bytes % kPage != 0) {
    return Status::InvalidArgument(path + ": the census range must be in whole pages");
  }
  if (bytes == 0) return KernelFolioCensus{};
  Fd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (pagemap.get() < 0) return Status::FromErrno(errno, "/proc/self/pagemap");
  Fd kpageflags(::open("/proc/kpageflags", O_RDONLY | O_CLOEXEC));
  if (kpageflags.get() < 0) {
    if (errno == EACCES || errno == EPERM) {
      return Status::NotSupported(path + ": reading /proc/kpageflags needs root");
    }
    return Status::FromErrno(errno, "/proc/kpageflags");
  }
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (map == MAP_FAILED) return Status::FromErrno(errno, path + ": mmap");
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, bytes};
  const size_t n = bytes / kPage;
  std::vector<unsigned char> incore(n);
  if (::mincore(map, bytes, incore.data()) != 0) return Status::FromErrno(errno, path + ": mincore");
  // Map each resident page into this process (a minor fault; never a read of the file).
  const volatile char* base = static_cast<const char*>(map);
  size_t incore_pages = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(incore[i] & 1)) continue;
    (void)base[i * kPage];
    ++incore_pages;
  }
  std::vector<uint64_t> entries(n);
  FOLIO_RETURN_IF_ERROR(cli::FullIo(pagemap.get(), false, reinterpret_cast<char*>(entries.data()),
                                    n * 8, reinterpret_cast<uintptr_t>(map) / kPage * 8,
                                    "/proc/self/pagemap"));
  std::vector<KernelPageInfo> pages(n);
  size_t resident = 0;
  bool any_frame = false;
  for (size_t i = 0; i < n; ++i) {
    if (!(entries[i] & kPresent)) continue;  // evicted since mincore, or never resident
    pages[i].resident = true;
    pages[i].pfn = entries[i] & kPfnMask;
    any_frame = any_frame || pages[i].pfn != 0;
    ++resident;
  }
  if (resident > 0 && !any_frame) {
    return Status::NotSupported(path + ": /proc/self/pagemap hides frame numbers (needs root)");
  }
  if (incore_pages > 0 && resident == 0) {
    // Pages mincore saw resident and touched are mapped; a pagemap that shows none of them
    // does not describe this address space (a user-mode emulator translates addresses).
    return NotThisMapping(path);
  }
  // kpageflags in runs of consecutive frames: a large folio's pages are one read.
  std::vector<uint64_t> flags(n);
  for (size_t i = 0; i < n;) {
    if (!pages[i].resident) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < n && pages[j].resident && pages[j].pfn == pages[j - 1].pfn + 1) ++j;
    FOLIO_RETURN_IF_ERROR(cli::FullIo(kpageflags.get(), false,
                                      reinterpret_cast<char*>(flags.data() + i), (j - i) * 8,
                                      pages[i].pfn * 8, "/proc/kpageflags"));
    for (size_t k = i; k < j; ++k) {
      // A page of a file's page cache is never anonymous: one that is means the frames are
      // not this mapping's (the emulator case above, with another mapping at that address).
      if (Bit(flags[k], kKpfAnon)) return NotThisMapping(path);
      pages[k].kpageflags = flags[k];
    }
    i = j;
  }
  return CountKernelFolios(pages);
}

}  // namespace folio::bench
