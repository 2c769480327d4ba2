#include "raid/sync_machine.h"

#include <algorithm>

#include "base/check.h"

namespace folio::raid {

void SyncMachine::Begin(const SyncConfig& config, std::vector<ArrayMeta::RebuildMove> rebuilding) {
  FOLIO_CHECK_MSG(phase_ == Phase::kIdle, "sync: Begin while a run is active");
  FOLIO_CHECK(config.unit > 0 && config.window >= config.unit);
  FOLIO_CHECK(config.start % config.unit == 0 && config.start <= config.end);
  FOLIO_CHECK_MSG(config.action != RaidSyncAction::kResync || config.region_bytes == 0 ||
                      config.start % config.region_bytes == 0,
                  "sync: a resync starts at a region boundary");
  config_ = config;
  next_ = config.start;
  in_flight_.clear();
  first_failed_ = kNone;
  unsynced_units_ = 0;
  unsynced_regions_.clear();
  rebuilding_.clear();
  for (const ArrayMeta::RebuildMove& m : rebuilding) {
    if (m.position >= config.start) rebuilding_.push_back(m);
  }
  phase_ = Phase::kRunning;
}

bool SyncMachine::CanIssue() const {
  return phase_ == Phase::kRunning && next_ < config_.end &&
         in_flight_bytes() + config_.unit <= config_.window;
}

uint64_t SyncMachine::Issue() {
  FOLIO_CHECK_MSG(CanIssue(), "sync: unit issued while the run cannot take one");
  const uint64_t pos = next_;
  in_flight_.insert(pos);
  next_ += config_.unit;
  return pos;
}

void SyncMachine::SkipTo(uint64_t pos) {
  FOLIO_CHECK_MSG(pos >= next_, "sync: skipping backwards");
  next_ = std::min(pos, config_.end);
}

void SyncMachine::Finish(uint64_t pos, UnitOutcome outcome) {
  FOLIO_CHECK_MSG(in_flight_.erase(pos) == 1, "sync: a unit finished that was not in flight");
  const bool rebuild = config_.action == RaidSyncAction::kRebuild;
  if (outcome == UnitOutcome::kUnsynced) {
    ++unsynced_units_;
    if (config_.region_bytes != 0) unsynced_regions_.insert(pos / config_.region_bytes);
  }
  // A rebuild cannot mark a slot in sync past a unit it could not rebuild.
  if (outcome == UnitOutcome::kFailed || (rebuild && outcome == UnitOutcome::kUnsynced)) {
    first_failed_ = std::min(first_failed_, pos);
    if (phase_ == Phase::kRunning) phase_ = Phase::kStopping;
  }
}

void SyncMachine::Stop() {
  if (phase_ == Phase::kRunning) phase_ = Phase::kStopping;
}

bool SyncMachine::Finished() const {
  return in_flight_.empty() && (phase_ == Phase::kStopping || next_ >= config_.end);
}

bool SyncMachine::Complete() const {
  return Finished() && next_ >= config_.end && first_failed_ == kNone;
}

void SyncMachine::End() {
  FOLIO_CHECK_MSG(phase_ != Phase::kIdle && Finished(), "sync: End with units in flight");
  phase_ = Phase::kIdle;
}

uint64_t SyncMachine::Checkpoint() const {
  uint64_t cp = std::min(next_, config_.end);
  if (!in_flight_.empty()) cp = std::min(cp, *in_flight_.begin());
  return std::min(cp, first_failed_);
}

void SyncMachine::ForEachResyncedRegion(uint64_t cp,
                                        const std::function<void(uint64_t)>& fn) const {
  if (!Resyncs() || config_.region_bytes == 0) return;
  FOLIO_CHECK_MSG(cp <= Checkpoint(), "sync: regions asked for past the checkpoint");
  const uint64_t rb = config_.region_bytes;
  const uint64_t first = (config_.start + rb - 1) / rb;  // visited from its first unit
  // Regions wholly below cp; the last, partial region counts once cp reached the end.
  const uint64_t last = cp >= config_.end ? (config_.end + rb - 1) / rb : cp / rb;
  for (uint64_t r = first; r < last; ++r) {
    if (!unsynced_regions_.count(r)) fn(r);
  }
}

std::vector<ArrayMeta::RebuildMove> SyncMachine::RebuildMoves(uint64_t cp) const {
  FOLIO_CHECK_MSG(cp <= Checkpoint(), "sync: rebuild position asked for past the checkpoint");
  std::vector<ArrayMeta::RebuildMove> out;
  if (config_.action != RaidSyncAction::kRebuild) return out;
  for (ArrayMeta::RebuildMove m : rebuilding_) {
    if (cp <= m.position) continue;
    m.position = cp;
    out.push_back(m);
  }
  return out;
}

std::optional<RaidSyncAction> NextPendingSync(uint64_t resync_regions, bool any_rebuilding,
                                              SyncAction stored) {
  if (resync_regions > 0) return RaidSyncAction::kResync;
  if (any_rebuilding) return RaidSyncAction::kRebuild;
  switch (stored) {
    case SyncAction::kRepair: return RaidSyncAction::kRepair;
    case SyncAction::kCheck: return RaidSyncAction::kCheck;
    case SyncAction::kResync: return RaidSyncAction::kResync;  // a record left: clears it
    case SyncAction::kNone: break;
  }
  return std::nullopt;
}

}  // namespace folio::raid
