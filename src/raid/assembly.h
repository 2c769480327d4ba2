// The assembly decision: given the superblock (or the read error) of every member a user
// named, decide which members form the array, which slot each fills, and which are stale.
// A pure function, so that it can be tested exhaustively and fuzzed.
//
// Rules:
//   1. Members whose superblock cannot be read or decoded are set aside (kUnreadable) and the
//      array may run without them if enough others are in sync.
//   2. Members of different arrays (array UUIDs) are refused: a mixed set is an error naming
//      each member and its array.
//   3. The member with the highest event counter carries the reference superblock; its slot
//      table (state and member id of every slot) is authoritative.
//   4. A member whose id no longer owns its slot (replaced) or whose slot is marked failed is
//      stale: it is not used and must be rebuilt before it rejoins.
//   5. Members of one array must agree on the geometry; two copies of one member id, or two
//      members disagreeing at the same event count, are refused.
//   6. The array starts when at least members - tolerance slots are active and present;
//      otherwise the error names every slot and member and why it does not count.
//   7. Forced (AssemblyOptions::force, as mdadm --assemble --force), only when rule 6 refuses:
//      a member whose slot the reference marks failed is taken back when
//        a. it still owns its slot (not replaced: its member id is the slot's),
//        b. its own superblock has its slot active (it was in sync when it dropped out, not a
//           replacement still rebuilding), and
//        c. its own slot table differs from the reference's only by slots gone from active to
//           failed: every update it missed was a failure mark (no replace, no rebuild);
//      of those, the most recent to fail (highest own events) first, as many as rule 6 needs,
//      with any that tie with the last one taken (they dropped out at the same update). The
//      others stay failed: they missed writes the array took after they failed. Nothing is
//      forced when even all of them are not enough.
//
// Thread safety: pure function.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "folio/status.h"
#include "raid/superblock.h"

namespace folio::raid {

struct MemberHeader {
  std::string name;                // the member's path or device name
  Result<Superblock> superblock;   // decoded superblock, or why it could not be read
};

enum class MemberVerdict : uint8_t { kActive, kRebuilding, kStale, kUnreadable };
std::string_view MemberVerdictName(MemberVerdict v);

struct MemberDecision {
  std::string name;
  MemberVerdict verdict = MemberVerdict::kUnreadable;
  int slot = -1;     // the slot its superblock claims (-1 when unreadable)
  std::string why;   // stale / unreadable: the reason; active: a note (may be empty)
};

// A member rule 7 took back.
struct ForcedMember {
  int member = -1;             // index into the input members
  uint32_t slot = 0;
  uint64_t events = 0;         // its own superblock's
  uint64_t events_behind = 0;  // reference events - its events: updates it missed
};

struct AssemblyOptions {
  bool force = false;  // rule 7
};

struct AssemblyPlan {
  Superblock reference;               // the freshest superblock: the array's agreed state
  std::vector<int> slot_member;       // per slot: index into the input members, or -1
  std::vector<MemberDecision> members;  // one per input member, in input order
  uint32_t in_sync = 0;               // active slots with their member present
  uint32_t missing = 0;               // active or rebuilding slots with no usable member
  uint32_t rebuilding = 0;            // rebuilding slots with their member present
  std::vector<ForcedMember> forced;   // rule 7: their slots count as active (and in_sync)
};

// Errors: InvalidArgument naming each member and why (mixed arrays, duplicates, too few in
// sync, no superblock at all; forced: why each failed member could not be taken back).
Result<AssemblyPlan> DecideAssembly(std::span<const MemberHeader> members,
                                    const AssemblyOptions& options = {});

}  // namespace folio::raid
