#include "raid/superblock.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "base/check.h"
#include "base/crc32c.h"
#include "base/units.h"
#include "raid/geometry.h"

namespace folio::raid {
namespace {

// Byte offsets of the fields (docs/format/raid.md).
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = 8;
constexpr size_t kOffCrc = 12;
constexpr size_t kOffArrayUuid = 16;
constexpr size_t kOffMemberUuid = 32;
constexpr size_t kOffCreateTime = 48;
constexpr size_t kOffUpdateTime = 56;
constexpr size_t kOffEvents = 64;
constexpr size_t kOffLevel = 72;
constexpr size_t kOffLayout = 73;
constexpr size_t kOffMemberCount = 74;
constexpr size_t kOffRole = 75;
constexpr size_t kOffChunk = 76;
constexpr size_t kOffUnit = 80;
constexpr size_t kOffFlags = 84;
constexpr size_t kOffDataOffset = 88;
constexpr size_t kOffMemberData = 96;
constexpr size_t kOffArrayBytes = 104;
constexpr size_t kOffBitmapOffset = 112;
constexpr size_t kOffBitmapBytes = 120;
constexpr size_t kOffBitmapRegion = 128;
constexpr size_t kOffSyncAction = 136;
constexpr size_t kOffReserved1 = 137;  // 7 bytes, zero
constexpr size_t kOffSyncCheckpoint = 144;
constexpr size_t kOffRebuildCheckpoint = 152;
constexpr size_t kOffSlotStates = 160;  // 32 x u8
constexpr size_t kOffSlotUuids = 192;   // 32 x 16 bytes
constexpr size_t kOffSyncSpeed = 704;
constexpr size_t kOffSyncSpeedTime = 712;
constexpr size_t kOffSlotRebuild = 720;  // 32 x u64
constexpr size_t kOffReserved2 = 976;   // to the end of the block, zero

constexpr uint64_t kMaxMemberDataBytes = 1ull << 50;

void Put8(char* b, size_t off, uint8_t v) { b[off] = static_cast<char>(v); }
void Put32(char* b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = static_cast<char>(v >> (8 * i));
}
void Put64(char* b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[off + i] = static_cast<char>(v >> (8 * i));
}
uint8_t Get8(const char* b, size_t off) { return static_cast<uint8_t>(b[off]); }
uint32_t Get32(const char* b, size_t off) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(b[off + i])} << (8 * i);
  return v;
}
uint64_t Get64(const char* b, size_t off) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(b[off + i])} << (8 * i);
  return v;
}

uint32_t BlockCrc(const char* b) {
  char copy[kSuperblockBytes];
  std::memcpy(copy, b, kSuperblockBytes);
  Put32(copy, kOffCrc, 0);
  return Crc32c(copy, kSuperblockBytes);
}

Status Bad(std::string_view member, std::string_view field, const std::string& value,
           std::string_view why) {
  return Status::Corruption("member " + std::string(member) + ": superblock " +
                            std::string(field) + " " + value + ": " + std::string(why));
}

std::string Num(uint64_t v) { return std::to_string(v); }

// "name[index]", built only for an error: a validation of every superblock write formatted 64
// of them eagerly (two loops over kRaidMaxMembers), most of a metadata update's allocations.
std::string Field(std::string_view name, uint32_t index) {
  return std::string(name) + "[" + Num(index) + "]";
}

bool AllZero(const char* b, size_t len) {
  for (size_t i = 0; i < len; ++i) {
    if (b[i] != 0) return false;
  }
  return true;
}

