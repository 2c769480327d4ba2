#include "raid/superblock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "base/test_seed.h"
#include "raid/assembly.h"

namespace folio::raid {
namespace {

// A consistent set of superblocks for one array, one per member.
std::vector<Superblock> MakeArray(RaidLevel level, uint32_t n, uint64_t events = 7) {
  Superblock base;
  base.array_uuid = NewUuid();
  base.create_time_s = 1700000000;
  base.update_time_s = 1700000100;
  base.events = events;
  base.level = level;
  base.layout = RaidLayout::kLeftSymmetric;
  base.member_count = n;
  base.chunk_bytes = 64 << 10;
  base.unit_bytes = 16 << 10;
  base.flags = kSuperblockFlagClean;
  base.data_offset_bytes = 1 << 20;
  base.member_data_bytes = 64ull << 20;
  const uint32_t data = level == RaidLevel::kRaid1   ? 1
                        : level == RaidLevel::kRaid0 ? n
                        : level == RaidLevel::kRaid5 ? n - 1
                                                     : n - 2;
  base.array_bytes = base.member_data_bytes * data;
  base.bitmap_offset_bytes = 4096;
  base.bitmap_bytes = 4096;
  base.bitmap_region_bytes = 1 << 20;
  for (uint32_t s = 0; s < n; ++s) {
    base.slot_states[s] = SlotState::kActive;
    base.slot_uuids[s] = NewUuid();
  }
  std::vector<Superblock> out;
  for (uint32_t s = 0; s < n; ++s) {
    Superblock sb = base;
    sb.role = s;
    sb.member_uuid = base.slot_uuids[s];
    out.push_back(sb);
  }
  return out;
}

// Recomputes the block's CRC so that a field-level mutation reaches the range checks.
void Reseal(SuperblockBlock* block) {
  std::memset(block->data() + 12, 0, 4);
  const uint32_t crc = Crc32c(block->data(), block->size());
  for (int i = 0; i < 4; ++i) (*block)[12 + i] = static_cast<char>(crc >> (8 * i));
}

TEST(Superblock, RoundTripsEveryField) {
  for (RaidLevel level :
       {RaidLevel::kRaid0, RaidLevel::kRaid1, RaidLevel::kRaid5, RaidLevel::kRaid6}) {
    auto set = MakeArray(level, 5);
    Superblock sb = set[3];
    sb.sync_action = SyncAction::kRepair;
    sb.sync_checkpoint = 12 << 20;
    sb.rebuild_checkpoint = 3 << 20;
    sb.slot_states[1] = SlotState::kFailed;
    sb.slot_states[2] = SlotState::kRebuilding;
    sb.slot_states[4] = SlotState::kRebuilding;
    sb.slot_rebuild[2] = 3 << 20;
    sb.slot_rebuild[4] = 5 << 20;
    sb.flags = 0;
    const SuperblockBlock block = EncodeSuperblock(sb);
    auto back = DecodeSuperblock(block, "m3", 128 << 20);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->array_uuid, sb.array_uuid);
    EXPECT_EQ(back->member_uuid, sb.member_uuid);
    EXPECT_EQ(back->events, sb.events);
    EXPECT_EQ(back->level, sb.level);
    EXPECT_EQ(back->layout, sb.layout);
    EXPECT_EQ(back->member_count, sb.member_count);
    EXPECT_EQ(back->role, 3u);
    EXPECT_EQ(back->chunk_bytes, sb.chunk_bytes);
    EXPECT_EQ(back->unit_bytes, sb.unit_bytes);
    EXPECT_EQ(back->flags, 0u);
    EXPECT_EQ(back->data_offset_bytes, sb.data_offset_bytes);
    EXPECT_EQ(back->member_data_bytes, sb.member_data_bytes);
    EXPECT_EQ(back->array_bytes, sb.array_bytes);
    EXPECT_EQ(back->bitmap_offset_bytes, sb.bitmap_offset_bytes);
    EXPECT_EQ(back->bitmap_bytes, sb.bitmap_bytes);
    EXPECT_EQ(back->bitmap_region_bytes, sb.bitmap_region_bytes);
    EXPECT_EQ(back->sync_action, SyncAction::kRepair);
    EXPECT_EQ(back->sync_checkpoint, sb.sync_checkpoint);
    EXPECT_EQ(back->rebuild_checkpoint, sb.rebuild_checkpoint);
    EXPECT_EQ(back->slot_rebuild, sb.slot_rebuild);
    EXPECT_EQ(back->slot_states, sb.slot_states);
    EXPECT_EQ(back->slot_uuids, sb.slot_uuids);
    EXPECT_EQ(back->create_time_s, sb.create_time_s);
    EXPECT_EQ(back->update_time_s, sb.update_time_s);
  }
}

TEST(Superblock, FixedLayoutOffsets) {
  // A few fields at the offsets docs/format/raid.md documents.
  Superblock sb = MakeArray(RaidLevel::kRaid5, 4)[2];
  sb.events = 0x0102030405060708ull;
  const SuperblockBlock b = EncodeSuperblock(sb);
  EXPECT_EQ(std::string(b.data(), 8), "FOLIOMD1");
  EXPECT_EQ(b[8], 1);                                  // version, little-endian
  EXPECT_EQ(static_cast<uint8_t>(b[64]), 0x08);        // events, low byte first
  EXPECT_EQ(static_cast<uint8_t>(b[71]), 0x01);
  EXPECT_EQ(b[72], 5);                                 // level
  EXPECT_EQ(b[74], 4);                                 // member_count
  EXPECT_EQ(b[75], 2);                                 // role
  EXPECT_EQ(static_cast<uint8_t>(b[78]), 0x01);        // chunk 64K = 0x00010000
  EXPECT_EQ(b[160 + 2], 1);                            // slot_state[2] active
  EXPECT_EQ(0, std::memcmp(b.data() + 192 + 16 * 2, sb.member_uuid.data(), 16));
}

TEST(Superblock, EveryFlippedByteIsRejected) {
  const SuperblockBlock good = EncodeSuperblock(MakeArray(RaidLevel::kRaid6, 6)[0]);
  for (size_t i = 0; i < good.size(); ++i) {
    SuperblockBlock bad = good;
    bad[i] ^= 0x10;
    auto r = DecodeSuperblock(bad, "/dev/x", 0);
    ASSERT_FALSE(r.ok()) << "byte " << i;
    ASSERT_EQ(r.status().code(), StatusCode::kCorruption);
    ASSERT_NE(r.status().message().find("/dev/x"), std::string_view::npos);
  }
  SuperblockBlock zero{};
  EXPECT_NE(DecodeSuperblock(zero, "z", 0).status().message().find("magic"),
            std::string_view::npos);
  EXPECT_FALSE(DecodeSuperblock(std::span<const char>(good.data(), 100), "t", 0).ok());
}

// Fields patched with the CRC recomputed: the range checks name the field.
TEST(Superblock, RangeChecksNameTheField) {
  const SuperblockBlock good = EncodeSuperblock(MakeArray(RaidLevel::kRaid5, 4)[1]);
  struct Case {
    size_t off;
    int width;
    uint64_t value;
    const char* field;
  };
  const Case cases[] = {
      {8, 4, 2, "version"},
      {72, 1, 4, "level"},
      {73, 1, 9, "layout"},
      {74, 1, 2, "geometry"},
      {74, 1, 40, "geometry"},
      {75, 1, 4, "role"},
      {76, 4, 3000, "geometry"},
      {80, 4, 128 << 10, "unit"},
      {80, 4, 5000, "unit"},
      {84, 4, 2, "flags"},
      {88, 8, 4097, "data_offset"},
      {96, 8, (64ull << 20) + 4096, "member_data_bytes"},
      {104, 8, 1, "array_bytes"},
      {112, 8, 0, "bitmap_offset"},
      {120, 8, 0, "bitmap_bytes"},
      {120, 8, 2ull << 20, "bitmap_bytes"},
      {128, 8, 4096, "bitmap_region"},
      {128, 8, 3 << 20, "bitmap_region"},
      {136, 1, 7, "sync_action"},
      {144, 8, 65ull << 20, "sync_checkpoint"},
      {152, 8, 65ull << 20, "rebuild_checkpoint"},
      {720, 8, 65ull << 20, "slot_rebuild[0]"},
      {720 + 8, 8, 4096, "slot_rebuild[1]"},  // slot 1 is active, not rebuilding
      {704, 8, (1ull << 50) + 1, "sync_speed"},
      {64, 8, 0, "events"},
      {160, 1, 9, "slot_state[0]"},
      {160 + 5, 1, 1, "slot_state[5]"},
      {140, 1, 1, "reserved"},
      {4000, 1, 1, "reserved"},
      {32, 8, 0x55, "member_uuid"},
  };
  for (const Case& c : cases) {
    SuperblockBlock b = good;
    for (int i = 0; i < c.width; ++i) b[c.off + i] = static_cast<char>(c.value >> (8 * i));
    Reseal(&b);
    auto r = DecodeSuperblock(b, "member7", 0);
    ASSERT_FALSE(r.ok()) << c.field;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << c.field;
    EXPECT_NE(r.status().message().find(c.field), std::string_view::npos)
        << c.field << " -> " << r.status().ToString();
    EXPECT_NE(r.status().message().find("member7"), std::string_view::npos);
  }
}

// The sync speed fields (704..719) were reserved zero before: an old block decodes with both
// unknown (0), and they round-trip at their documented offsets.
TEST(Superblock, SyncSpeedFields) {
  Superblock sb = MakeArray(RaidLevel::kRaid5, 4)[1];
  auto old = DecodeSuperblock(EncodeSuperblock(sb), "m", 0);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->sync_speed_bytes_per_s, 0u);
  EXPECT_EQ(old->sync_speed_time_ms, 0u);
  sb.sync_action = SyncAction::kResync;
  sb.sync_checkpoint = 8 << 20;
  sb.sync_speed_bytes_per_s = 0x1122334455ull;
  sb.sync_speed_time_ms = 1700000000123ull;
  const SuperblockBlock b = EncodeSuperblock(sb);
  uint64_t speed = 0, when = 0;
  for (int i = 7; i >= 0; --i) {
    speed = (speed << 8) | static_cast<uint8_t>(b[704 + i]);
    when = (when << 8) | static_cast<uint8_t>(b[712 + i]);
  }
  EXPECT_EQ(speed, 0x1122334455ull);
  EXPECT_EQ(when, 1700000000123ull);
  auto back = DecodeSuperblock(b, "m", 0);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->sync_speed_bytes_per_s, 0x1122334455ull);
  EXPECT_EQ(back->sync_speed_time_ms, 1700000000123ull);
}

