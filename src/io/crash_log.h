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
// Thread safety: none (externally synchronised).
#pragma once

#include <cstdint>
#include <map>
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

  // The contents every touched block must have after a crash, as runs of adjacent blocks.
  // Does not modify the log; call Clear() once the image is on the device.
  std::vector<ImageRun> CrashImage(CrashMode mode, uint64_t seed) const;
  void Clear();

  size_t unflushed_writes() const { return writes_.size(); }
  size_t tracked_blocks() const { return blocks_.size(); }

 private:
  struct Block {
    std::string data;      // flushed image
    uint32_t writers = 0;  // unflushed writes touching this block
  };
  struct Write {
    uint64_t id = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    std::string data;              // empty for a trim (zeros)
    uint64_t completion_seq = 0;   // 0 while in flight
  };

  void ApplyTo(const Write& w, std::map<uint64_t, std::string>* image) const;
  void Release(Write& w);
  // Buffers of forgotten blocks and folded writes, reused by the next Capture / AddWrite: a
  // fault model makes millions of them, and a fresh allocation each (an mmap for a large write
  // under ASan) was most of its time.
  std::string TakeSpare(std::vector<std::string>* spares);
  void GiveSpare(std::string s, std::vector<std::string>* spares, size_t limit);

  const uint32_t block_bytes_;
  std::map<uint64_t, Block> blocks_;  // by block index
  std::vector<Write> writes_;         // unflushed, in submission order
  std::vector<std::string> spare_blocks_;
  std::vector<std::string> spare_writes_;
  uint64_t next_id_ = 1;
  uint64_t completion_seq_ = 0;
};

}  // namespace folio::io_internal
