// FolioArena: one pre-faulted virtual range carved into folios by a buddy allocator.
//
// A folio is 2^order contiguous 4 KiB frames (order 0 = 4 KiB .. order 9 = 2 MiB), aligned in the
// arena to its own size. Every frame has a 64-byte descriptor (`Folio`); the head frame's
// descriptor *is* the folio. Descriptors live for the arena's lifetime (type-stable memory): a
// reader that loaded a Folio* may always dereference it, and must validate it with TryGet() and
// a recheck of owner/index before trusting its contents (as the kernel's folio_try_get does).
//
// Backing, in order of preference for kAuto: hugetlb pages if enough are reserved, else THP via
// MADV_HUGEPAGE (+ MADV_COLLAPSE once a 2 MiB region is populated), else plain 4 KiB pages. The
// range is pre-faulted once (at Create or by a background thread), never per allocation, and never
// mmap'd / munmap'd per folio. backing_report() says what was obtained, read from
// /proc/self/smaps, never what was asked for.
//
// Thread safety: Alloc / Free / stats are thread-safe. Orders 0..kCachedOrderMax are served from
// per-thread caches so two threads do not serialise on the global lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "folio/status.h"

namespace folio {

inline constexpr size_t kPageBytes = 4096;
inline constexpr int kPageShift = 12;
inline constexpr int kMaxOrder = 9;  // 2 MiB
inline constexpr int kNumOrders = kMaxOrder + 1;
inline constexpr size_t kMaxFolioBytes = kPageBytes << kMaxOrder;

inline constexpr size_t OrderBytes(int order) { return kPageBytes << order; }
inline constexpr uint64_t OrderPages(int order) { return uint64_t{1} << order; }

// Folio flag bits (Folio::flags).
enum FolioFlag : uint32_t {
  kFolioUptodate = 1u << 0,   // contents match or are newer than the backing store
  kFolioDirty = 1u << 1,      // newer than the backing store; must be written back
  kFolioWriteback = 1u << 2,  // a write of this folio is in flight
  kFolioLocked = 1u << 3,     // an owner holds the folio lock (I/O, split, collapse)
  kFolioReferenced = 1u << 4, // accessed since the eviction clock last passed (second chance)
  kFolioReadahead = 1u << 5,  // PG_readahead: the async-readahead trigger mark
  kFolioLru = 1u << 6,        // on an eviction list
  kFolioError = 1u << 7,      // the last I/O on this folio failed
};

// The per-frame descriptor. Only the head frame's descriptor of an allocated folio carries
// meaning for users; the allocator keeps its own state in the free frames' descriptors.
// Fields other than `flags` and `refcount` are owned by whoever holds the folio (the cache
// sets them under its own locks).
struct alignas(64) Folio {
  std::atomic<uint32_t> flags{0};
  std::atomic<int32_t> refcount{0};
  uint8_t order = 0;
  uint8_t alloc_state = 0;   // allocator-private
  uint16_t alloc_aux = 0;    // allocator-private
  uint32_t frame = 0;        // frame number of this descriptor in the arena (constant)
  std::atomic<void*> owner{nullptr};     // the AddressSpace (or other user) holding the folio
  std::atomic<uint64_t> index{0};        // page index in the owner (multiple of 2^order)
  Folio* prev = nullptr;     // list links: free lists in the allocator, LRU in the cache
  Folio* next = nullptr;
  uint64_t private_data = 0; // owner-private (e.g. cache generation, dirty sub-range)

  size_t bytes() const { return OrderBytes(order); }
  uint64_t nr_pages() const { return OrderPages(order); }
  bool TestFlag(uint32_t f) const { return (flags.load(std::memory_order_acquire) & f) != 0; }
  void SetFlag(uint32_t f) { flags.fetch_or(f, std::memory_order_acq_rel); }
  void ClearFlag(uint32_t f) { flags.fetch_and(~f, std::memory_order_acq_rel); }
  // Atomically sets f; returns true if it was clear before (i.e. this call set it).
  bool TestAndSetFlag(uint32_t f) { return (flags.fetch_or(f, std::memory_order_acq_rel) & f) == 0; }

