// AddressSpaceImpl: one file (or device) in the page cache: its folio index, readahead
// streams, zero ranges, dirty tracking and sticky writeback error.
//
// Invariants (besides PageCacheImpl's):
//   1. A folio in the index is up to date (kFolioUptodate: every page), or partly up to date
//      (unlocked, no kFolioError; its uptodate page bits say which pages: a write left the
//      others unread), or locked with its read in flight, or marked kFolioError and unlocked
//      (a failed read: "stale"; the next user removes it).
//   2. Removing a folio from the index needs mu_ plus either the folio lock or a freeze
//      (refcount 1 -> 0, only possible when nobody else holds a reference). Changing a
//      folio's order (split) needs mu_, the folio lock and a freeze. So a thread holding a
//      folio's lock, having rechecked its slot, owns that index range until it unlocks.
//   3. A folio's dirty page bits, kFolioDirty (any page dirty), the index's dirty bit and
//      dirty_bytes_ change together under the folio lock. Writeback takes the dirty bits under
//      the lock, marks those pages under writeback (page bits and kFolioWriteback) and unlocks:
//      a writer that would change a page under writeback waits for that write (stable pages),
//      one that writes the folio's other pages does not; whatever splits or removes a folio
//      waits for its writeback first.
//   4. Every byte at or past the logical size reads as zero once the size grows over it: a
//      growth or a shrink drops the cached folios of the affected whole pages, then records
//      them as zero ranges (the partial page is zeroed in the cache, dirty). Device reads of
//      those pages are zeroed in memory (the overlap is noted when the folio is inserted) until
//      a writeback pass has written the zeros. A pass writes every pending zero range before
//      any folio, and skips a dirty folio that overlaps a range recorded after its zeros went
//      out (the next pass writes zeros, then the folio): zeros never land over newer data.
//
// Durability: Write() data reaches the device through writeback (background threads, reclaim,
// Fsync); it is durable once an Fsync() that started after the Write returned OK. After a
// crash each 4 KiB page holds its content as of the last completed Fsync, or a content it had
// at some later moment, never anything else. Truncated ranges are zero on the device once an
// Fsync after the Truncate completed. Destroying an address space drops its dirty data
// (Fsync first if it matters).
//
// Thread safety: all public methods are thread-safe. Lock order: lock_rank.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "base/cache_line.h"
#include "cache/errseq.h"
#include "cache/folio_index.h"
#include "cache/page_state.h"
#include "cache/page_range_set.h"
#include "cache/readahead.h"
#include "folio/page_cache.h"

namespace folio::cache {

class PageCacheImpl;
enum class AllocMode;
struct ReadJob;

class AddressSpaceImpl final : public AddressSpace {
 public:
  AddressSpaceImpl(PageCacheImpl* cache, BlockDevice* device, std::string name,
                   uint64_t size_bytes, const FolioPolicy& policy, bool trim_zero_ranges,
                   uint64_t readahead_max_pages);
  // Drops every folio (dirty data is discarded), waiting for reads in flight.
  // REQUIRES: no concurrent call on this address space.
  ~AddressSpaceImpl() override;

  Result<size_t> Read(uint64_t pos, std::span<char> out) override;
  Result<size_t> Write(uint64_t pos, std::span<const char> in) override;
  Status Fsync() override;
  Status Fsync(WritebackErrorCursor* cursor) override;
  WritebackErrorCursor SampleWritebackError() override;
  Status WriteBack() override;
  WritebackErrorState writeback_errors() const override;
  Status Invalidate(uint64_t pos, uint64_t len) override;
  Status Truncate(uint64_t size) override;
  Status Advise(uint64_t pos, uint64_t len, Advice advice) override;
  uint64_t size() const override { return size_.load(std::memory_order_acquire); }
  FolioPolicy policy() const override;
  void SetPolicy(const FolioPolicy& policy) override;
  BlockDevice* device() const override { return device_; }
  const std::string& name() const override { return name_; }