// Per-slot rebuild positions (720..975, were reserved zero): each rebuilding slot's own, and
// rebuild_checkpoint (152) the lowest of them. A block from before them (all zero there) gives
// every rebuilding slot the array-wide rebuild_checkpoint.
TEST(Superblock, PerSlotRebuildPositions) {
  Superblock sb = MakeArray(RaidLevel::kRaid6, 6)[0];
  sb.slot_states[2] = SlotState::kRebuilding;
  sb.slot_states[5] = SlotState::kRebuilding;
  sb.slot_rebuild[2] = 0;
  sb.slot_rebuild[5] = 7 << 20;
  sb.rebuild_checkpoint = 0;
  SuperblockBlock b = EncodeSuperblock(sb);
  uint64_t pos5 = 0;
  for (int i = 7; i >= 0; --i) pos5 = (pos5 << 8) | static_cast<uint8_t>(b[720 + 8 * 5 + i]);
  EXPECT_EQ(pos5, 7u << 20);
  auto back = DecodeSuperblock(b, "m", 0);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->slot_rebuild[2], 0u);
  EXPECT_EQ(back->slot_rebuild[5], 7u << 20);

  // The legacy form: no per-slot positions, one array-wide checkpoint.
  Superblock legacy = sb;
  legacy.slot_rebuild = {};
  legacy.rebuild_checkpoint = 3 << 20;
  auto old = DecodeSuperblock(EncodeSuperblock(legacy), "m", 0);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->slot_rebuild[2], 3u << 20);
  EXPECT_EQ(old->slot_rebuild[5], 3u << 20);
  EXPECT_EQ(old->slot_rebuild[1], 0u) << "only rebuilding slots";

  // rebuild_checkpoint not the lowest per-slot position (0) is refused, naming the field.
  b[152 + 2] = 0x10;  // 1 MiB
  Reseal(&b);
  auto r = DecodeSuperblock(b, "m9", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rebuild_checkpoint"), std::string_view::npos);
}

