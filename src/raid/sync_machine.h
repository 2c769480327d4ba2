// SyncMachine: the bookkeeping of one run of resync / check / repair / rebuild, apart from its
// I/O (raid_sync.cc drives the I/O): which stripe units are issued, how each ended, how far
// a checkpoint may go, which bitmap regions it may mark resynced and which rebuild positions
// it may record. It holds no device and does no I/O, so a test can drive every transition.
//
//   phase:  kIdle --Begin--> kRunning --Stop / failed unit--> kStopping --End--> kIdle
//                            kRunning --at the end, nothing in flight--End--> kIdle
//
//   member pos:  |unit|unit|unit|unit|unit|unit|unit|unit| ...
//                 done      ^checkpoint   ^next
//                           [---- in flight (window) ----]
//
// Rules it enforces (FOLIO_CHECK on a caller that breaks them):
//   - units are issued in order, one unit long, only while running and within the window;
//   - a unit is finished once, and only if it is in flight;
//   - the checkpoint is the lowest position not known done: min(in flight, first failed
//     unit, next); it never passes a unit that failed (nor, for a rebuild, one that could
//     not be rebuilt);
//   - a bitmap region is reported resynced only when this run visited all of it, from its
//     first unit, below the checkpoint, and none of its units was left unsynced;
//   - a rebuild position is reported only for slots that were rebuilding, with the
//     generation they had, from a position at or below the run's start.
// The persisted state these feed, and the order of the writes, is the transition table in
// docs/format/raid.md ("Sync state machine").
//
// Thread safety: none; one sync thread owns a machine.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "folio/raid.h"
#include "raid/array_meta.h"
#include "raid/superblock.h"

namespace folio::raid {

// How one stripe unit of a sync ended.
enum class UnitOutcome : uint8_t {
  kConsistent,  // parity (or the mirrors) agreed, or now agree: rebuilt, repaired, resynced
  kUnsynced,    // could not be made consistent: members missing where parity is untrusted
  kFailed,      // an error (data loss, metadata write): the run stops before it
};

struct SyncConfig {
  RaidSyncAction action = RaidSyncAction::kCheck;
  uint64_t start = 0;         // unit-aligned member position to begin at
  uint64_t end = 0;           // member_data_bytes
  uint64_t unit = 0;          // bytes per stripe unit
  uint64_t window = 0;        // bytes in flight at most
  uint64_t region_bytes = 0;  // bitmap region (0: no bitmap)
};

class SyncMachine {
 public:
  enum class Phase : uint8_t { kIdle, kRunning, kStopping };

  // kIdle -> kRunning. `rebuilding` are the slots a rebuild writes (with their generation and
  // position); slots whose position is below config.start are not advanced by this run.
  void Begin(const SyncConfig& config, std::vector<ArrayMeta::RebuildMove> rebuilding = {});
  Phase phase() const { return phase_; }
  const SyncConfig& config() const { return config_; }

  // A unit may be issued now: running, not at the end, and the window has room.
  bool CanIssue() const;
  // Issues the unit at next; returns its position. REQUIRES: CanIssue().
  uint64_t Issue();
  // Moves next forward over positions that need no visit (resync: clean regions).
  void SkipTo(uint64_t pos);
  void Finish(uint64_t pos, UnitOutcome outcome);
  // kRunning -> kStopping: no more units are issued.
  void Stop();
  // Nothing in flight, and stopping or at the end: the run is over.
  bool Finished() const;
  // Finished at the end with no unit failed.
  bool Complete() const;
  // kRunning / kStopping -> kIdle once the final checkpoint is recorded. REQUIRES: Finished().
  void End();

  uint64_t next() const { return next_; }
  uint64_t in_flight_bytes() const { return in_flight_.size() * config_.unit; }
  bool any_failed() const { return first_failed_ != kNone; }
  uint64_t unsynced() const { return unsynced_units_; }
  // The lowest member position not known done.
  uint64_t Checkpoint() const;
  // Calls fn(region) for each bitmap region this run resynced wholly below `cp`.
  void ForEachResyncedRegion(uint64_t cp, const std::function<void(uint64_t)>& fn) const;
  // The rebuild positions a checkpoint at `cp` may record.
  std::vector<ArrayMeta::RebuildMove> RebuildMoves(uint64_t cp) const;

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};
  bool Resyncs() const {
    return config_.action == RaidSyncAction::kResync || config_.action == RaidSyncAction::kRepair;
  }

  Phase phase_ = Phase::kIdle;
  SyncConfig config_;
  uint64_t next_ = 0;
  std::set<uint64_t> in_flight_;
  uint64_t first_failed_ = kNone;
  uint64_t unsynced_units_ = 0;
  std::set<uint64_t> unsynced_regions_;
  std::vector<ArrayMeta::RebuildMove> rebuilding_;
};

// What the state on disk asks for next, in this order: a resync of the regions that need one
// (whatever action was stored: crash recovery first), a rebuild onto rebuilding slots, then a
// stored repair or check resumed at its checkpoint (a stored resync record with no region left
// runs once more to clear it). nullopt when nothing is pending.
std::optional<RaidSyncAction> NextPendingSync(uint64_t resync_regions, bool any_rebuilding,
                                              SyncAction stored);

}  // namespace folio::raid
