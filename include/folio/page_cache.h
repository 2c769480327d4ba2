// PageCache: a page cache of dynamic folios over a FolioArena, with one AddressSpace per file
// or device, each backed by a BlockDevice.
//
// Folio policy (per cache, overridable per address space):
//   4k        every folio is order 0 (the baseline)
//   fixed:S   every folio is S bytes (capped by alignment and end of file)
//   dynamic   reads follow a per-stream readahead window whose order ramps up by 2 on each
//             asynchronous readahead hit and drops to 0 on random misses; writes take the
//             order of the write's length and alignment
// Every order is capped by alignment, end of file and max_folio, and falls back to a smaller
// order when the arena cannot serve it (counted as a fallback, never an error).
//
// Readahead window (pages), as in mm/readahead.c:
//
//     |<----------------- size ----------------->|
//     |                  |<----- async_size ----->|
//   start          start + size - async_size      start + size
//                        ^ folio marked kFolioReadahead: a hit here issues the next window
//
// Durability contract:
//   * Write() returns once the data is in the cache: the 4 KiB pages it wrote are dirty (dirty
//     state is per page, also inside large folios). They reach the device through writeback:
//     the flusher (data older than dirty_expire_ms, and whatever brings dirty bytes under the
//     background threshold), reclaim (a dirty folio about to be evicted), and Fsync(). Only
//     dirty pages are written, in runs merged across folios.
//   * Data written before an Fsync() started is durable once that Fsync() returns OK: Fsync
//     writes back every dirty page of the address space (waiting for writeback already in
//     flight, including the flusher's), then flushes the device.
//   * After a crash (power loss) each 4 KiB page of the device holds its content as of the last
//     Fsync() that returned OK, or a content it had at some later moment (any prefix of the
//     later writes to it), never anything else: a page is never changed while it is being
//     written (a writer of that page waits; writers of the folio's other pages do not). Writes
//     are not atomic across pages.
//   * Truncate() has no metadata to persist (the logical size lives in memory; a reopened
//     address space defaults to the device's size). Instead the dropped range (and any range a
//     growth exposes) is recorded as "zero ranges": reads see zeros at once, and writeback writes
//     the zeros to the device before any later data of the same pages. So once an Fsync() after
//     a Truncate() returned OK, the truncated range reads as zeros even after a crash. The cost
//     is writing those zeros (no sparse files at this layer).
//   * Writeback errors follow Linux's errseq rules, per open handle (a WritebackErrorCursor,
//     the kernel's struct file::f_wb_err): every handle open when an error happened gets it at
//     its next Fsync(cursor), once, with its code and errno (NoSpace stays NoSpace); a handle
//     sampled later still gets an error nobody has seen yet; WriteBack() (a close, an unmount)
//     reports to nobody and marks nothing seen. The cursorless Fsync() is one more handle, as
//     old as the address space. A folio whose write failed stays up to date in memory (readers
//     see what was written) and is not written again (never hang on a dead device): its bytes
//     count in writeback_errors().unwritten_bytes until they are written over; the data is
//     lost if it is evicted or invalidated (it stays counted).
//   * Destroying an address space drops its dirty data: Fsync() first if it matters.
//
// Memory: the cache never holds more than memory_bytes of folios. A full cache reclaims from the
// cold end of a cache-wide LRU clock, clean folios before dirty ones; writers slow down as dirty
// bytes climb from the midpoint of the background threshold and the dirty limit towards the
// limit, and wait above it. No single folio is larger than 1/16 of the cache for writes (1/8
// for readahead windows). A write into a large folio that is not up to date reads only the
// pages it covers in part; the pages it does not touch are read when someone reads them.
//
// Thread safety: all methods of PageCache and AddressSpace are thread-safe. Reads of cached
// data take no global lock (a lock-free index lookup plus a folio reference).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "folio/arena.h"
#include "folio/block_device.h"
#include "folio/status.h"

namespace folio {

struct FolioPolicy {
  enum class Kind { k4k, kFixed, kDynamic } kind = Kind::kDynamic;
  int fixed_order = 0;        // with kFixed
  int max_order = kMaxOrder;  // cap for kDynamic (from max_folio)