TEST(Superblock, MemberTooSmall) {
  const SuperblockBlock b = EncodeSuperblock(MakeArray(RaidLevel::kRaid1, 2)[0]);
  EXPECT_TRUE(DecodeSuperblock(b, "m", (65ull << 20)).ok());
  auto r = DecodeSuperblock(b, "m", (64ull << 20));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("past the end"), std::string_view::npos);
}

TEST(Superblock, RandomValidRoundTrip) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 200; ++iter) {
    const RaidLevel levels[] = {RaidLevel::kRaid0, RaidLevel::kRaid1, RaidLevel::kRaid5,
                                RaidLevel::kRaid6};
    const RaidLevel level = levels[rng() % 4];
    const uint32_t n = RaidMinMembers(level) + rng() % (33 - RaidMinMembers(level));
    Superblock sb = MakeArray(level, n, 1 + rng() % 1000)[rng() % n];
    sb.layout = static_cast<RaidLayout>(rng() % 4);
    sb.sync_checkpoint = (rng() % 64) << 20;
    sb.sync_action = static_cast<SyncAction>(rng() % 4);
    sb.sync_speed_bytes_per_s = rng() % (1ull << 40);
    sb.sync_speed_time_ms = rng();
    auto back = DecodeSuperblock(EncodeSuperblock(sb), "r", 0);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(EncodeSuperblock(*back), EncodeSuperblock(sb));
  }
}

