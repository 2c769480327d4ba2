// ArenaMemory: the one virtual range behind a FolioArena, its backing and its pre-fault.
//
// Create reserves capacity_bytes (a multiple of 2 MiB) 2 MiB-aligned and backs it, in order of
// preference for kAuto:
//   hugetlb  MAP_HUGETLB | MAP_HUGE_2MB, only if free_hugepages covers the whole range
//   thp      an anonymous range with MADV_HUGEPAGE (unless THP is "never"); after each 2 MiB
//            region is populated, MADV_COLLAPSE (retried a few times on EAGAIN)
//   4k       an anonymous range with MADV_NOHUGEPAGE
// An explicit kHugetlb / kThp that cannot be served is an error naming the fix. The THP and 4k
// ranges sit between two PROT_NONE guard pages so that their VMA never merges with a
// neighbour's (smaps then reports exactly this range).
//
// The range is populated once, 2 MiB at a time with MADV_POPULATE_WRITE (or, on kernels
// without it, one atomic no-op write per 4 KiB), inside Create or on a background thread. The
// kernel's populate never changes the contents, so users may write the memory while the
// background thread is still running.
//
// Thread safety: Report and WaitPrefault may be called from any thread, concurrently.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "folio/arena.h"
#include "folio/status.h"

namespace folio::mem {

class ArenaMemory {
 public:
  // REQUIRES: capacity_bytes is a non-zero multiple of kMaxFolioBytes.
  // Context: blocks for the pre-fault unless options.prefault_in_background.
  static Result<std::unique_ptr<ArenaMemory>> Create(const ArenaOptions& options,
                                                     size_t capacity_bytes);
  // Stops and joins a background pre-fault, then unmaps the range.
  ~ArenaMemory();
  ArenaMemory(const ArenaMemory&) = delete;
  ArenaMemory& operator=(const ArenaMemory&) = delete;

  char* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  // Context: blocks until the background pre-fault (if any) has finished.
  void WaitPrefault();
  // Reads /proc/self/smaps for the range.
  ArenaBackingReport Report() const;

 private:
  enum class Mode { kHugetlb, kThp, k4k };

  ArenaMemory(const ArenaOptions& options, size_t capacity_bytes);
  Status Setup();
  // Each returns OK when it set up that backing, else why not (an error naming the fix).
  Status TryHugetlb();
  Status ReserveAnonymous();
  Status EnableThp();
  void Setup4k();
  // Populates (and for THP collapses) the range; stops early if stop_ is set.
  Status Prefault();
  Status PopulateChunk(char* chunk, size_t bytes);
  void CollapseChunk(char* chunk);
  void AppendNote(const std::string& text);

  const ArenaBacking requested_;
  const bool collapse_requested_;
  Mode mode_ = Mode::k4k;
  char* map_start_ = nullptr;  // what to munmap (guards included)
  size_t map_bytes_ = 0;
  char* base_ = nullptr;
  size_t bytes_ = 0;

  std::atomic<bool> stop_{false};
  std::atomic<bool> prefault_done_{false};
  std::atomic<uint64_t> prefault_ns_{0};
  std::atomic<uint64_t> collapse_ok_{0};
  std::atomic<uint64_t> collapse_failed_{0};
  bool collapse_supported_ = true;  // only touched by the pre-fault

  mutable std::mutex note_mu_;
  std::string note_;  // GUARDED_BY(note_mu_)

  std::mutex join_mu_;
  std::thread prefault_thread_;  // GUARDED_BY(join_mu_) once started
};

// THP mode from /sys/kernel/mm/transparent_hugepage/enabled: "always", "madvise", "never",
// or "" when the file is missing (no THP in this kernel).
std::string ThpEnabledMode();
// free_hugepages for 2 MiB pages, or -1 when the kernel has no 2 MiB hugetlb pool.
long FreeHugepages2M();

}  // namespace folio::mem