  // Parses "4k", "fixed:SIZE" (a power of two 4K..2M), "dynamic". The error names the value.
  // "dynamic:MAX" is dynamic with max_order from a max folio size MAX (a power of two 4K..2M).
  static Result<FolioPolicy> Parse(std::string_view text);
  std::string ToString() const;  // "4k", "fixed:64K", "dynamic", "dynamic:512K"
  // max_order for a largest folio of max_folio_bytes (a power of two 4K..2M).
  static Result<int> MaxOrderForBytes(uint64_t max_folio_bytes);
};

enum class Advice { kNormal, kSequential, kRandom, kWillNeed, kDontNeed, kCollapse };

// What the cache does when a large folio cannot be had even after reclaim (the arena is
// fragmented): compaction picks a 2^order-aligned block of the arena whose folios can move and
//   kMigrate  copies them into free memory elsewhere and repoints the index at the copies
//             (clean and dirty alike; a clean one is dropped when no free memory is left)
//   kEvict    drops them (clean ones only: their data is on the device)
//   kOff      does neither: the request falls back to a smaller folio at once
// then serves the request with the freed block. See docs/compaction.md.
enum class CompactionMode { kOff, kEvict, kMigrate };
std::string_view CompactionModeName(CompactionMode m);  // "off", "evict", "migrate"
// Parses "off", "evict", "migrate"; the error names the value and the choices.
Result<CompactionMode> ParseCompactionMode(std::string_view text);

struct PageCacheOptions {
  uint64_t memory_bytes = 256ull << 20;  // the arena's capacity (all folios of this cache)
  ArenaBacking backing = ArenaBacking::kAuto;
  bool prefault_in_background = false;
  FolioPolicy policy;                    // default for new address spaces
  uint64_t readahead_max_bytes = 2ull << 20;  // largest readahead window
  bool collapse_scanner = true;          // background collapse of small clean folios
  uint64_t collapse_interval_ms = 1000;  // how often the collapse scanner runs
  // Freeing aligned blocks of the arena for large folios that fragmentation would otherwise
  // turn into fallbacks (CompactionMode); bounded per attempt, never waits for I/O.
  CompactionMode compaction = CompactionMode::kMigrate;
  // With compaction on: a background compactor (the kernel's kcompactd). When a request of
  // order k >= 1 had to compact in the allocating thread or fell back, it is woken to build
  // free blocks of order k ahead of the next requests (until two are free, a bounded number
  // of attempts per round, at most a round per compaction_background_interval_ms), so those
  // find a block free instead of copying folios themselves.
  bool compaction_background = true;
  uint64_t compaction_background_interval_ms = 20;