std::vector<MemberHeader> Headers(const std::vector<Superblock>& sbs) {
  std::vector<MemberHeader> out;
  for (size_t i = 0; i < sbs.size(); ++i) {
    out.push_back({"m" + std::to_string(i), sbs[i]});
  }
  return out;
}

TEST(Assembly, HealthySetInAnyOrder) {
  auto set = MakeArray(RaidLevel::kRaid5, 4);
  std::vector<Superblock> shuffled = {set[2], set[0], set[3], set[1]};
  auto plan = DecideAssembly(Headers(shuffled));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->in_sync, 4u);
  EXPECT_EQ(plan->missing, 0u);
  EXPECT_EQ(plan->slot_member, (std::vector<int>{1, 3, 0, 2}));
  for (const auto& d : plan->members) EXPECT_EQ(d.verdict, MemberVerdict::kActive);
}

TEST(Assembly, FailedMemberIsStaleAndArrayRunsDegraded) {
  auto set = MakeArray(RaidLevel::kRaid5, 4, 5);
  // Member 1 failed at events 6: the others recorded it, member 1 still says 5.
  for (uint32_t s : {0u, 2u, 3u}) {
    set[s].events = 6;
    set[s].slot_states[1] = SlotState::kFailed;
  }
  auto plan = DecideAssembly(Headers(set));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->members[1].verdict, MemberVerdict::kStale);
  EXPECT_NE(plan->members[1].why.find("failed"), std::string::npos);
  EXPECT_EQ(plan->slot_member[1], -1);
  EXPECT_EQ(plan->in_sync, 3u);
  EXPECT_EQ(plan->reference.events, 6u);
}

TEST(Assembly, LaggingSuperblockOfActiveMemberStillCounts) {
  auto set = MakeArray(RaidLevel::kRaid6, 5, 9);
  set[4].events = 8;  // crashed in the middle of a superblock update
  auto plan = DecideAssembly(Headers(set));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->members[4].verdict, MemberVerdict::kActive);
  EXPECT_NE(plan->members[4].why.find("behind"), std::string::npos);
}