  // ---- For PageCacheImpl ----------------------------------------------------------------
  // Reclaim try-locks this (rank 3) while holding the LRU lock.
  std::mutex& mapping_mutex() { return mu_; }
  // Removes a clean folio that reclaim froze (refcount 0) from the index.
  // REQUIRES: mu_ held; f frozen, clean, in this index.
  void RemoveFrozenLocked(Folio* f);
  // Compaction (compaction.cc): if f is still in this index, unlocked, not under writeback,
  // without errors and held only by the index, freezes it and moves it into dst (a fresh folio
  // of the same order: data, page bits, flags; dst replaces f in the index and on the LRU), or
  // with dst == nullptr removes it (clean only). Then f is out of the index and off the LRU,
  // frozen (refcount 0) with its flags cleared, and its frames belong to the caller. Returns
  // false, changing nothing, when f is busy or gone.
  // REQUIRES: this address space pinned by the caller; no lock held.
  bool MoveForCompaction(Folio* f, Folio* dst);
  // Writes back every dirty folio in [first, last) (pages), after any pending zero ranges.
  // Returns the first error of this pass (also recorded as the sticky error).
  Status WritebackRange(uint64_t first, uint64_t last);
  // Writes back the folios at these page indices if still dirty (reclaim). Sorted ascending.
  Status WritebackIndices(std::span<const uint64_t> indices);
  // Collapses small folios of [first, last) into large ones where possible; returns how many
  // large folios were built.
  size_t CollapseRange(uint64_t first, uint64_t last);
  bool HasWritebackWork();
  // When this address space last went from clean to having writeback work; 0 when clean.
  uint64_t dirty_since_ns() const { return dirty_since_ns_.load(std::memory_order_seq_cst); }
  // Writes back everything (its data expired, the kernel's kupdate writeback); the expiry
  // clock restarts if it was written to meanwhile.
  Status WritebackExpired();
  // Writes back about max_bytes of dirty pages, from where the previous call stopped (wrapping
  // at the end). Returns the bytes written.
  uint64_t WritebackSome(uint64_t max_bytes);
  // Debug: whether any slot of f's range still points at f.
  bool IndexHolds(const Folio* f) const;
  uint64_t device_pages() const { return device_pages_; }
  void Pin() { pins_.fetch_add(1, std::memory_order_acq_rel); }
  void Unpin() { pins_.fetch_sub(1, std::memory_order_acq_rel); }
  // Where this address space is in the cache's registry (PageCacheImpl::spaces_), so that
  // unregistering is O(1) with thousands of files open or cached. GUARDED_BY(registry_mu_).
  size_t registry_slot = 0;

 private:
  enum class DropMode { kCleanOnly, kDiscard };
  struct Planned {
    uint64_t index = 0;
    int order = 0;
    bool required = false;     // part of what the caller asked for (vs read ahead)
    Folio* folio = nullptr;
  };

  // ---- address_space.cc: lookup, removal, creation ----
  // A referenced folio covering index, or null.
  Folio* LookupGet(uint64_t index);
  // The folio covering index, referenced and locked (waiting for a busy lock without holding
  // a reference), or null. REQUIRES: no folio lock held.
  Folio* LockFolioAt(uint64_t index);
  // Removes a folio the caller locked (holding one reference) from the index and LRU,
  // discarding its dirty state; unlocks it and drops both the caller's and the index's
  // references.
  void RemoveLocked(Folio* f);
  // Drops folios of [first, last), splitting those that straddle an end.
  void DropRange(uint64_t first, uint64_t last, DropMode mode);
  // Allocates a folio for each planned piece (with fallback) and inserts those whose range is
  // still free, locked and not up to date, with `flags`, kFolioReadahead on the one holding
  // `mark`, and a reference for the caller. Appends them (ascending) to *out and the zero
  // ranges overlapping them to *zero. Fails only when the first piece cannot be allocated;
  // the pieces after a failed one are dropped (callers loop over what is still missing).
  Status InsertNew(std::vector<Planned>* plan, AllocMode mode, uint64_t mark,
                   std::vector<PageRange>* zero, std::vector<Folio*>* out);
  uint64_t SizePages() const;
  ReadaheadMode ra_mode() const {
    return static_cast<ReadaheadMode>(ra_mode_.load(std::memory_order_relaxed));
  }