Status ValidateBitmap(const Superblock& sb, std::string_view m) {
  if (sb.bitmap_offset_bytes < kSuperblockBytes || sb.bitmap_offset_bytes % 4096 != 0) {
    return Bad(m, "bitmap_offset", Num(sb.bitmap_offset_bytes),
               "must be a multiple of 4096 after the superblock");
  }
  if (sb.bitmap_bytes == 0 || sb.bitmap_bytes % 4096 != 0 || sb.bitmap_bytes > (1ull << 30)) {
    return Bad(m, "bitmap_bytes", Num(sb.bitmap_bytes),
               "must be a non-zero multiple of 4096 up to 1G");
  }
  if (sb.bitmap_offset_bytes + sb.bitmap_bytes > sb.data_offset_bytes) {
    return Bad(m, "bitmap_bytes", Num(sb.bitmap_bytes), "bitmap overlaps the data area");
  }
  if (!IsPowerOfTwo(sb.bitmap_region_bytes) || sb.bitmap_region_bytes < sb.chunk_bytes ||
      sb.bitmap_region_bytes > (1ull << 40)) {
    return Bad(m, "bitmap_region", Num(sb.bitmap_region_bytes),
               "must be a power of two, at least one chunk");
  }
  if (sb.bitmap_bits() > sb.bitmap_bytes * 8) {
    return Bad(m, "bitmap_region", Num(sb.bitmap_region_bytes),
               "too small: the bitmap cannot cover the data area");
  }
  return Status::OK();
}

Status ValidateSlots(const Superblock& sb, std::string_view m) {
  for (uint32_t s = 0; s < kRaidMaxMembers; ++s) {
    const SlotState st = sb.slot_states[s];
    if (s >= sb.member_count) {
      if (st != SlotState::kUnused || !IsZero(sb.slot_uuids[s])) {
        return Bad(m, Field("slot_state", s), Num(static_cast<int>(st)),
                   "slot past member_count must be unused");
      }
      continue;
    }
    if (st != SlotState::kActive && st != SlotState::kRebuilding && st != SlotState::kFailed) {
      return Bad(m, Field("slot_state", s), Num(static_cast<int>(st)),
                 "must be active, rebuilding or failed");
    }
    if (IsZero(sb.slot_uuids[s])) {
      return Bad(m, Field("slot_uuid", s), "0", "a member slot needs a member id");
    }
  }
  if (sb.slot_uuids[sb.role] != sb.member_uuid) {
    return Bad(m, "member_uuid", UuidToString(sb.member_uuid),
               "differs from the id recorded for its own slot " + Num(sb.role));
  }
  return Status::OK();
}

}  // namespace

Uuid NewUuid() {
  std::random_device rd;
  Uuid u;
  for (size_t i = 0; i < u.size(); i += 4) {
    const uint32_t r = rd();
    for (int j = 0; j < 4; ++j) u[i + j] = static_cast<uint8_t>(r >> (8 * j));
  }
  u[6] = (u[6] & 0x0f) | 0x40;
  u[8] = (u[8] & 0x3f) | 0x80;
  return u;
}

std::string UuidToString(const Uuid& u) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < u.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += kHex[u[i] >> 4];
    s += kHex[u[i] & 15];
  }
  return s;
}

bool IsZero(const Uuid& u) {
  for (uint8_t b : u) {
    if (b != 0) return false;
  }
  return true;
}

std::string_view SlotStateName(SlotState s) {
  switch (s) {
    case SlotState::kUnused: return "unused";
    case SlotState::kActive: return "active";
    case SlotState::kRebuilding: return "rebuilding";
    case SlotState::kFailed: return "failed";
  }
  return "unknown";
}

std::string_view SyncActionName(SyncAction a) {
  switch (a) {
    case SyncAction::kNone: return "idle";
    case SyncAction::kResync: return "resync";
    case SyncAction::kCheck: return "check";
    case SyncAction::kRepair: return "repair";
  }
  return "unknown";
}

uint64_t Superblock::bitmap_bits() const {
  if (bitmap_region_bytes == 0) return 0;
  return (member_data_bytes + bitmap_region_bytes - 1) / bitmap_region_bytes;
}

bool Superblock::SameGeometry(const Superblock& o) const {
  return level == o.level && layout == o.layout && member_count == o.member_count &&
         chunk_bytes == o.chunk_bytes && unit_bytes == o.unit_bytes &&
         data_offset_bytes == o.data_offset_bytes && member_data_bytes == o.member_data_bytes &&
         array_bytes == o.array_bytes && bitmap_offset_bytes == o.bitmap_offset_bytes &&
         bitmap_bytes == o.bitmap_bytes && bitmap_region_bytes == o.bitmap_region_bytes;
}

