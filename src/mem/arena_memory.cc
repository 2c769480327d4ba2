#include "mem/arena_memory.h"

#include <pthread.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/units.h"
#include "mem/smaps.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

namespace folio::mem {
namespace {

constexpr const char* kHugepagesDir = "/sys/kernel/mm/hugepages/hugepages-2048kB";
constexpr const char* kThpEnabledPath = "/sys/kernel/mm/transparent_hugepage/enabled";
constexpr int kCollapseAttempts = 4;

// Reads the first line of a small sysfs file; false if it cannot be read.
bool ReadFirstLine(const std::string& path, std::string* line) {
  std::ifstream in(path);
  if (!in) return false;
  std::getline(in, *line);
  return true;
}

long ReadLong(const std::string& path) {
  std::string line;
  if (!ReadFirstLine(path, &line)) return -1;
  return std::strtol(line.c_str(), nullptr, 10);
}

}  // namespace

std::string ThpEnabledMode() {
  std::string line;
  if (!ReadFirstLine(kThpEnabledPath, &line)) return "";
  size_t open = line.find('[');
  size_t close = line.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

long FreeHugepages2M() { return ReadLong(std::string(kHugepagesDir) + "/free_hugepages"); }

ArenaMemory::ArenaMemory(const ArenaOptions& options, size_t capacity_bytes)
    : requested_(options.backing), collapse_requested_(options.collapse), bytes_(capacity_bytes) {}

Result<std::unique_ptr<ArenaMemory>> ArenaMemory::Create(const ArenaOptions& options,
                                                         size_t capacity_bytes) {
  FOLIO_CHECK(capacity_bytes > 0 && capacity_bytes % kMaxFolioBytes == 0);
  std::unique_ptr<ArenaMemory> m(new ArenaMemory(options, capacity_bytes));
  FOLIO_RETURN_IF_ERROR(m->Setup());
  if (options.prefault_in_background) {
    ArenaMemory* raw = m.get();
    m->prefault_thread_ = std::thread([raw] {
      pthread_setname_np(pthread_self(), "folio-prefault");
      Status s = raw->Prefault();
      if (!s.ok()) raw->AppendNote("background pre-fault failed: " + s.ToString());
    });
  } else {
    FOLIO_RETURN_IF_ERROR(m->Prefault());
  }
  return m;
}

ArenaMemory::~ArenaMemory() {
  stop_.store(true, std::memory_order_relaxed);
  WaitPrefault();
  if (map_start_ != nullptr) munmap(map_start_, map_bytes_);
}

void ArenaMemory::WaitPrefault() {
  std::lock_guard<std::mutex> lock(join_mu_);
  if (prefault_thread_.joinable()) prefault_thread_.join();
}

void ArenaMemory::AppendNote(const std::string& text) {
  std::lock_guard<std::mutex> lock(note_mu_);
  if (!note_.empty()) note_ += "; ";
  note_ += text;
}

Status ArenaMemory::Setup() {
  if (requested_ == ArenaBacking::kHugetlb || requested_ == ArenaBacking::kAuto) {
    Status s = TryHugetlb();
    if (s.ok()) return s;
    if (requested_ == ArenaBacking::kHugetlb) return s;
    AppendNote(std::string(s.message()));
  }
  FOLIO_RETURN_IF_ERROR(ReserveAnonymous());
  if (requested_ == ArenaBacking::kThp || requested_ == ArenaBacking::kAuto) {
    Status s = EnableThp();
    if (s.ok()) return s;
    if (requested_ == ArenaBacking::kThp) return s;
    AppendNote(std::string(s.message()));
  }
  Setup4k();
  return Status::OK();
}

Status ArenaMemory::TryHugetlb() {
  size_t need = bytes_ / kMaxFolioBytes;
  long free_pages = FreeHugepages2M();
  if (free_pages < 0) {
    return Status::NotSupported(fmt::format(
        "arena: hugetlb backing: this kernel has no 2M hugetlb pool ({} is missing); use "
        "--arena-backing auto",
        kHugepagesDir));
  }
  if (static_cast<size_t>(free_pages) < need) {
    long total = ReadLong(std::string(kHugepagesDir) + "/nr_hugepages");
    return Status::NoSpace(fmt::format(
        "arena: hugetlb backing of {} needs {} free 2M hugetlb pages but {}/free_hugepages is "
        "{}; reserve them with `echo {} > /proc/sys/vm/nr_hugepages` (as root) or use "
        "--arena-backing auto",
        FormatSize(bytes_), need, kHugepagesDir, free_pages,
        (total > 0 ? static_cast<size_t>(total) : 0) + need - static_cast<size_t>(free_pages)));
  }
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    return Status::NoSpace(fmt::format(
        "arena: mmap of {} with MAP_HUGETLB failed ({}) although free_hugepages was {}; "
        "reserve more with /proc/sys/vm/nr_hugepages or use --arena-backing auto",
        FormatSize(bytes_), std::strerror(err), free_pages));
  }
  FOLIO_CHECK(reinterpret_cast<uintptr_t>(p) % kMaxFolioBytes == 0);
  map_start_ = base_ = static_cast<char*>(p);
  map_bytes_ = bytes_;
  mode_ = Mode::kHugetlb;
  return Status::OK();
}

Status ArenaMemory::ReserveAnonymous() {
  // Over-reserve by 2 MiB + two guard pages, then trim to: guard | 2 MiB-aligned range | guard.
  size_t len = bytes_ + kMaxFolioBytes + 2 * kPageBytes;
  void* raw = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return Status::FromErrno(errno, fmt::format("arena: reserving {} of address space",
                                                FormatSize(bytes_)));
  }
  uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t base = (start + kPageBytes + kMaxFolioBytes - 1) & ~(uintptr_t{kMaxFolioBytes} - 1);
  uintptr_t keep_start = base - kPageBytes;
  uintptr_t keep_end = base + bytes_ + kPageBytes;
  if (keep_start > start) munmap(raw, keep_start - start);
  if (start + len > keep_end) munmap(reinterpret_cast<void*>(keep_end), start + len - keep_end);
  map_start_ = reinterpret_cast<char*>(keep_start);
  map_bytes_ = keep_end - keep_start;
  base_ = reinterpret_cast<char*>(base);
  // Only the middle becomes accessible (and committed); the guards stay PROT_NONE.
  if (mprotect(base_, bytes_, PROT_READ | PROT_WRITE) != 0) {
    return Status::FromErrno(errno, fmt::format("arena: committing {} (mprotect)",
                                                FormatSize(bytes_)));
  }
  return Status::OK();
}

