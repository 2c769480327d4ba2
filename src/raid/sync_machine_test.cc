// SyncMachine driven by hand: every transition of one run without any I/O, and the order of
// NextPendingSync.
#include "raid/sync_machine.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/death_test_util.h"

namespace folio::raid {
namespace {

constexpr uint64_t kUnit = 4096;

SyncConfig Config(RaidSyncAction a, uint64_t start, uint64_t end, uint64_t window_units,
                  uint64_t region_units) {
  SyncConfig c;
  c.action = a;
  c.start = start * kUnit;
  c.end = end * kUnit;
  c.unit = kUnit;
  c.window = window_units * kUnit;
  c.region_bytes = region_units * kUnit;
  return c;
}

std::vector<uint64_t> Regions(const SyncMachine& m, uint64_t cp) {
  std::vector<uint64_t> out;
  m.ForEachResyncedRegion(cp, [&](uint64_t r) { out.push_back(r); });
  return out;
}

TEST(SyncMachine, CheckpointIsTheLowestUnitNotDone) {
  SyncMachine m;
  m.Begin(Config(RaidSyncAction::kResync, 0, 8, 3, 2));
  EXPECT_EQ(m.Issue(), 0u);
  EXPECT_EQ(m.Issue(), kUnit);
  EXPECT_EQ(m.Issue(), 2 * kUnit);
  EXPECT_FALSE(m.CanIssue()) << "window of 3 units";
  m.Finish(kUnit, UnitOutcome::kConsistent);
  EXPECT_EQ(m.Checkpoint(), 0u) << "unit 0 still in flight";
  m.Finish(0, UnitOutcome::kConsistent);
  EXPECT_EQ(m.Checkpoint(), 2 * kUnit);
  EXPECT_EQ(Regions(m, m.Checkpoint()), (std::vector<uint64_t>{0}));
  m.Finish(2 * kUnit, UnitOutcome::kConsistent);
  while (m.CanIssue()) m.Finish(m.Issue(), UnitOutcome::kConsistent);
  EXPECT_TRUE(m.Finished());
  EXPECT_TRUE(m.Complete());
  EXPECT_EQ(Regions(m, m.Checkpoint()), (std::vector<uint64_t>{0, 1, 2, 3}));
  m.End();
  EXPECT_EQ(m.phase(), SyncMachine::Phase::kIdle);
}

TEST(SyncMachine, UnsyncedUnitKeepsItsRegion) {
  SyncMachine m;
  m.Begin(Config(RaidSyncAction::kResync, 0, 6, 8, 2));
  while (m.CanIssue()) {
    const uint64_t pos = m.Issue();
    m.Finish(pos, pos == 3 * kUnit ? UnitOutcome::kUnsynced : UnitOutcome::kConsistent);
  }
  EXPECT_TRUE(m.Complete()) << "a resync goes on past an unsynced unit";
  EXPECT_EQ(m.unsynced(), 1u);
  EXPECT_EQ(Regions(m, m.Checkpoint()), (std::vector<uint64_t>{0, 2}));
}

TEST(SyncMachine, FailedUnitStopsTheRunAndCapsTheCheckpoint) {
  SyncMachine m;
  m.Begin(Config(RaidSyncAction::kRepair, 0, 8, 4, 2));
  const uint64_t a = m.Issue(), b = m.Issue(), c = m.Issue();
  m.Finish(b, UnitOutcome::kFailed);
  EXPECT_FALSE(m.CanIssue()) << "stopping";
  m.Finish(c, UnitOutcome::kConsistent);
  m.Finish(a, UnitOutcome::kConsistent);
  EXPECT_TRUE(m.Finished());
  EXPECT_FALSE(m.Complete());
  EXPECT_EQ(m.Checkpoint(), b) << "never past the failed unit";
  EXPECT_TRUE(Regions(m, m.Checkpoint()).empty());
}

TEST(SyncMachine, ResumedRunMarksOnlyRegionsItVisitedWhole) {
  // A repair resumed in the middle of region 1 (units 2..3): region 1 was not visited whole.
  SyncMachine m;
  m.Begin(Config(RaidSyncAction::kRepair, 3, 8, 8, 2));
  while (m.CanIssue()) m.Finish(m.Issue(), UnitOutcome::kConsistent);
  EXPECT_EQ(Regions(m, m.Checkpoint()), (std::vector<uint64_t>{2, 3}));
  // A check resyncs nothing.
  SyncMachine c;
  c.Begin(Config(RaidSyncAction::kCheck, 0, 4, 8, 2));
  while (c.CanIssue()) c.Finish(c.Issue(), UnitOutcome::kConsistent);
  EXPECT_TRUE(Regions(c, c.Checkpoint()).empty());
}

TEST(SyncMachine, RebuildMovesOnlySlotsItCovers) {
  SyncMachine m;
  // Slot 1 at unit 2 (the run starts there), slot 3 at unit 5 (above the start).
  m.Begin(Config(RaidSyncAction::kRebuild, 2, 8, 8, 0),
          {{1, 7, 2 * kUnit}, {3, 9, 5 * kUnit}});
  for (int i = 0; i < 3; ++i) m.Finish(m.Issue(), UnitOutcome::kConsistent);
  auto moves = m.RebuildMoves(m.Checkpoint());
  ASSERT_EQ(moves.size(), 1u) << "slot 3 is already past the checkpoint";
  EXPECT_EQ(moves[0].slot, 1u);
  EXPECT_EQ(moves[0].generation, 7u);
  EXPECT_EQ(moves[0].position, 5 * kUnit);
  // A unit it cannot rebuild stops the rebuild there.
  const uint64_t bad = m.Issue();
  m.Finish(bad, UnitOutcome::kUnsynced);
  EXPECT_FALSE(m.CanIssue());
  EXPECT_EQ(m.Checkpoint(), bad);
  // A slot below the start (replaced during an earlier pass) is not this run's.
  SyncMachine n;
  n.Begin(Config(RaidSyncAction::kRebuild, 4, 8, 8, 0), {{2, 1, 0}});
  while (n.CanIssue()) n.Finish(n.Issue(), UnitOutcome::kConsistent);
  EXPECT_TRUE(n.RebuildMoves(n.Checkpoint()).empty());
}

TEST(SyncMachine, IllegalTransitionsAbort) {
  UseThreadsafeDeathTests();
  EXPECT_DEATH(
      {
        SyncMachine m;
        m.Begin(Config(RaidSyncAction::kCheck, 0, 4, 4, 0));
        m.Finish(kUnit, UnitOutcome::kConsistent);
      },
      "not in flight");
  EXPECT_DEATH(
      {
        SyncMachine m;
        m.Begin(Config(RaidSyncAction::kCheck, 0, 4, 4, 0));
        m.Begin(Config(RaidSyncAction::kCheck, 0, 4, 4, 0));
      },
      "Begin while a run is active");
  EXPECT_DEATH(
      {
        SyncMachine m;
        m.Begin(Config(RaidSyncAction::kResync, 1, 4, 4, 2));
      },
      "region boundary");
  EXPECT_DEATH(
      {
        SyncMachine m;
        m.Begin(Config(RaidSyncAction::kCheck, 0, 4, 4, 0));
        (void)m.Issue();
        m.End();
      },
      "End with units in flight");
}

TEST(SyncMachine, PendingOrderPutsCrashRecoveryFirst) {
  EXPECT_EQ(NextPendingSync(3, true, SyncAction::kCheck), RaidSyncAction::kResync);
  EXPECT_EQ(NextPendingSync(0, true, SyncAction::kCheck), RaidSyncAction::kRebuild);
  EXPECT_EQ(NextPendingSync(0, false, SyncAction::kCheck), RaidSyncAction::kCheck);
  EXPECT_EQ(NextPendingSync(0, false, SyncAction::kRepair), RaidSyncAction::kRepair);
  EXPECT_EQ(NextPendingSync(0, false, SyncAction::kResync), RaidSyncAction::kResync);
  EXPECT_EQ(NextPendingSync(0, false, SyncAction::kNone), std::nullopt);
}

}  // namespace
}  // namespace folio::raid