  // Takes a reference only if the folio is live (refcount > 0). Lock-free readers use this
  // and then recheck owner/index, since the folio may have been freed and reused meanwhile.
  bool TryGet() {
    int32_t r = refcount.load(std::memory_order_acquire);
    while (r > 0) {
      if (refcount.compare_exchange_weak(r, r + 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  }
  void Get() { refcount.fetch_add(1, std::memory_order_acq_rel); }
  // Drops a reference; returns the count after the drop. Callers that drop the last
  // reference of a cache folio free it to the arena.
  int32_t Put() { return refcount.fetch_sub(1, std::memory_order_acq_rel) - 1; }
};
static_assert(sizeof(Folio) == 64, "a folio descriptor must cost at most 64 bytes per frame");

enum class ArenaBacking { kAuto, kHugetlb, kThp, k4k };
std::string_view ArenaBackingName(ArenaBacking b);
// Parses "auto", "hugetlb", "thp", "4k".
Result<ArenaBacking> ParseArenaBacking(std::string_view text);

struct ArenaOptions {
  size_t capacity_bytes = 64ull << 20;  // rounded up to 2 MiB
  ArenaBacking backing = ArenaBacking::kAuto;
  // Pre-fault in a background thread instead of inside Create (Alloc still works at once;
  // a first touch of a not-yet-faulted frame just pays the fault itself).
  bool prefault_in_background = false;
  // Try MADV_COLLAPSE on each 2 MiB region after pre-faulting (THP backing only).
  bool collapse = true;
};

// What the arena actually obtained.
struct ArenaBackingReport {
  ArenaBacking requested = ArenaBacking::kAuto;
  ArenaBacking obtained = ArenaBacking::k4k;  // hugetlb, thp (some AnonHugePages), or 4k
  size_t capacity_bytes = 0;
  size_t hugetlb_bytes = 0;         // bytes backed by hugetlb pages
  size_t anon_huge_bytes = 0;       // AnonHugePages of the range, from /proc/self/smaps
  size_t rss_bytes = 0;             // Rss of the range, from /proc/self/smaps
  size_t collapse_ok = 0;           // MADV_COLLAPSE calls that succeeded
  size_t collapse_failed = 0;
  double prefault_seconds = 0;
  bool prefault_done = false;
  std::string note;                 // why a preferred backing was not used
};

struct ArenaOrderStats {
  uint64_t allocs = 0;      // successful allocations of this order
  uint64_t frees = 0;
  uint64_t splits = 0;      // blocks of this order split into two of order-1
  uint64_t merges = 0;      // pairs of buddies of this order merged into one of order+1
  uint64_t failures = 0;    // Alloc(order) that returned NoSpace
  uint64_t fallbacks = 0;   // callers that then fell back to a smaller order (NoteFallback)
  uint64_t free_folios = 0; // free blocks of this order right now (global + per-thread caches)
};

struct ArenaStats {
  ArenaOrderStats orders[kNumOrders];
  size_t capacity_bytes = 0;
  size_t free_bytes = 0;
};

class FolioArena {
 public:
  // Orders served from per-thread caches.
  static constexpr int kCachedOrderMax = 4;

  static Result<std::unique_ptr<FolioArena>> Create(const ArenaOptions& options);
  ~FolioArena();
  FolioArena(const FolioArena&) = delete;
  FolioArena& operator=(const FolioArena&) = delete;

  // Allocates a folio of `order`: refcount 1, flags 0, owner null, index 0, order set.
  // Returns NoSpace (naming the order) when no block of that order or larger is free.
  // Context: may take the arena lock; never blocks on I/O.
  Result<Folio*> Alloc(int order);
  // REQUIRES: f came from Alloc of this arena and is not free.
  void Free(Folio* f);
  // Free, but onto the shared free lists even for orders <= kCachedOrderMax (never into this
  // thread's cache), so that any thread's next Alloc finds the block at once: for a block one
  // thread builds for others (the page cache's background compaction).
  // REQUIRES: as Free.
  void FreeShared(Folio* f);
  // Records that a caller fell back from `order` to a smaller one.
  void NoteFallback(int order);
  // Splits an allocated folio of order k >= 1 into its two buddies of order k-1, both
  // allocated: f keeps the lower half (its order becomes k-1) and the returned descriptor heads
  // the upper half with refcount 0, flags 0, owner null, index 0 (the caller sets them). Each
  // half is then freed independently with Free(). Counted in ArenaOrderStats::splits of order k.
  // REQUIRES: f came from Alloc (or Split) of this arena, is not free, f->order >= 1, and
  // nobody else relies on f->order meanwhile (the page cache freezes the folio first).
  // Context: takes the arena lock; never blocks on I/O.
  Folio* Split(Folio* f);

  // ---- Compaction: building a free aligned block for a large folio (the page cache's
  // compaction moves the block's occupants away; see src/cache/compaction.cc) ----
  // Lists the allocated folio heads inside the aligned block [first_frame, +2^order) and counts
  // its free frames, in one consistent look. Returns false when the block cannot be compacted:
  // one folio (or one free block) holds all of it, or a per-thread cache holds part of it.
  // REQUIRES: first_frame a multiple of 2^order inside the arena.
  bool ScanBlock(uint32_t first_frame, int order, std::vector<Folio*>* allocated,
                 uint32_t* free_pages) const;
  // Takes every free block inside the block off the free lists so nobody else can allocate
  // it; each is appended to *pieces allocated, refcount 0, owned by the caller (give it back
  // with Free, or use it in AssembleBlock). Splits a larger free block holding the range.
  void TakeFreeIn(uint32_t first_frame, int order, std::vector<Folio*>* pieces);
  // Merges *pieces (allocated folios with refcount 0 that the caller owns, in any order) into
  // one folio of `order` at first_frame, initialised as Alloc initialises one (refcount 1), and
  // clears *pieces. Returns null (changing nothing) when they do not tile the block exactly.
  Folio* AssembleBlock(uint32_t first_frame, int order, std::vector<Folio*>* pieces);

  char* Data(const Folio* f) const { return base_ + (static_cast<size_t>(f->frame) << kPageShift); }
  // Descriptor of the frame holding addr (not necessarily a folio head).
  Folio* FrameOf(const void* addr) const;
  Folio* Frame(uint32_t frame) const { return &descs_[frame]; }
  uint32_t frame_count() const { return frame_count_; }
  char* base() const { return base_; }
  size_t capacity_bytes() const { return capacity_bytes_; }
  bool Contains(const void* p) const {
    return p >= base_ && static_cast<const char*>(p) < base_ + capacity_bytes_;
  }

  ArenaStats Stats() const;
  // Re-reads /proc/self/smaps for the range.
  ArenaBackingReport backing_report() const;
  // Waits for a background pre-fault to finish.
  void WaitPrefault();
  // Returns every per-thread cache's blocks to the global free lists (for invariant walks).
  void DrainThreadCaches();
  // Debug walk: checks alignment, no overlap, free-list consistency. Returns Corruption on
  // the first broken invariant.
  Status CheckInvariants() const;

 private:
  FolioArena() = default;
  // Free's checks (ours, an allocated head, no reference left but the caller's) and the
  // owner reset that makes racing lock-free readers fail their recheck.
  void ReleaseForFree(Folio* f);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  char* base_ = nullptr;
  size_t capacity_bytes_ = 0;
  Folio* descs_ = nullptr;
  uint32_t frame_count_ = 0;
};

}  // namespace folio
