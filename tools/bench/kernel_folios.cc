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

Status ReadAll(int fd, void* buf, size_t len, uint64_t pos, const char* what) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    const ssize_t n = ::pread(fd, p, len, static_cast<off_t>(pos));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, what);
    if (n == 0) return Status::IOError(std::string(what) + ": short read");
    p += n;
    len -= static_cast<size_t>(n);
    pos += static_cast<uint64_t>(n);
  }
  return Status::OK();
}

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
  for (size_t i = 0; i < n; ++i) {
    if (incore[i] & 1) (void)base[i * kPage];
  }
  std::vector<uint64_t> entries(n);
  FOLIO_RETURN_IF_ERROR(ReadAll(pagemap.get(), entries.data(), n * 8,
                                reinterpret_cast<uintptr_t>(map) / kPage * 8,
                                "/proc/self/pagemap"));
  std::vector<KernelPageInfo> pages(n);
  bool any_frame = false;
  for (size_t i = 0; i < n; ++i) {
    if (!(entries[i] & kPresent)) continue;  // evicted since mincore, or never resident
    pages[i].resident = true;
    pages[i].pfn = entries[i] & kPfnMask;
    any_frame = any_frame || pages[i].pfn != 0;
  }
  const bool any_resident =
      std::any_of(pages.begin(), pages.end(), [](const KernelPageInfo& p) { return p.resident; });
  if (any_resident && !any_frame) {
    return Status::NotSupported(path + ": /proc/self/pagemap hides frame numbers (needs root)");
  }
  const bool any_incore =
      std::any_of(incore.begin(), incore.end(), [](unsigned char v) { return (v & 1) != 0; });
  if (any_incore && !any_resident) {
    // Pages mincore saw resident and touched are mapped; a pagemap that shows none of them
    // does not describe this address space (a user-mode emulator translates addresses).
    return NotThisMapping(path);
  }
  // kpageflags in runs of consecutive frames: a large folio's pages are one read.
  for (size_t i = 0; i < n;) {
    if (!pages[i].resident) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < n && pages[j].resident && pages[j].pfn == pages[j - 1].pfn + 1) ++j;
    std::vector<uint64_t> flags(j - i);
    FOLIO_RETURN_IF_ERROR(ReadAll(kpageflags.get(), flags.data(), flags.size() * 8,
                                  pages[i].pfn * 8, "/proc/kpageflags"));
    for (size_t k = i; k < j; ++k) pages[k].kpageflags = flags[k - i];
    i = j;
  }
  // A page of a file's page cache is never anonymous: one that is means the frames are not
  // this mapping's (the emulator case above, with another mapping at the same address).
  for (const KernelPageInfo& p : pages) {
    if (p.resident && Bit(p.kpageflags, kKpfAnon)) {
      return NotThisMapping(path);
    }
  }
  return CountKernelFolios(pages);
}

}  // namespace folio::bench
