// RAID volumes: RAID 0 / 1 / 5 / 6 over 2..32 member BlockDevices, exposed as one BlockDevice.
//
// This header holds the public vocabulary (levels, layouts, limits). The stripe geometry that
// maps array positions to members lives in src/raid/geometry.h.
//
// Thread safety: the free functions here are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "folio/status.h"

namespace folio {

enum class RaidLevel : uint8_t { kRaid0 = 0, kRaid1 = 1, kRaid5 = 5, kRaid6 = 6 };

// Placement of parity in RAID 5 / 6, with md's numbering (ALGORITHM_*). "left" parity starts
// on the last member and moves left one member per stripe; "right" starts on the first and
// moves right. "symmetric" lays data out starting just after the parity (so consecutive chunks
// visit every member before reusing one); "asymmetric" keeps data in member order, skipping
// the parity members. RAID 6 places Q on the member after P (wrapping).
enum class RaidLayout : uint8_t {
  kLeftAsymmetric = 0,
  kRightAsymmetric = 1,
  kLeftSymmetric = 2,  // the default, as in md
  kRightSymmetric = 3,
};

inline constexpr uint32_t kRaidMinMembers = 2;
inline constexpr uint32_t kRaidMaxMembers = 32;
inline constexpr uint64_t kRaidMinChunkBytes = 4096;
inline constexpr uint64_t kRaidMaxChunkBytes = 4ull << 20;
inline constexpr uint64_t kRaidMinUnitBytes = 4096;

std::string_view RaidLevelName(RaidLevel level);  // "raid0", "raid1", "raid5", "raid6"
// Accepts "0", "1", "5", "6" and "raid0".."raid6".
Result<RaidLevel> ParseRaidLevel(std::string_view text);
std::string_view RaidLayoutName(RaidLayout layout);  // "left-symmetric", ...
// Accepts the names above and md's short forms "ls", "la", "rs", "ra".
Result<RaidLayout> ParseRaidLayout(std::string_view text);

// Members a level needs at least: RAID 0 and 1: 2, RAID 5: 3, RAID 6: 4.
uint32_t RaidMinMembers(RaidLevel level);
// Members that may fail without data loss: RAID 0: 0, RAID 1: members - 1, RAID 5: 1, RAID 6: 2.
uint32_t RaidFailureTolerance(RaidLevel level, uint32_t members);

}  // namespace folio