  // ---- read.cc ----
  // Reads the folios around a missing index (a readahead window), synchronously.
  Status ReadMiss(uint64_t index, uint64_t req_pages);
  // Turns [start, end) into planned folios of at most `order` (or the fixed order), skipping
  // cached ones. REQUIRES: mu_.
  void PlanRangeLocked(uint64_t start, uint64_t end, int order, const FolioPolicy& policy,
                       uint64_t req_first, uint64_t req_last, std::vector<Planned>* plan);
  void AsyncReadahead(uint64_t folio_index, uint64_t folio_pages, uint64_t req_pages);
  void WillNeed(uint64_t pos, uint64_t len);
  // Submits plan's folios to the async reader.
  void SubmitAsync(std::vector<Folio*> folios, std::vector<PageRange> zero);
  // Removes a stale (failed read) folio at index if it is still there.
  void RemoveStale(uint64_t index);
  // Reads the pages of [index, last_page] that the partly up-to-date folio at index lacks.
  Status FillForRead(uint64_t index, uint64_t last_page);

  // ---- write.cc ----
  // Writes len bytes at pos from src (zeros when src is null); old_size decides which pages of
  // a new folio are read from the device and which are zero. REQUIRES: the size lock.
  // Write without the throttle (Write throttles for what this wrote dirty, afterwards).
  Result<size_t> WriteUnthrottled(uint64_t pos, std::span<const char> in);
  // stream: the write continues the previous one (see write_end_).
  Status WriteData(uint64_t pos, const char* src, uint64_t len, uint64_t old_size,
                   bool stream = false);
  // Creates folios for the uncached run starting at pos and writes into them; returns the
  // bytes of [pos, ...) now written (0 if another thread cached pos first). In a sequential
  // write stream (dynamic policy) a new folio is the largest empty aligned block holding its
  // first page, below the old size or the write's end (only the run's first may start before
  // pos).
  Result<uint64_t> WriteNew(uint64_t pos, const char* src, uint64_t len, uint64_t old_size,
                            bool stream);
  // Pages of one locked folio to bring to their content (relative to the folio).
  struct PageFill {
    Folio* folio;
    PageMask pages;
  };
  // Brings the pages of new folios (locked, not up to date) that [pos, end) covers in part to
  // their pre-write content, and zeroes those at or past old_size or in zero ranges. Pages the
  // write does not touch below old_size stay unread. valid[i] gets folio i's pages that are
  // now up to date apart from the ones the write will cover whole.
  Status FillForWrite(std::span<Folio* const> folios, uint64_t pos, uint64_t end,
                      uint64_t old_size, const std::vector<PageRange>& zero, PageMask* valid);
  // A partly up-to-date cached folio about to take [from, to) (inside it): reads (or zeroes)
  // the pages the range covers in part that are not up to date. REQUIRES: f locked.
  Status FillPartialPagesLocked(Folio* f, uint64_t from, uint64_t to, uint64_t old_size);
  // Fills the pages: zeros at or past old_size or inside `zero`, device reads elsewhere (one
  // request per run). Does not mark them up to date. REQUIRES: every folio locked.
  Status FillPages(std::span<const PageFill> fills, uint64_t old_size,
                   const std::vector<PageRange>& zero);
  // The zero ranges (pending or being written) overlapping pages [first, last).
  std::vector<PageRange> ZeroOverlaps(uint64_t first, uint64_t last);
  // Marks pages [first, first + n) of f dirty (and, if they were in error, written over).
  // REQUIRES: f locked, up to date over those pages (or about to be, under the same lock).
  void MarkDirtyLocked(Folio* f, uint32_t first, uint32_t n);
  // Marks pages up to date; sets kFolioUptodate once all of f is. REQUIRES: f locked.
  void MarkUptodateLocked(Folio* f, uint32_t first, uint32_t n);
  // New writeback work (dirty pages, zero ranges): starts the expiry clock if it is not
  // running. Cheap when it is (one load).
  void NoteDirtied();
  // Makes [from, to) read as zeros (partial first page in the cache, whole pages as zero
  // ranges). REQUIRES: the size lock held exclusively; [from, to) at or past the size.
  Status ZeroRange(uint64_t from, uint64_t to, uint64_t fill_size);
  void ExtendSize(uint64_t end);

