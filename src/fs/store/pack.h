// Packs: many small files in one shared object (seed 2). A pack's logical bytes are a 32-byte
// header and entries, each an 8-byte header (length, CRC32C of the data) and the file's data,
// back to back (docs/format/blocks.md):
//
//   | pack header (32) | len crc | data ... | len crc | data ... | ... |
//                                ^ object_off of the first file (32 + 8)
//
// A pack is stored like any object (ObjectKind::kPack, sector-encoded), so it is verified
// twice: sector CRCs by the store, the entry CRC here. A file's slice records pack id, pack
// bytes and object_off (meta_types.h, SliceKind::kPacked); reading it is one ranged get of
// [object_off - 8, object_off + len). WalkPack checks a whole pack without the metadata
// (fsck, compaction). Liveness is the fs layer's: it knows which (pack, object_off) slices
// still reference; CopyLiveEntries rewrites the live ones into a new pack.
//
// Thread safety: PackBuilder and the free functions are single-threaded values / pure;
// PackWriter is thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fs/store/block_store.h"

namespace folio::store {

inline constexpr uint32_t kPackHeaderBytes = 32;
inline constexpr uint32_t kPackEntryHeaderBytes = 8;
inline constexpr char kPackMagic[8] = {'F', 'O', 'L', 'I', 'O', 'P', 'K', '1'};
inline constexpr uint32_t kPackVersion = 1;

struct PackEntry {
  uint32_t object_off = 0;  // offset of the data in the pack (its header is 8 bytes before)
  uint32_t len = 0;
  uint32_t crc = 0;         // CRC32C of the data
};

// Builds a pack's logical bytes in memory.
class PackBuilder {
 public:
  // Bytes the pack would have with one more entry of len bytes.
  uint64_t BytesWith(uint64_t len) const { return bytes_ + kPackEntryHeaderBytes + len; }
  uint64_t bytes() const { return bytes_; }
  size_t entries() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Appends an entry; returns its object_off. REQUIRES: 1 <= data.size(), BytesWith fits
  // kMaxObjectBytes.
  uint32_t Add(std::string_view data);
  // Appends an entry whose CRC32C is already known (copying a verified entry).
  uint32_t AddWithCrc(std::string_view data, uint32_t crc);
  // The pack's bytes with its header for pack_id. REQUIRES: !empty().
  std::string Finish(uint64_t pack_id) const;
  const std::vector<PackEntry>& entry_list() const { return entries_; }

 private:
  std::string body_;  // entries, starting at offset kPackHeaderBytes of the pack
  uint64_t bytes_ = kPackHeaderBytes;
  std::vector<PackEntry> entries_;
};

// Verifies a whole pack (header and every entry) and calls fn for each entry in order.
// `name` names the pack in messages. Errors: Corruption naming the pack and the offset.
Status WalkPack(std::string_view pack, uint64_t pack_id, std::string_view name,
                const std::function<void(const PackEntry&, std::string_view data)>& fn);

// Verifies one entry read as [object_off - 8, object_off + len) of its pack (the header and
// the data) against the length the slice records. Errors: Corruption naming the pack.
Status VerifyPackedEntry(std::string_view header_and_data, uint32_t len, uint32_t object_off,
                         std::string_view name);

// Reads one packed file: one ranged get of its entry header and data, verified.
// REQUIRES: object_off >= kPackHeaderBytes + 8 and object_off + len <= pack_bytes.
Status ReadPacked(BlockStore* store, uint64_t pack_id, uint32_t pack_bytes, uint32_t object_off,
                  uint32_t len, char* out);

// Compaction: copies the entries of `pack` for which live(object_off) is true into `into`
// (verifying each) and records (old object_off, new object_off) pairs in *moved.
Status CopyLiveEntries(std::string_view pack, uint64_t pack_id, std::string_view name,
                       const std::function<bool(uint32_t object_off)>& live, PackBuilder* into,
                       std::vector<std::pair<uint32_t, uint32_t>>* moved);

// Where a packed file landed, once its pack is durable.
struct PackedLocation {
  uint64_t pack_id = 0;
  uint32_t pack_bytes = 0;   // the slice's object_bytes
  uint32_t object_off = 0;
  uint32_t len = 0;
  uint32_t pack_entries = 0;  // entries in the pack: each one's callback runs with the put's status
};
using PackAddDone = std::function<void(const Status&, const PackedLocation&)>;
// Hands out pack ids (the metadata engine's slice id counter).
using PackIdFn = std::function<Result<uint64_t>()>;

struct PackWriterOptions {
  uint32_t pack_bytes_max = 4u << 20;  // seal a pack before it would exceed this
  uint64_t flush_after_ms = 1000;      // seal the open pack this long after its first entry
};

struct PackWriterStats {
  uint64_t files = 0;         // entries added
  uint64_t file_bytes = 0;
  uint64_t packs = 0;         // packs put (sealed)
  uint64_t pack_bytes = 0;
  uint64_t sealed_full = 0, sealed_timer = 0, sealed_flush = 0;  // why packs were sealed
  uint64_t errors = 0;        // packs whose id or put failed
};

// Collects small files into packs of up to pack_bytes_max bytes and puts each pack when it is
// full, when flush_after_ms passed since its first entry (a timer thread), or on Flush().
// Each Add's `done` runs once, after the put of its pack completed (OK: the file is durable at
// the returned location; error: the pack's id or put failed), on a store thread or the timer
// thread, with no writer lock held.
class PackWriter {
 public:
  PackWriter(BlockStore* store, const PackWriterOptions& options, PackIdFn next_id);
  ~PackWriter();  // Flush(), then stops the timer
  PackWriter(const PackWriter&) = delete;
  PackWriter& operator=(const PackWriter&) = delete;

  // Adds one file (the data is copied). REQUIRES: 1 <= data.size() <= MaxEntryBytes().
  void Add(std::string_view data, PackAddDone done);
  // Largest file a pack of pack_bytes_max holds.
  uint32_t MaxEntryBytes() const {
    return options_.pack_bytes_max - kPackHeaderBytes - kPackEntryHeaderBytes;
  }
  // Seals the open pack and waits until every pack put so far completed (an fsync's
  // trigger). Returns the first error of those puts since the last Flush.
  // Context: blocks; not from a `done` callback.
  Status Flush();
  PackWriterStats stats() const;

 private:
  struct Pending;
  enum class Why { kFull, kTimer, kFlush };
  // Seals the open pack if it has entries. REQUIRES: mu_ held (released and retaken inside).
  void SealLocked(std::unique_lock<std::mutex>& lock, Why why);
  void TimerLoop();
  static void PutDone(StoreRequest* req);

  BlockStore* const store_;
  const PackWriterOptions options_;
  const PackIdFn next_id_;

  mutable std::mutex mu_;
  std::condition_variable cv_;       // timer wake-ups; in-flight puts finished
  PackBuilder open_;                 // GUARDED_BY(mu_)
  std::vector<PackAddDone> open_done_;  // GUARDED_BY(mu_): one per entry of open_
  uint64_t open_since_ns_ = 0;       // GUARDED_BY(mu_)
  uint64_t in_flight_ = 0;           // GUARDED_BY(mu_): packs put and not completed
  Status first_error_;               // GUARDED_BY(mu_)
  PackWriterStats stats_;            // GUARDED_BY(mu_)
  bool stopping_ = false;            // GUARDED_BY(mu_)
  std::thread timer_;
};

}  // namespace folio::store