Status ArenaMemory::EnableThp() {
  std::string thp = ThpEnabledMode();
  if (thp.empty() || thp == "never") {
    return Status::NotSupported(fmt::format(
        "arena: THP backing: transparent hugepages are {}; enable them with `echo madvise > {}` "
        "(as root) or use --arena-backing auto",
        thp.empty() ? "not in this kernel" : "disabled (enabled=never)", kThpEnabledPath));
  }
  if (madvise(base_, bytes_, MADV_HUGEPAGE) != 0) {
    return Status::NotSupported(fmt::format(
        "arena: THP backing: madvise(MADV_HUGEPAGE) failed ({}); use --arena-backing auto",
        std::strerror(errno)));
  }
  mode_ = Mode::kThp;
  return Status::OK();
}

void ArenaMemory::Setup4k() {
  // 4k is the baseline: keep THP=always from silently turning it into huge pages. Failure only
  // means the kernel has no THP at all, which is what we want anyway.
  (void)madvise(base_, bytes_, MADV_NOHUGEPAGE);
  mode_ = Mode::k4k;
}

Status ArenaMemory::Prefault() {
  const uint64_t start_ns = MonotonicNowNs();
  Status status;
  bool stopped = false;
  for (size_t off = 0; off < bytes_; off += kMaxFolioBytes) {
    if (stop_.load(std::memory_order_relaxed)) {
      stopped = true;
      break;
    }
    status = PopulateChunk(base_ + off, kMaxFolioBytes);
    if (!status.ok()) break;
    if (mode_ == Mode::kThp && collapse_requested_ && collapse_supported_) {
      CollapseChunk(base_ + off);
    }
  }
  prefault_ns_.store(MonotonicNowNs() - start_ns, std::memory_order_relaxed);
  if (status.ok() && !stopped) prefault_done_.store(true, std::memory_order_release);
  return status;
}