  // Writeback, named after the kernel's vm.dirty_* sysctls (docs/page-cache.md sets the
  // defaults beside the kernel's). Ratios are percent of memory_bytes; a non-zero *_bytes
  // overrides its ratio (in the kernel, setting one clears the other).
  int writeback_threads = 1;             // flusher threads; 0: writers write back themselves
  // Dirty data above this is written back in the background until it is below again
  // (vm.dirty_background_ratio / vm.dirty_background_bytes).
  uint32_t dirty_background_ratio = 25;
  uint64_t dirty_background_bytes = 0;
  // The hard limit: writers are slowed in proportion to how far dirty data is above the
  // midpoint of background and limit (balance_dirty_pages), and wait above the limit
  // (vm.dirty_ratio / vm.dirty_bytes).
  uint32_t dirty_ratio = 50;
  uint64_t dirty_bytes = 0;
  // Dirty data older than this is written back whatever the amount (per address space, like
  // the kernel's per-inode dirtied_when; vm.dirty_expire_centisecs x 10).
  uint64_t dirty_expire_ms = 30000;
  // The flusher wakes this often to look for expired data (and at once when dirty data
  // crosses the background threshold; vm.dirty_writeback_centisecs x 10).
  uint64_t dirty_writeback_ms = 5000;
};

// Checks PageCacheOptions' writeback knobs as PageCache::Create does (ratios 1..100, the
// background threshold below the limit, intervals of at least 1 ms), for commands that want
// to report a bad flag before they start. The error names the values and the fix.
Status CheckWritebackOptions(const PageCacheOptions& options);

// The dirty thresholds writeback applies in a cache of capacity_bytes: each non-zero *_bytes
// option, else its ratio of the capacity.
struct DirtyThresholds {
  uint64_t background_bytes = 0;
  uint64_t limit_bytes = 0;
};
DirtyThresholds EffectiveDirtyThresholds(const PageCacheOptions& options, uint64_t capacity_bytes);

// The readahead window a cache of capacity_bytes uses for a requested largest window of
// requested_bytes: at most an eighth of the capacity, at least four pages; whole pages.
uint64_t EffectiveReadaheadBytes(uint64_t requested_bytes, uint64_t capacity_bytes);

// Per-order cache statistics.
struct CacheOrderStats {
  uint64_t resident_folios = 0;
  uint64_t resident_bytes = 0;
  uint64_t requests = 0;    // folios of this order asked for by reads and writes (not
                            // collapse) that got a folio, of this order or a smaller one
  uint64_t allocs = 0;      // folios of this order added to the cache
  uint64_t fallbacks = 0;   // wanted this order, arena could not serve it
  uint64_t compacted = 0;   // requests of this order served by a block compaction freed
  uint64_t splits = 0;      // folios of this order split into buddies
  uint64_t collapses = 0;   // folios of this order built by collapse
  uint64_t hits = 0;        // lookups served by a resident folio of this order
  uint64_t misses = 0;      // folios of this order created to serve a miss
  uint64_t evictions = 0;
};

struct PageCacheStats {
  CacheOrderStats orders[kNumOrders];
  uint64_t readahead_windows = 0;       // readahead windows issued (sync + async)
  uint64_t readahead_async = 0;         // async windows triggered by a marked folio
  uint64_t readahead_hit_pages = 0;     // pages read ahead and later read by the user
  uint64_t evictions = 0;
  uint64_t evicted_dirty = 0;           // evictions that first had to write back
  // Evictions of referenced large folios whose reads touched few of their pages (reclaim's
  // sparse rule, src/cache/page_state.h kSparseShare); also in evictions.
  uint64_t sparse_evictions = 0;
  uint64_t writeback_requests = 0;      // requests sent to devices by writeback
  uint64_t writeback_bytes = 0;
  HistogramSnapshot writeback_request_bytes;
  uint64_t dirty_bytes = 0;             // now: 4 KiB per dirty page (not per dirty folio)
  uint64_t resident_bytes = 0;          // now
  uint64_t throttled_writes = 0;        // writes that paused or waited for dirty bytes to fall
  uint64_t throttled_ns = 0;            // time writers spent in those pauses
  uint64_t writeback_expired_passes = 0;     // flusher passes over expired address spaces
  uint64_t writeback_background_chunks = 0;  // flusher chunks above the background threshold
  uint64_t dirty_background_bytes = 0;  // the thresholds in force (from the options)
  uint64_t dirty_limit_bytes = 0;
  uint64_t writeback_bytes_per_s = 0;   // the flusher's measured write rate (an average)
  uint64_t writeback_waits = 0;         // writes that waited for a page under writeback
  uint64_t write_pages_not_read = 0;    // pages of new folios a write neither covered nor read
  uint64_t write_stream_folios = 0;     // new folios a sequential write stream made larger than
                                        // its write (dynamic policy)
  uint64_t fill_read_requests = 0;      // device reads for partly written or unread pages
  uint64_t partial_read_fills = 0;      // reads that read the missing pages of a folio
  // Compaction (PageCacheOptions::compaction): allocations of order >= 1 that tried it, and
  // those it served; aligned blocks looked at; folios and bytes it copied elsewhere
  // (migrated: the bytes moved) or dropped (evicted, also counted in evictions).
  uint64_t compact_attempts = 0;
  uint64_t compact_successes = 0;
  uint64_t compact_blocks_scanned = 0;
  uint64_t compact_migrated_folios = 0;
  uint64_t compact_migrated_bytes = 0;
  uint64_t compact_evicted_folios = 0;
  uint64_t compact_evicted_bytes = 0;
  // The background compactor (PageCacheOptions::compaction_background): blocks it tried to
  // free and blocks it freed into the arena for later requests. Its scans and moves are in
  // the compact_blocks_scanned / _migrated_ / _evicted_ counters above; compact_attempts and
  // compact_successes count the allocating threads' own attempts only.
  uint64_t compact_background_attempts = 0;
  uint64_t compact_background_blocks = 0;
  // Clean bytes it evicted (also in evictions) so that a block's worth was free to gather.
  uint64_t compact_background_reclaimed_bytes = 0;
  uint64_t memory_bytes = 0;
};

class PageCache;

// What one open handle has seen of an address space's writeback errors: an errseq sample
// (lib/errseq.c). Take one per handle with AddressSpace::SampleWritebackError() and pass it to
// Fsync(cursor); the value is opaque.
struct WritebackErrorCursor {
  uint64_t seq = 0;
};

// Writeback failures of one address space that nothing has repaired.
struct WritebackErrorState {
  uint64_t errors = 0;           // failed writeback requests since the address space opened
  uint64_t unwritten_bytes = 0;  // written to the cache, never reached the device (write
                                 // failed; not written over since; evicted ones included)
  Status latest;                 // the latest error (OK if none)
};

struct AddressSpaceOptions {
  std::string name;               // for stats and messages
  uint64_t size_bytes = 0;        // logical size; 0 = the device's size
  bool override_policy = false;
  FolioPolicy policy;             // used when override_policy
  // For devices that read zeros where they were trimmed (Folio FS's inode devices): the
  // logical size is size_bytes even when 0, and zero ranges (Truncate, a write past the end)
  // reach the device as one trim per range instead of written zeros, so growing a sparse file
  // by a terabyte costs one request. The durability contract is unchanged (a trim is ordered
  // like the zero writes it replaces).
  bool sparse_device = false;
  // The largest readahead window of this address space; 0: the cache's readahead_max_bytes.
  // Capped, as that one is, at an eighth of the cache. A device whose reads each cost a long
  // round trip (a file on a network object store) wants a window of several of its requests.
  uint64_t readahead_max_bytes = 0;
};

class AddressSpace {
 public:
  virtual ~AddressSpace() = default;