Status ValidateSuperblock(const Superblock& sb, std::string_view m, uint64_t device_bytes) {
  if (sb.member_data_bytes > kMaxMemberDataBytes) {
    return Bad(m, "member_data_bytes", Num(sb.member_data_bytes), "larger than 1 PiB");
  }
  auto geometry = StripeGeometry::Create(
      {sb.level, sb.layout, sb.member_count, sb.chunk_bytes, sb.member_data_bytes});
  if (!geometry.ok()) {
    return Status::Corruption("member " + std::string(m) + ": superblock geometry: " +
                              std::string(geometry.status().message()));
  }
  if (sb.role >= sb.member_count) {
    return Bad(m, "role", Num(sb.role), "must be below member_count " + Num(sb.member_count));
  }
  if (sb.unit_bytes != 0 && (!IsPowerOfTwo(sb.unit_bytes) || sb.unit_bytes < kRaidMinUnitBytes ||
                             sb.unit_bytes > sb.chunk_bytes)) {
    return Bad(m, "unit", Num(sb.unit_bytes), "must be 0 (dynamic) or a power of two in 4K..chunk");
  }
  if ((sb.flags & ~kSuperblockKnownFlags) != 0) {
    return Bad(m, "flags", Num(sb.flags), "unknown flag bits");
  }
  if (sb.member_data_bytes % sb.chunk_bytes != 0) {
    return Bad(m, "member_data_bytes", Num(sb.member_data_bytes), "must be whole chunks");
  }
  if (sb.array_bytes != geometry->array_bytes()) {
    return Bad(m, "array_bytes", Num(sb.array_bytes),
               "disagrees with the geometry (" + Num(geometry->array_bytes()) + ")");
  }
  if (sb.data_offset_bytes % 4096 != 0 || sb.data_offset_bytes < 2 * kSuperblockBytes ||
      sb.data_offset_bytes > (1ull << 40)) {
    return Bad(m, "data_offset", Num(sb.data_offset_bytes),
               "must be a multiple of 4096 past the superblock and bitmap");
  }
  if (device_bytes != 0 && (sb.member_data_bytes > device_bytes ||
                            sb.data_offset_bytes > device_bytes - sb.member_data_bytes)) {
    return Bad(m, "member_data_bytes", Num(sb.member_data_bytes),
               "data area ends past the end of the member (" + Num(device_bytes) + " bytes)");
  }
  FOLIO_RETURN_IF_ERROR(ValidateBitmap(sb, m));
  if (static_cast<uint8_t>(sb.sync_action) > static_cast<uint8_t>(SyncAction::kRepair)) {
    return Bad(m, "sync_action", Num(static_cast<int>(sb.sync_action)), "must be 0..3");
  }
  if (sb.sync_checkpoint > sb.member_data_bytes) {
    return Bad(m, "sync_checkpoint", Num(sb.sync_checkpoint), "past the data area");
  }
  if (sb.rebuild_checkpoint > sb.member_data_bytes) {
    return Bad(m, "rebuild_checkpoint", Num(sb.rebuild_checkpoint), "past the data area");
  }
  bool per_slot = false;
  uint64_t lowest = ~uint64_t{0};
  for (uint32_t s = 0; s < kRaidMaxMembers; ++s) {
    if (sb.slot_rebuild[s] > sb.member_data_bytes) {
      return Bad(m, Field("slot_rebuild", s), Num(sb.slot_rebuild[s]), "past the data area");
    }
    if (sb.slot_rebuild[s] != 0 && sb.slot_states[s] != SlotState::kRebuilding) {
      return Bad(m, Field("slot_rebuild", s), Num(sb.slot_rebuild[s]),
                 "set for a slot that is not rebuilding");
    }
    per_slot |= sb.slot_rebuild[s] != 0;
    if (sb.slot_states[s] == SlotState::kRebuilding) lowest = std::min(lowest, sb.slot_rebuild[s]);
  }
  // With per-slot positions, rebuild_checkpoint is the lowest of them (what older builds read).
  if (per_slot && sb.rebuild_checkpoint != lowest) {
    return Bad(m, "rebuild_checkpoint", Num(sb.rebuild_checkpoint),
               "must be the lowest slot_rebuild of the rebuilding slots (" + Num(lowest) + ")");
  }
  if (sb.sync_speed_bytes_per_s > (1ull << 50)) {
    return Bad(m, "sync_speed", Num(sb.sync_speed_bytes_per_s), "larger than 1 PiB/s");
  }
  if (sb.events == 0) return Bad(m, "events", "0", "must be at least 1");
  if (IsZero(sb.array_uuid)) return Bad(m, "array_uuid", "0", "must not be zero");
  return ValidateSlots(sb, m);
}