TEST(Assembly, ReplacedMemberIsStale) {
  auto set = MakeArray(RaidLevel::kRaid1, 3, 4);
  Superblock old = set[2];
  const Uuid fresh = NewUuid();
  for (auto& sb : set) {
    sb.events = 10;
    sb.slot_uuids[2] = fresh;
    sb.slot_states[2] = SlotState::kRebuilding;
  }
  set[2].member_uuid = fresh;
  auto headers = Headers(set);
  headers.push_back({"old", old});
  auto plan = DecideAssembly(headers);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->members[2].verdict, MemberVerdict::kRebuilding);
  EXPECT_EQ(plan->members[3].verdict, MemberVerdict::kStale);
  EXPECT_NE(plan->members[3].why.find("replaced"), std::string::npos);
  EXPECT_EQ(plan->slot_member[2], 2);
  EXPECT_EQ(plan->rebuilding, 1u);
}

TEST(Assembly, RefusesMixedArraysNamingEachMember) {
  auto a = MakeArray(RaidLevel::kRaid5, 3);
  auto b = MakeArray(RaidLevel::kRaid5, 3);
  std::vector<MemberHeader> h = {{"a0", a[0]}, {"a1", a[1]}, {"b2", b[2]}};
  auto plan = DecideAssembly(h);
  ASSERT_FALSE(plan.ok());
  const std::string msg(plan.status().message());
  EXPECT_NE(msg.find("different arrays"), std::string::npos);
  for (const char* name : {"a0", "a1", "b2"}) EXPECT_NE(msg.find(name), std::string::npos);
}

TEST(Assembly, RefusesIncompleteSetsNamingEachSlot) {
  auto set = MakeArray(RaidLevel::kRaid5, 4);
  std::vector<MemberHeader> h = {{"a", set[0]}, {"b", set[1]},
                                 {"junk", Status::Corruption("member junk: no superblock")}};
  auto plan = DecideAssembly(h);
  ASSERT_FALSE(plan.ok());
  const std::string msg(plan.status().message());
  EXPECT_NE(msg.find("2 of 4 members in sync, needs at least 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("slot 2: active, no usable member"), std::string::npos) << msg;
  EXPECT_NE(msg.find("junk: unreadable"), std::string::npos) << msg;
  // One unreadable member of RAID 5 is fine: the array runs degraded.
  h.push_back({"d", set[3]});
  auto ok = DecideAssembly(h);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->missing, 1u);
  EXPECT_EQ(ok->members[2].verdict, MemberVerdict::kUnreadable);
}

TEST(Assembly, RefusesDuplicatesAndDisagreement) {
  auto set = MakeArray(RaidLevel::kRaid5, 3);
  auto dup = DecideAssembly(Headers({set[0], set[1], set[1]}));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("same member id"), std::string_view::npos);
  auto other = set;
  other[2].slot_states[0] = SlotState::kFailed;  // same events, different table
  EXPECT_FALSE(DecideAssembly(Headers(other)).ok());
  auto geo = set;
  geo[1].chunk_bytes = 128 << 10;
  geo[1].bitmap_region_bytes = 1 << 20;
  EXPECT_FALSE(DecideAssembly(Headers(geo)).ok());
  EXPECT_FALSE(DecideAssembly({}).ok());
  std::vector<MemberHeader> none = {{"x", Status::Corruption("member x: no superblock")}};
  auto r = DecideAssembly(none);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x: member x"), std::string_view::npos);
}

TEST(Assembly, Raid0NeedsEveryMember) {
  auto set = MakeArray(RaidLevel::kRaid0, 3);
  EXPECT_TRUE(DecideAssembly(Headers(set)).ok());
  set.pop_back();
  EXPECT_FALSE(DecideAssembly(Headers(set)).ok());
}

// Members `failing` drop out at one superblock update: the others get events + 1 and the
// slots marked failed; the ones dropping out keep their superblocks as they were.
void DropOut(std::vector<Superblock>* set, const std::vector<uint32_t>& failing) {
  uint64_t events = 0;
  for (const Superblock& sb : *set) events = std::max(events, sb.events);
  for (uint32_t s = 0; s < set->size(); ++s) {
    Superblock& sb = (*set)[s];
    // Members that dropped out earlier (behind) or now hear nothing.
    if (sb.events != events || std::find(failing.begin(), failing.end(), s) != failing.end()) {
      continue;
    }
    sb.events = events + 1;
    for (uint32_t f : failing) sb.slot_states[f] = SlotState::kFailed;
  }
}

