// The RAID superblock: one 4 KiB block at offset 0 of every member, describing the array, this
// member's place in it, and the state every member agreed on at the last update (event
// counter, per-slot member states and ids, clean flag, sync and rebuild checkpoints, the
// write-intent bitmap's location). Little-endian fixed layout, CRC32C-protected; the byte
// table is docs/format/raid.md.
//
// Decode never trusts its input: every field is range-checked, and every error is a
// Corruption naming the member and the field.
//
// Thread safety: values; pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "folio/raid.h"
#include "folio/status.h"

namespace folio::raid {

inline constexpr uint64_t kSuperblockBytes = 4096;
inline constexpr uint32_t kSuperblockVersion = 1;
inline constexpr std::string_view kSuperblockMagic = "FOLIOMD1";

using Uuid = std::array<uint8_t, 16>;
Uuid NewUuid();                         // random (RFC 4122 version 4)
std::string UuidToString(const Uuid& u);  // 8-4-4-4-12 lower-case hex
bool IsZero(const Uuid& u);

// State of one slot (role) of the array, as recorded in every superblock.
enum class SlotState : uint8_t {
  kUnused = 0,      // slot >= member_count
  kActive = 1,      // in sync
  kRebuilding = 2,  // a replacement, in sync below rebuild_checkpoint
  kFailed = 3,      // failed, removed or missing: its contents are not trusted
};
std::string_view SlotStateName(SlotState s);

// The sync action in progress, resumed from sync_checkpoint after a stop or crash.
enum class SyncAction : uint8_t { kNone = 0, kResync = 1, kCheck = 2, kRepair = 3 };
std::string_view SyncActionName(SyncAction a);

inline constexpr uint32_t kSuperblockFlagClean = 1u << 0;  // stopped cleanly, nothing in flight
inline constexpr uint32_t kSuperblockKnownFlags = kSuperblockFlagClean;

struct Superblock {
  Uuid array_uuid{};
  Uuid member_uuid{};        // this member's id (a replacement gets a new one)
  uint64_t create_time_s = 0;
  uint64_t update_time_s = 0;
  uint64_t events = 0;       // bumped by every superblock update
  RaidLevel level = RaidLevel::kRaid5;
  RaidLayout layout = RaidLayout::kLeftSymmetric;
  uint32_t member_count = 0;
  uint32_t role = 0;         // this member's slot, 0..member_count-1
  uint64_t chunk_bytes = 0;
  uint64_t unit_bytes = 0;   // 0 = dynamic
  uint32_t flags = 0;
  uint64_t data_offset_bytes = 0;
  uint64_t member_data_bytes = 0;  // whole chunks
  uint64_t array_bytes = 0;
  uint64_t bitmap_offset_bytes = 0;
  uint64_t bitmap_bytes = 0;
  uint64_t bitmap_region_bytes = 0;  // member bytes covered by one bitmap bit
  SyncAction sync_action = SyncAction::kNone;
  uint64_t sync_checkpoint = 0;      // member pos where sync_action resumes
  // The lowest slot_rebuild of the rebuilding slots (0 when none): the one array-wide position
  // of superblocks older than slot_rebuild, which decode takes for every rebuilding slot.
  uint64_t rebuild_checkpoint = 0;
  // Of the running sync (resync, check, repair or rebuild), written at each checkpoint so
  // that another process can show its speed; both 0 when no sync runs (or unknown).
  uint64_t sync_speed_bytes_per_s = 0;  // member bytes per second, recent
  uint64_t sync_speed_time_ms = 0;      // Unix milliseconds of that checkpoint
  std::array<SlotState, kRaidMaxMembers> slot_states{};
  std::array<Uuid, kRaidMaxMembers> slot_uuids{};
  // Per slot: member pos below which a kRebuilding slot holds valid data (0 for other slots).
  std::array<uint64_t, kRaidMaxMembers> slot_rebuild{};

  bool clean() const { return (flags & kSuperblockFlagClean) != 0; }
  // Bits of the write-intent bitmap in use.
  uint64_t bitmap_bits() const;
  // True when the geometry fields (level, layout, members, chunk, unit, sizes, offsets)
  // are equal: members of one array always agree on these.
  bool SameGeometry(const Superblock& other) const;
};

using SuperblockBlock = std::array<char, kSuperblockBytes>;

// REQUIRES: sb passes Validate (checked; a bug otherwise).
SuperblockBlock EncodeSuperblock(const Superblock& sb);

// Decodes and validates one block read from `member` (named in errors). device_bytes, when
// non-zero, is the member's size: the data area must fit in it.
Result<Superblock> DecodeSuperblock(std::span<const char> block, std::string_view member,
                                    uint64_t device_bytes);

// Range checks of every field (what Decode applies after parsing).
Status ValidateSuperblock(const Superblock& sb, std::string_view member,
                          uint64_t device_bytes);

}  // namespace folio::raid