Status ArenaMemory::PopulateChunk(char* chunk, size_t bytes) {
  for (;;) {
    if (madvise(chunk, bytes, MADV_POPULATE_WRITE) == 0) return Status::OK();
    int err = errno;
    if (err == EINTR || err == EAGAIN) continue;
    if (err == EINVAL) break;  // kernel before 5.14: touch instead
    if (err == ENOMEM) {
      return Status::NoSpace(fmt::format(
          "arena: pre-faulting {} failed at offset {}: out of memory; use a smaller arena",
          FormatSize(bytes_), FormatSize(static_cast<uint64_t>(chunk - base_))));
    }
    return Status::FromErrno(err, "arena: madvise(MADV_POPULATE_WRITE)");
  }
  // An atomic add of zero write-faults the page without changing what a concurrent user wrote.
  for (size_t off = 0; off < bytes; off += kPageBytes) {
    __atomic_fetch_add(reinterpret_cast<unsigned char*>(chunk + off), 0, __ATOMIC_RELAXED);
  }
  return Status::OK();
}

void ArenaMemory::CollapseChunk(char* chunk) {
  for (int attempt = 0; attempt < kCollapseAttempts; ++attempt) {
    if (madvise(chunk, kMaxFolioBytes, MADV_COLLAPSE) == 0) {
      collapse_ok_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    int err = errno;
    if (err == EAGAIN) continue;
    collapse_failed_.fetch_add(1, std::memory_order_relaxed);
    if (err == EINVAL) {
      collapse_supported_ = false;
      AppendNote("MADV_COLLAPSE is not supported by this kernel");
    }
    return;
  }
  collapse_failed_.fetch_add(1, std::memory_order_relaxed);
}

ArenaBackingReport ArenaMemory::Report() const {
  ArenaBackingReport r;
  r.requested = requested_;
  r.capacity_bytes = bytes_;
  r.collapse_ok = collapse_ok_.load(std::memory_order_relaxed);
  r.collapse_failed = collapse_failed_.load(std::memory_order_relaxed);
  r.prefault_done = prefault_done_.load(std::memory_order_acquire);
  r.prefault_seconds = static_cast<double>(prefault_ns_.load(std::memory_order_relaxed)) / 1e9;
  {
    std::lock_guard<std::mutex> lock(note_mu_);
    r.note = note_;
  }
  Result<SmapsTotals> totals = ReadSmapsRange(base_, base_ + bytes_);
  if (!totals.ok()) {
    r.note += (r.note.empty() ? "" : "; ") + totals.status().ToString();
    r.obtained = ArenaBacking::k4k;
    return r;
  }
  r.rss_bytes = totals->rss_bytes;
  r.anon_huge_bytes = totals->anon_huge_bytes;
  r.hugetlb_bytes = totals->hugetlb_bytes;
  // What the kernel says, not what was asked: a hugetlb VMA reports a 2M KernelPageSize.
  if (totals->kernel_page_bytes >= kMaxFolioBytes || totals->hugetlb_bytes > 0) {
    r.obtained = ArenaBacking::kHugetlb;
  } else if (totals->anon_huge_bytes > 0) {
    r.obtained = ArenaBacking::kThp;
  } else {
    r.obtained = ArenaBacking::k4k;
  }
  return r;
}

}  // namespace folio::mem