SuperblockBlock EncodeSuperblock(const Superblock& sb) {
  FOLIO_CHECK_MSG(ValidateSuperblock(sb, "(encode)", 0).ok(), "encoding an invalid superblock");
  SuperblockBlock out{};
  char* b = out.data();
  std::memcpy(b + kOffMagic, kSuperblockMagic.data(), 8);
  Put32(b, kOffVersion, kSuperblockVersion);
  std::memcpy(b + kOffArrayUuid, sb.array_uuid.data(), 16);
  std::memcpy(b + kOffMemberUuid, sb.member_uuid.data(), 16);
  Put64(b, kOffCreateTime, sb.create_time_s);
  Put64(b, kOffUpdateTime, sb.update_time_s);
  Put64(b, kOffEvents, sb.events);
  Put8(b, kOffLevel, static_cast<uint8_t>(sb.level));
  Put8(b, kOffLayout, static_cast<uint8_t>(sb.layout));
  Put8(b, kOffMemberCount, static_cast<uint8_t>(sb.member_count));
  Put8(b, kOffRole, static_cast<uint8_t>(sb.role));
  Put32(b, kOffChunk, static_cast<uint32_t>(sb.chunk_bytes));
  Put32(b, kOffUnit, static_cast<uint32_t>(sb.unit_bytes));
  Put32(b, kOffFlags, sb.flags);
  Put64(b, kOffDataOffset, sb.data_offset_bytes);
  Put64(b, kOffMemberData, sb.member_data_bytes);
  Put64(b, kOffArrayBytes, sb.array_bytes);
  Put64(b, kOffBitmapOffset, sb.bitmap_offset_bytes);
  Put64(b, kOffBitmapBytes, sb.bitmap_bytes);
  Put64(b, kOffBitmapRegion, sb.bitmap_region_bytes);
  Put8(b, kOffSyncAction, static_cast<uint8_t>(sb.sync_action));
  Put64(b, kOffSyncCheckpoint, sb.sync_checkpoint);
  Put64(b, kOffRebuildCheckpoint, sb.rebuild_checkpoint);
  Put64(b, kOffSyncSpeed, sb.sync_speed_bytes_per_s);
  Put64(b, kOffSyncSpeedTime, sb.sync_speed_time_ms);
  for (uint32_t s = 0; s < kRaidMaxMembers; ++s) {
    Put8(b, kOffSlotStates + s, static_cast<uint8_t>(sb.slot_states[s]));
    std::memcpy(b + kOffSlotUuids + 16 * s, sb.slot_uuids[s].data(), 16);
    Put64(b, kOffSlotRebuild + 8 * s, sb.slot_rebuild[s]);
  }
  Put32(b, kOffCrc, BlockCrc(b));
  return out;
}

