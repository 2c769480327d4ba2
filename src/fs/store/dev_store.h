// The `dev:SPEC` block store: a log-structured store on any Folio BlockDevice (a file, memory,
// a RAID volume). Objects are appended as records to segments; an in-memory index (rebuilt
// at open from the segment table and the record headers) maps keys to records; space of
// deleted and superseded records is reclaimed by segment cleaning. Format:
// docs/format/dev-store.md, structures in dev_format.h.
//
// Durability and crash safety:
//   - puts and deletes are written in batches; a batch's records are written, then the device
//     is flushed, and only then do its requests complete (and become visible to gets and
//     lists). Batches run one at a time, so the records of a segment are durable in order.
//   - a crash loses at most the batch in flight: at open, the segment that was open is read
//     back whole and cut at its first record that does not verify; sealed segments record
//     their valid length in the (double-buffered, checksummed) segment table. So nothing
//     torn or missing is ever referenced, and every completed put is found.
//   - cleaning copies live records forward (re-encoded with their new position's seed), flushes,
//     and only then frees the old segment in the table; a segment is reused only when no get
//     is reading it.
// A checksum mismatch on a get over a RAID volume with redundancy is healed from parity
// (RaidDevice::ReadAsIfMissing / RepairAsIfMissing) before it becomes Corruption.
//
// One I/O thread owns the device: it takes queued requests, reads for gets (many in flight),
// runs write batches, polls, and runs `done` callbacks (with no lock held). A Submit() from a
// callback never waits for queue room.
//
// Thread safety: thread-safe (BlockStore's contract).
#pragma once

#include <memory>
#include <string>

#include "folio/block_device.h"
#include "fs/store/block_store.h"
#include "fs/store/dir_store.h"

namespace folio::store {

struct DevFormatOptions {
  // 0 = 64 MiB, or less so that at least 16 segments fit (never below 1 MiB).
  uint64_t segment_bytes = 0;
  bool force = false;  // overwrite a device that holds something (a store or anything else)
};

// Writes a fresh dev store (superblocks, empty segment table) for volume `prefix`. Refuses a
// device whose first 8 KiB are not all zero unless forced: Exists when it holds a dev store
// (naming its volume), InvalidArgument when it holds something else.
Status FormatDevStore(BlockDevice* device, std::string_view prefix,
                      const DevFormatOptions& format);

// What a dev store adds to StoreStatsSnapshot.
struct DevStoreStats {
  uint32_t segments = 0;
  uint32_t segments_free = 0;
  uint64_t segment_bytes = 0;
  uint64_t live_bytes = 0;        // device bytes of records that must be kept
  uint64_t objects = 0;
  uint64_t batches = 0;           // write batches (one flush each)
  uint64_t segments_cleaned = 0;
  uint64_t records_copied = 0;    // by cleaning
  uint64_t heal_attempts = 0;     // mismatches retried from redundancy
  uint64_t recovered_records = 0; // at open
  uint64_t dropped_records = 0;   // at open: records of the open segment that did not verify
};

class DevStore : public BlockStore {
 public:
  // Cleans now: frees every segment without live records and copies forward the live
  // records of sealed segments whose live fraction is below live_fraction_max.
  // Context: blocks until the I/O thread did it.
  virtual Status Clean(double live_fraction_max) = 0;
  virtual DevStoreStats dev_stats() const = 0;
  // The device the store runs on.
  virtual BlockDevice* device() const = 0;
};

// Opens the dev store on device (taking ownership): reads the superblock (refusing a device
// without one: NotFound; another volume's: InvalidArgument; a newer version: NotSupported),
// the segment table and every record header, and cuts a segment torn by a crash.
Result<std::unique_ptr<DevStore>> OpenDevStore(std::unique_ptr<BlockDevice> device,
                                               std::string url, const StoreOptions& options);

}  // namespace folio::store
