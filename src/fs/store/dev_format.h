// On-device structures of the dev: store (docs/format/dev-store.md): the superblock, the
// segment table, segment headers and record headers, with their encoders and checking
// decoders. Pure functions over byte buffers (fuzzed by fuzz/dev_store_format_fuzz.cc).
//
//   device offset 0      4096        8192          8192 + T      8192 + 2T     data_offset
//   +-----------+-----------+-------------+-------------+- pad -+-----------+-----------+--
//   | super A   | super B   | table slot 0| table slot 1|       | segment 0 | segment 1 | ..
//   +-----------+-----------+-------------+-------------+-------+-----------+-----------+--
//
//   segment:  | segment header (4 KiB) | record | record | ... |           (free tail)
//   record:   | record header (4 KiB) | sector-encoded object, padded to 4 KiB |
//
// Thread safety: pure functions and values.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/aligned_buffer.h"
#include "folio/status.h"
#include "fs/store/object_key.h"

namespace folio::store::dev {

inline constexpr uint32_t kUnitBytes = 4096;  // every structure is 4 KiB aligned
inline constexpr uint32_t kVersion = 1;
inline constexpr uint64_t kSuperOffset[2] = {0, 4096};
inline constexpr uint64_t kTableOffset = 8192;
inline constexpr uint32_t kTableHeaderBytes = 64;
inline constexpr uint32_t kTableEntryBytes = 16;
inline constexpr uint64_t kMinSegmentBytes = 1ull << 20;
inline constexpr uint64_t kMaxSegmentBytes = 1ull << 30;

inline uint64_t RoundUp(uint64_t v, uint64_t unit) { return (v + unit - 1) / unit * unit; }

}  // namespace folio::store::dev

namespace folio::store {
// Buffers for device I/O: 4 KiB aligned (O_DIRECT), zeroed, whole 4 KiB units.
AlignedBuffer AllocUnits(uint64_t bytes);
}  // namespace folio::store

namespace folio::store::dev {

struct Superblock {
  std::string uuid;          // 16 raw bytes
  std::string prefix;        // volume prefix, <= 64 bytes
  uint64_t create_unix_s = 0;
  uint64_t device_bytes = 0;   // device size at format (a smaller device is refused)
  uint64_t segment_bytes = 0;  // power of two, 1 MiB .. 1 GiB
  uint32_t segment_count = 0;
  uint64_t table_bytes = 0;    // bytes of one table slot (multiple of 4096)
  uint64_t data_offset = 0;    // first segment (multiple of 4096, >= 8192 + 2 * table_bytes)
};
// Bytes of one table slot for n segments.
uint64_t TableBytesFor(uint32_t segment_count);
// The layout for a device of device_bytes with segments of segment_bytes (segment_count as
// many as fit after the table). Errors: InvalidArgument when fewer than 3 segments fit.
Result<Superblock> PlanLayout(uint64_t device_bytes, uint64_t segment_bytes);

void EncodeSuperblock(const Superblock& sb, char out[kUnitBytes]);
// Errors: NotFound when the block carries no dev-store magic (another thing, or nothing),
// Corruption for a bad checksum or impossible fields, NotSupported for a newer version.
Result<Superblock> DecodeSuperblock(const char block[kUnitBytes]);
inline constexpr char kSuperMagic[8] = {'F', 'O', 'L', 'I', 'O', 'D', 'S', '1'};

enum class SegmentState : uint32_t { kFree = 0, kOpen = 1, kSealed = 2 };

struct SegmentEntry {
  SegmentState state = SegmentState::kFree;
  uint64_t generation = 0;   // non-zero unless free; unique over the store's life
  uint32_t used_bytes = 0;   // kSealed: bytes of valid records after the segment header
};

struct SegmentTable {
  uint64_t sequence = 0;         // the slot with the higher valid sequence is current
  uint64_t next_generation = 1;
  std::vector<SegmentEntry> entries;  // segment_count
};
// REQUIRES: out has TableBytesFor(entries.size()) bytes.
void EncodeTable(const SegmentTable& t, char* out, uint64_t table_bytes);
// Errors: Corruption (bad magic, checksum, count or entry).
Result<SegmentTable> DecodeTable(const char* in, uint64_t table_bytes, uint32_t segment_count,
                                 uint64_t segment_bytes);

struct SegmentHeader {
  uint64_t generation = 0;
  uint32_t index = 0;
};
// Segment and record headers are checksummed with the store's seed (StoreSeed of the
// superblock's uuid), so headers left by an earlier store on the device never verify.
uint32_t StoreSeed(const std::string& uuid);
void EncodeSegmentHeader(const SegmentHeader& h, uint32_t store_seed, char out[kUnitBytes]);
// Errors: NotFound when the magic is absent (never written), Corruption otherwise.
Result<SegmentHeader> DecodeSegmentHeader(const char block[kUnitBytes], uint32_t store_seed);

enum class RecordType : uint8_t { kPut = 1, kDelete = 2 };

struct RecordHeader {
  RecordType type = RecordType::kPut;
  ObjectKey key;
  uint64_t generation = 0;   // the segment's
  uint32_t position = 0;     // offset of this header in the segment
};
// Device bytes of a record holding an object of logical_bytes (a delete: 4096).
uint64_t RecordBytes(RecordType type, uint32_t logical_bytes);
void EncodeRecordHeader(const RecordHeader& h, uint32_t store_seed, char out[kUnitBytes]);
// Errors: NotFound when there is no record magic (end of the segment's records), Corruption
// for a damaged header.
Result<RecordHeader> DecodeRecordHeader(const char block[kUnitBytes], uint32_t store_seed);
// The salt of a record's sector seeds (ObjectSeed): unique for every record ever written.
inline uint64_t RecordSalt(uint64_t generation, uint32_t position) {
  return generation << 32 | position;
}

}  // namespace folio::store::dev