Result<Superblock> DecodeSuperblock(std::span<const char> block, std::string_view m,
                                    uint64_t device_bytes) {
  if (block.size() < kSuperblockBytes) {
    return Status::Corruption("member " + std::string(m) + ": superblock truncated (" +
                              Num(block.size()) + " of 4096 bytes)");
  }
  const char* b = block.data();
  if (std::memcmp(b + kOffMagic, kSuperblockMagic.data(), 8) != 0) {
    return Status::Corruption("member " + std::string(m) +
                              ": no Folio RAID superblock (magic FOLIOMD1 not found at offset 0)");
  }
  const uint32_t version = Get32(b, kOffVersion);
  if (version != kSuperblockVersion) return Bad(m, "version", Num(version), "only 1 is known");
  const uint32_t crc = Get32(b, kOffCrc);
  if (crc != BlockCrc(b)) return Bad(m, "crc32c", Num(crc), "checksum mismatch");
  if (!AllZero(b + kOffReserved1, 7) || !AllZero(b + kOffReserved2,
                                                 kSuperblockBytes - kOffReserved2)) {
    return Bad(m, "reserved bytes", "", "must be zero");
  }
  Superblock sb;
  std::memcpy(sb.array_uuid.data(), b + kOffArrayUuid, 16);
  std::memcpy(sb.member_uuid.data(), b + kOffMemberUuid, 16);
  sb.create_time_s = Get64(b, kOffCreateTime);
  sb.update_time_s = Get64(b, kOffUpdateTime);
  sb.events = Get64(b, kOffEvents);
  const uint8_t level = Get8(b, kOffLevel);
  if (level != 0 && level != 1 && level != 5 && level != 6) {
    return Bad(m, "level", Num(level), "must be 0, 1, 5 or 6");
  }
  sb.level = static_cast<RaidLevel>(level);
  const uint8_t layout = Get8(b, kOffLayout);
  if (layout > 3) return Bad(m, "layout", Num(layout), "must be 0..3");
  sb.layout = static_cast<RaidLayout>(layout);
  sb.member_count = Get8(b, kOffMemberCount);
  sb.role = Get8(b, kOffRole);
  sb.chunk_bytes = Get32(b, kOffChunk);
  sb.unit_bytes = Get32(b, kOffUnit);
  sb.flags = Get32(b, kOffFlags);
  sb.data_offset_bytes = Get64(b, kOffDataOffset);
  sb.member_data_bytes = Get64(b, kOffMemberData);
  sb.array_bytes = Get64(b, kOffArrayBytes);
  sb.bitmap_offset_bytes = Get64(b, kOffBitmapOffset);
  sb.bitmap_bytes = Get64(b, kOffBitmapBytes);
  sb.bitmap_region_bytes = Get64(b, kOffBitmapRegion);
  sb.sync_action = static_cast<SyncAction>(Get8(b, kOffSyncAction));
  sb.sync_checkpoint = Get64(b, kOffSyncCheckpoint);
  sb.rebuild_checkpoint = Get64(b, kOffRebuildCheckpoint);
  sb.sync_speed_bytes_per_s = Get64(b, kOffSyncSpeed);
  sb.sync_speed_time_ms = Get64(b, kOffSyncSpeedTime);
  for (uint32_t s = 0; s < kRaidMaxMembers; ++s) {
    sb.slot_states[s] = static_cast<SlotState>(Get8(b, kOffSlotStates + s));
    std::memcpy(sb.slot_uuids[s].data(), b + kOffSlotUuids + 16 * s, 16);
    sb.slot_rebuild[s] = Get64(b, kOffSlotRebuild + 8 * s);
  }
  FOLIO_RETURN_IF_ERROR(ValidateSuperblock(sb, m, device_bytes));
  // Superblocks written before per-slot rebuild positions hold zeros there and the one
  // array-wide position in rebuild_checkpoint; newer ones write it as the lowest per-slot
  // position, so the larger of the two is every rebuilding slot's own.
  for (uint32_t s = 0; s < sb.member_count; ++s) {
    if (sb.slot_states[s] == SlotState::kRebuilding) {
      sb.slot_rebuild[s] = std::max(sb.slot_rebuild[s], sb.rebuild_checkpoint);
    }
  }
  return sb;
}

}  // namespace folio::raid