  // Reads up to out.size() bytes at pos. Returns the bytes read: short only at end of file.
  virtual Result<size_t> Read(uint64_t pos, std::span<char> out) = 0;
  // Writes at pos (any alignment); extends the logical size up to the device's size.
  // Writing past the device's end returns NoSpace.
  virtual Result<size_t> Write(uint64_t pos, std::span<const char> in) = 0;
  // Writes back every dirty folio, waits, then flushes the device. Reports writeback errors as
  // a handle opened with the address space would (a built-in cursor): the latest error
  // recorded since the previous cursorless Fsync, once.
  virtual Status Fsync() = 0;
  // Fsync for one open handle (errseq_check_and_advance): the same writeback and flush, then
  // the latest writeback error recorded since *cursor was sampled or last advanced, with its
  // code and errno; advances *cursor and marks the error seen. A flush failure is returned as
  // it is (not recorded for other handles: their own Fsync flushes again).
  // Context: *cursor is read and written under the address space's error lock, so threads may
  // share one handle.
  virtual Status Fsync(WritebackErrorCursor* cursor) = 0;
  // The cursor for a handle being opened (errseq_sample): an error someone has seen is not
  // reported to it, one nobody has seen yet is.
  virtual WritebackErrorCursor SampleWritebackError() = 0;
  // Writes back every dirty folio and flushes, like Fsync, but reports to no handle and marks
  // no error seen: for a close or an unmount, whose caller cannot report it. Returns the first
  // error of this pass (write or flush), for logging; every handle's next Fsync still gets it.
  virtual Status WriteBack() = 0;
  virtual WritebackErrorState writeback_errors() const = 0;
  // Drops cached folios in [pos, pos+len) after writing back dirty ones; large folios that
  // straddle the range are split, not dropped whole.
  virtual Status Invalidate(uint64_t pos, uint64_t len) = 0;
  // Sets the logical size. Shrinking drops cached data past the new size (splitting the folio
  // across it) and zeroes the tail of the last page; growing reads zeros from the old size. Both
  // record zero ranges that writeback writes (see the durability contract). A size past the
  // device's end is NoSpace.
  virtual Status Truncate(uint64_t size) = 0;
  // kNormal / kSequential / kRandom set the readahead mode (kRandom: no readahead;
  // kSequential: full windows from the first miss); kWillNeed reads the range asynchronously;
  // kDontNeed writes back and drops the range's clean folios; kCollapse rebuilds clean small
  // folios of the range into large ones (as the background scanner does).
  virtual Status Advise(uint64_t pos, uint64_t len, Advice advice) = 0;
  virtual uint64_t size() const = 0;
  virtual FolioPolicy policy() const = 0;
  virtual void SetPolicy(const FolioPolicy& policy) = 0;
  virtual BlockDevice* device() const = 0;
  virtual const std::string& name() const = 0;
};

class PageCache {
 public:
  static Result<std::unique_ptr<PageCache>> Create(const PageCacheOptions& options);
  virtual ~PageCache() = default;

  // The device must outlive the address space; the address space must be destroyed (after an
  // Fsync if its data matters) before the cache.
  virtual Result<std::unique_ptr<AddressSpace>> Open(BlockDevice* device,
                                                     const AddressSpaceOptions& options) = 0;
  virtual PageCacheStats Stats() const = 0;
  virtual FolioArena* arena() = 0;
  virtual const PageCacheOptions& options() const = 0;
  // Writes back all dirty data of all address spaces and waits.
  virtual Status SyncAll() = 0;
  // Runs one pass of the collapse scanner now (tests, benchmarks); returns folios collapsed.
  virtual size_t ScanCollapseOnce() = 0;
};

}  // namespace folio
