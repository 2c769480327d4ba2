// The block codec: how every stored object (block or pack) carries CRC32C so that any byte
// range can be verified without reading the whole object.
//
// An object of L logical bytes is stored as sectors of 4096 bytes, each holding 4092 data bytes
// followed by the CRC32C of those bytes (little-endian); the last sector holds the remaining
// L mod 4092 bytes (if any) and their CRC, and is short:
//
//   | data[0..4092) crc0 | data[4092..8184) crc1 | ... | data[..L) crcN |
//
// A sector's CRC is seeded with the object's seed (ObjectSeed: the key plus a salt the store
// chooses, e.g. a write generation) and the sector number, so a sector of another object, of an
// older copy of this one, or of another position in this object never verifies here. A ranged
// read of logical [off, off + len) reads the whole sectors covering it (one contiguous range),
// verifies each and copies the requested bytes out: a 4 KiB read costs 8 KiB (two sectors, as
// 4096 > 4092), a 64 KiB read 68 KiB; docs/format/blocks.md has the measurements and the
// alternatives considered.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "folio/status.h"
#include "fs/store/object_key.h"

namespace folio::store {

inline constexpr uint32_t kSectorBytes = 4096;
inline constexpr uint32_t kSectorCrcBytes = 4;
inline constexpr uint32_t kSectorDataBytes = kSectorBytes - kSectorCrcBytes;  // 4092

// The seed of an object's sector CRCs: CRC32C of the little-endian (kind, index, id, bytes,
// salt). Stores without a write generation (dir:) use salt 0.
uint32_t ObjectSeed(const ObjectKey& key, uint64_t salt);

// Encoded size of an object of logical_bytes (the last sector short).
uint64_t EncodedBytes(uint64_t logical_bytes);
// Number of sectors of an object of logical_bytes.
uint64_t SectorCount(uint64_t logical_bytes);

// Writes the encoding of data[0..logical_bytes) to out[0..EncodedBytes(logical_bytes)).
void EncodeObject(uint32_t seed, const char* data, uint64_t logical_bytes, char* out);

// An encoding built in place (the file system's block buffers): the data goes into the
// sectors as it comes, and the CRCs are filled once, by the store, with its seed.
// Copies src[0..len) to logical [off, off + len) of an encoding: the data runs of the sectors
// it covers, never their CRC slots.
void CopyIntoSectors(char* encoded, uint64_t off, const char* src, uint64_t len);
// Copies logical [off, off + len) of an encoding to dst, unverified (bytes not sent yet).
void CopyOutOfSectors(const char* encoded, uint64_t off, char* dst, uint64_t len);
// Writes the CRC slot of every sector of encoded[0..EncodedBytes(logical_bytes)), whose data
// runs hold the object: it is then EncodeObject's output for that data.
void FillSectorCrcs(uint32_t seed, char* encoded, uint64_t logical_bytes);

// The encoded byte range that a logical range needs: whole sectors, the last one possibly
// short (at the end of the object).
struct EncodedRange {
  uint64_t first_sector = 0;
  uint64_t offset = 0;   // = first_sector * kSectorBytes
  uint64_t length = 0;   // encoded bytes to read
};
// REQUIRES: len > 0 and off + len <= logical_bytes.
EncodedRange EncodedRangeFor(uint64_t logical_bytes, uint64_t off, uint64_t len);

// A mismatch found by DecodeRange.
struct SectorMismatch {
  uint64_t sector = 0;
  uint32_t stored_crc = 0;
  uint32_t computed_crc = 0;
};

// Verifies the sectors in `encoded` (the bytes of EncodedRangeFor(logical_bytes, off, len))
// and copies logical [off, off + len) to out. Returns false (and fills *mismatch, out is then
// unspecified) at the first sector whose CRC does not match.
bool DecodeRange(uint32_t seed, uint64_t logical_bytes, const char* encoded, uint64_t off,
                 uint64_t len, char* out, SectorMismatch* mismatch);

// Verifies every sector of a whole encoded object (fsck, recovery). Same result as DecodeRange
// over the whole object, without copying.
bool VerifyObject(uint32_t seed, uint64_t logical_bytes, const char* encoded,
                  SectorMismatch* mismatch);

// The Corruption status a reader gets: names the key (as the store names it), the sector and
// both CRCs.
Status SectorCorruption(std::string_view object_name, const SectorMismatch& mismatch);

}  // namespace folio::store
