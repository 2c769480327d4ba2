// CrashLog: the durability model of FaultDevice, as a pure data structure.
//
// It keeps, for every block touched by a write not yet covered by a completed flush, the
// block's *flushed image* (its contents as of the last flush), plus the list of unflushed
// writes with their data, in submission order. A crash rewrites the touched blocks to
//
//     flushed image  +  a chosen subset of the unflushed writes, applied in submission order
//
// so every write either landed in full or not at all, and the result is a state reachable by
// applying some subset of the unflushed writes in order on top of the flushed state
// (kDropUnflushed chooses the empty subset; kRandomSubset keeps each write with probability
// 1/2, drawn from a seeded PRNG in submission order).
//
// Flush coverage: a flush covers exactly the writes whose completion was observed before the
// flush was submitted (FlushWatermark() at submit, FlushCompleted(watermark) at completion),
// as a disk's cache flush covers the writes it acknowledged. Covered writes are folded into
// the flushed image (in submission order) and leave the list; blocks no unflushed write
// touches any more are forgotten. A write still in flight when a later one is flushed stays
// unflushed and, if kept, is applied after the flushed image (it may have landed last).
//
// Trims are logged as writes of zeros.
//
// Usage per write: MissingRuns() -> read those runs from the device -> Capture() each ->
// AddWrite(). The caller serialises all calls (FaultDevice holds its mutex).
//
// Storage (a fault model logs millions of writes; a map node and a string per 4 KiB block, and
// a string per write, were a fifth of its time under ASan): flushed images and write data
// both live in block-sized pages carved from 64 KiB slabs (kept by the log, small enough for
// the allocator's reusable size classes), on free lists; a two-level table indexed by block
// number (a leaf per 1024 blocks, made on first use) finds a block's entry. In steady state
// nothing is allocated. A flush folds a covered write into a block's image only when an
// unflushed write still holds the block, by taking over the newest covered write's page (the
// result of folding in submission order); an image nobody needs any more is just forgotten.
// Memory stays at its peak until the log is destroyed.
//
// Thread safety: none (externally synchronised).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "folio/fault_device.h"

namespace folio::io_internal {

class CrashLog {
 public:
  struct Run {
    uint64_t offset;
    uint64_t length;
  };
  struct ImageRun {
    uint64_t offset;
    std::string data;
  };

  // REQUIRES: block_bytes is the device's logical block size; every range is aligned to it.
  explicit CrashLog(uint32_t block_bytes) : block_bytes_(block_bytes) {}

  // Appends to *out the maximal runs of [offset, offset + length) whose flushed image has not
  // been captured yet.
  void MissingRuns(uint64_t offset, uint64_t length, std::vector<Run>* out) const;
  // Records the flushed image of a run returned by MissingRuns (data holds length bytes).
  void Capture(uint64_t offset, const char* data, uint64_t length);

  // Logs a write about to be sent to the device (data == nullptr: a trim, i.e. zeros).
  // REQUIRES: every block of the range was captured. Returns the write's id (> 0).
  uint64_t AddWrite(uint64_t offset, const char* data, uint64_t length);
  // The write's completion was observed.
  void CompleteWrite(uint64_t id);
  // The write never reached the device (rejected before it started): forget it.
  void DropWrite(uint64_t id);

  // The coverage mark of a flush submitted now.
  uint64_t FlushWatermark() const { return completion_seq_; }
  // A flush submitted with `watermark` completed successfully.
  void FlushCompleted(uint64_t watermark);

  // The contents every touched block must have after a crash, as runs of adjacent blocks in
  // block order. Does not modify the log; call Clear() once the image is on the device.
  std::vector<ImageRun> CrashImage(CrashMode mode, uint64_t seed) const;
  void Clear();

  size_t unflushed_writes() const { return writes_.size(); }
  size_t tracked_blocks() const { return tracked_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr uint64_t kLeafShift = 10;       // 1024 blocks per leaf of the block table
  static constexpr uint64_t kSlabBytes = 64 << 10;

  struct Entry {  // a tracked block
    uint64_t block = 0;
    uint32_t page = kNone;  // its flushed image
    uint32_t writers = 0;   // unflushed writes touching the block
    uint32_t folded = 0;    // the flush (flush_epoch_) that last gave it an image
    bool live = false;      // false: on free_entries_
  };
  struct Write {
    uint64_t id = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t pages_pos = 0;        // its data: write_pages_[pages_pos ..], one per block
    bool trim = false;             // zeros, no pages
    uint64_t completion_seq = 0;   // 0 while in flight
  };

  uint32_t FindEntry(uint64_t block) const;
  uint32_t& TableSlot(uint64_t block);  // makes the leaf
  uint32_t NewEntry(uint64_t block);    // with a page for its image
  void FreeEntry(uint32_t e);           // and its page
  char* Page(uint32_t p) const {
    return slabs_[p / pages_per_slab_].get() + uint64_t{p % pages_per_slab_} * block_bytes_;
  }
  uint32_t NewPage();
  void FreePage(uint32_t p) { free_pages_.push_back(p); }
  // Copies the write's bytes for its i-th block (zeros for a trim) to dst.
  void CopyBlockOf(const Write& w, uint64_t i, char* dst) const;
  // Drops the write's hold on its blocks, forgetting blocks no unflushed write touches, and
  // frees its pages.
  void Release(const Write& w);

  const uint32_t block_bytes_;
  const uint32_t pages_per_slab_ =
      static_cast<uint32_t>(std::max<uint64_t>(1, kSlabBytes / block_bytes_));
  std::vector<std::unique_ptr<uint32_t[]>> table_;  // block >> kLeafShift -> leaf of entries
  std::vector<Entry> entries_;
  std::vector<uint32_t> free_entries_;
  size_t tracked_ = 0;
  std::vector<std::unique_ptr<char[]>> slabs_;
  uint32_t page_count_ = 0;  // pages carved from slabs_ so far
  std::vector<uint32_t> free_pages_;
  std::vector<Write> writes_;          // unflushed, in submission order
  std::vector<uint32_t> write_pages_;  // their pages, in submission order (holes after a drop)
  uint64_t next_id_ = 1;
  uint64_t completion_seq_ = 0;
  uint32_t flush_epoch_ = 0;
};

}  // namespace folio::io_internal