  // ---- writeback.cc ----
  class WritebackBatch;
  // Tries to add the dirty folio at index to the batch. Returns the next index to look at.
  uint64_t CollectDirty(uint64_t index, WritebackBatch* batch);
  Status MaterializeZeros();
  // True when [first, last) overlaps a zero range this pass has not written: a folio there
  // must wait for a later pass, whose zeros go first.
  bool OverlapsPendingZeros(uint64_t first, uint64_t last);
  void AddZeroRange(uint64_t first, uint64_t last);  // REQUIRES: mu_
  // After a pass that started with the clock at `since`: stops the clock, or restarts it at
  // `now` if work remains (written meanwhile).
  void RestartDirtyClock(uint64_t since, uint64_t now);
  // Records a failed writeback request for every handle (errseq).
  void RecordWritebackError(const Status& s);
  // The write of these pages of f failed: error bits, kFolioWbError, unwritten bytes.
  // REQUIRES: f locked by the caller, the pages under writeback.
  void MarkWriteFailedLocked(Folio* f, const PageMask& failed);
  // Pages [first, first + n) of f leave the error state: written over (they will be written
  // again) or discarded (truncate). Pages evicted or invalidated in error stay counted.
  // REQUIRES: f locked or frozen by the caller.
  void ClearWritebackError(Folio* f, uint32_t first, uint32_t n);

  // ---- split_collapse.cc ----
  // Splits f (order k >= 1) into halves; f keeps the lower one. Both halves stay locked and
  // referenced by the caller. REQUIRES: mu_ held, f locked by the caller with one reference.
  Folio* SplitLocked(Folio* f);
  // Collapses the block [start, start + 2^order) if it is covered by clean, up-to-date,
  // unshared smaller folios. Returns true on success.
  bool CollapseBlock(uint64_t start, int order);
  size_t CollapseRecursive(uint64_t start, int order, uint64_t first, uint64_t last);

  PageCacheImpl* const cache_;
  BlockDevice* const device_;
  const bool trim_zero_ranges_;  // zero ranges go to the device as trims (sparse_device)
  const std::string name_;
  const uint64_t device_pages_;
  FolioIndex index_;
  std::atomic<uint64_t> size_;
  std::atomic<uint32_t> policy_;
  std::atomic<int> ra_mode_{static_cast<int>(ReadaheadMode::kNormal)};
  std::atomic<int64_t> dirty_bytes_{0};
  std::atomic<uint64_t> dirty_since_ns_{0};  // see dirty_since_ns(); NoteDirtied / passes
  uint64_t wb_cursor_ = 0;                   // GUARDED_BY(wb_mu_): where WritebackSome resumes
  std::atomic<int> pins_{0};
  // Where the last Write ended (bytes; ~0 before the first). A write that starts there continues
  // a sequential stream. A hint only: concurrent writers may interleave. Every Write stores it,
  // so it has a line of its own, away from size_ and policy_ that every read and write loads.
  alignas(kFalseSharingBytes) std::atomic<uint64_t> write_end_{~uint64_t{0}};
  char write_end_pad_[kFalseSharingBytes - sizeof(std::atomic<uint64_t>)];

  std::shared_mutex size_lock_;  // rank 0
  std::mutex wb_mu_;             // rank 1
  std::mutex mu_;                // rank 3
  ReadaheadState ra_;            // GUARDED_BY(mu_)
  PageRangeSet zero_;            // GUARDED_BY(mu_): zero ranges not yet written
  std::atomic<bool> zero_pending_{false};  // == !zero_.empty(), readable without mu_
  PageRangeSet zero_inflight_;   // GUARDED_BY(mu_): zero ranges being written by a pass

  ErrSeq errseq_;                // writeback errors (errseq rules; its lock is a leaf)
  // The cursorless Fsync's cursor: read and written only inside errseq_ (under its lock).
  WritebackErrorCursor fsync_cursor_;
  std::atomic<int64_t> unwritten_bytes_{0};  // bytes of kFolioWbError folios (+ evicted ones)
};

}  // namespace folio::cache