// ENOSPC failed all three members of a RAID 5 in turn: slot 0 first, then slot 1; slot 2's
// superblock says so, and a plain assembly refuses (1 of 3 in sync).
std::vector<Superblock> FailedInTurn() {
  auto set = MakeArray(RaidLevel::kRaid5, 3, 5);
  DropOut(&set, {0});
  DropOut(&set, {1});
  return set;
}

TEST(Assembly, ForcedTakesBackOnlyTheLastMemberToFail) {
  const auto set = FailedInTurn();
  ASSERT_EQ(set[0].events, 5u);
  ASSERT_EQ(set[1].events, 6u);
  ASSERT_EQ(set[2].events, 7u);
  auto plain = DecideAssembly(Headers(set));
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("1 of 3 members in sync"), std::string_view::npos);

  auto plan = DecideAssembly(Headers(set), AssemblyOptions{.force = true});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->forced.size(), 1u);
  EXPECT_EQ(plan->forced[0].member, 1);
  EXPECT_EQ(plan->forced[0].slot, 1u);
  EXPECT_EQ(plan->forced[0].events, 6u);
  EXPECT_EQ(plan->forced[0].events_behind, 1u);
  EXPECT_EQ(plan->in_sync, 2u);
  EXPECT_EQ(plan->slot_member, (std::vector<int>{-1, 1, 2}));
  EXPECT_EQ(plan->reference.slot_states[1], SlotState::kActive);
  EXPECT_EQ(plan->reference.slot_states[0], SlotState::kFailed);
  EXPECT_EQ(plan->members[1].verdict, MemberVerdict::kActive);
  EXPECT_NE(plan->members[1].why.find("forced back: failed 1 update(s) ago"), std::string::npos);
  // Slot 0 missed the writes the array took after it failed: it stays out.
  EXPECT_EQ(plan->members[0].verdict, MemberVerdict::kStale);

  // Forcing where nothing needs it changes nothing.
  auto healthy = DecideAssembly(Headers(MakeArray(RaidLevel::kRaid5, 3)),
                                AssemblyOptions{.force = true});
  ASSERT_TRUE(healthy.ok());
  EXPECT_TRUE(healthy->forced.empty());
}

TEST(Assembly, ForcedTakesMembersThatDroppedOutTogether) {
  auto set = MakeArray(RaidLevel::kRaid5, 3, 5);
  DropOut(&set, {0, 1});  // one update marked both failed
  auto plan = DecideAssembly(Headers(set), AssemblyOptions{.force = true});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->forced.size(), 2u);
  EXPECT_EQ(plan->in_sync, 3u);
  EXPECT_EQ(plan->missing, 0u);
}

TEST(Assembly, ForcedRefusesMembersThatMissedMoreThanFailureMarks) {
  // Slot 1 was being rebuilt when it dropped out: it was never in sync.
  auto rebuilding = FailedInTurn();
  rebuilding[1].slot_states[1] = SlotState::kRebuilding;
  auto r = DecideAssembly(Headers(rebuilding), AssemblyOptions{.force = true});
  ASSERT_TRUE(r.ok()) << r.status().ToString();  // slot 0 (5) is the next most recent
  ASSERT_EQ(r->forced.size(), 1u);
  EXPECT_EQ(r->forced[0].slot, 0u);

  // After slot 1 dropped out, slot 0 was replaced (a fresh id, rebuilding): slot 1 missed
  // that, so it cannot come back; slot 0's old member is replaced; the new one never synced.
  auto replaced = FailedInTurn();
  const Uuid fresh = NewUuid();
  replaced[2].slot_uuids[0] = fresh;
  replaced[2].slot_states[0] = SlotState::kRebuilding;
  replaced[2].events = 8;
  auto p = DecideAssembly(Headers(replaced), AssemblyOptions{.force = true});
  ASSERT_FALSE(p.ok());
  const std::string msg(p.status().message());
  EXPECT_NE(msg.find("cannot assemble, even forced, raid5 array"), std::string::npos) << msg;
  EXPECT_NE(msg.find("forced: 0 failed member(s) can be taken back, 1 needed"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("m1: slot 0 was replaced since it dropped out"), std::string::npos) << msg;
}

}  // namespace
}  // namespace folio::raid
