// RAID volumes: RAID 0 / 1 / 5 / 6 over 2..32 member BlockDevices, exposed as one BlockDevice.
//
// A RaidDevice is created over fresh members (writing a superblock and write-intent bitmap on
// each) or assembled from members that carry superblocks. It is a BlockDevice like any other:
// reads go straight to the members (reconstructed from parity when a member is missing or
// returns an error, which is then rewritten); writes go through a bounded stripe cache with
// parity from ISA-L; a member that fails a write is marked failed and the array continues
// degraded while it can, returning DataLoss for ranges it can no longer serve, never wrong data.
// Resync, check, repair and rebuild run on the caller's thread through Sync() and are resumable
// from the checkpoint in the superblock. The on-disk format is docs/format/raid.md; the stripe
// geometry is src/raid/geometry.h.
//
// Thread safety: every method is thread-safe. Submit / Poll follow the BlockDevice model (a
// thread polls its own requests); they drive the members' Submit / Poll on the calling thread.
// Sync() may run on one thread while others do I/O. Requests that wait for a stripe held by
// another thread's request make progress only while that thread keeps polling.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "folio/block_device.h"
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

// A member device and the name users know it by (its path, or "mem:64M").
struct RaidMember {
  std::string name;
  std::unique_ptr<BlockDevice> device;
};

struct RaidCreateOptions {
  RaidLevel level = RaidLevel::kRaid5;
  RaidLayout layout = RaidLayout::kLeftSymmetric;
  uint64_t chunk_bytes = 64 << 10;
  uint64_t unit_bytes = 0;          // stripe cache unit: 0 = dynamic, else 4K..chunk
  uint64_t member_data_bytes = 0;   // 0 = as much as the smallest member holds
  bool assume_clean = false;        // skip the initial resync (members known to be zeroed)
  // Member bytes per write-intent bit; 0 = automatic: 64M, smaller for small members (about
  // 16 regions), larger when 32768 bits cannot cover a member.
  uint64_t bitmap_region_bytes = 0;
};

// Runtime choices; none of them is stored on disk.
struct RaidOptions {
  // Stripe cache unit for this run (0 = dynamic); unset = the superblock's.
  std::optional<uint64_t> unit_bytes;
  uint64_t stripe_cache_bytes = 32ull << 20;  // buffers of stripe operations in flight
  FolioArena* arena = nullptr;                // stripe buffers from here; null: the array
                                              // makes its own arena of stripe_cache_bytes
  uint32_t queue_depth = 128;                 // user requests in flight per thread
  uint64_t max_request_bytes = 1ull << 20;
  // A write-intent bit is cleared at the first flush this long after its last write.
  uint64_t bitmap_clear_delay_ms = 5000;
};

// How to assemble an array (RaidDevice::Assemble).
struct RaidAssembleOptions {
  // Forced assembly, as mdadm --assemble --force (docs/format/raid.md, "Forced assembly"):
  // when too few members are in sync, take back the most recently failed members whose only
  // difference from the array is that failure (not replaced, in sync when they dropped out,
  // nothing but failure marks missed), as many as the array needs to start. The decision is
  // written at once (the members are active again, events bumped) and every region is marked
  // for resync: writes that failed as the members dropped out may have left stripes
  // inconsistent. Without need (enough members in sync) it changes nothing.
  bool force = false;
};

// A member a forced assembly took back.
struct RaidForcedMember {
  uint32_t slot = 0;
  std::string name;
  uint64_t events = 0;         // of its superblock when it dropped out
  uint64_t events_behind = 0;  // updates it missed (all of them failure marks)
};

enum class RaidSyncAction : uint8_t { kResync, kCheck, kRepair, kRebuild };
std::string_view RaidSyncActionName(RaidSyncAction a);

struct RaidSyncProgress {
  std::string action;           // "resync", "check", "repair", "rebuild", "idle"
  uint64_t position_bytes = 0;  // member data position reached (the checkpoint)
  uint64_t total_bytes = 0;     // member data bytes the action covers
  uint64_t done_bytes = 0;      // member bytes processed by this run
  double speed_bytes_per_s = 0; // member bytes per second, recent (0 = unknown)
  double eta_s = 0;
  // RaidDevice::Inspect: Unix milliseconds of the checkpoint the position and speed come
  // from (0 = unknown); 0 from Describe, whose figures are live.
  uint64_t updated_unix_ms = 0;
  uint64_t mismatches = 0;
};

struct RaidSyncOptions {
  // Sync bytes in flight per member; 0 = md's rule: 32 units (32 x unit / 512 sectors).
  uint64_t window_bytes = 0;
  // md's speed_limit_min / speed_limit_max in KiB/s per member: above min the sync yields to
  // foreground I/O; above max it sleeps. 0 = no limit. The sync's member requests of one
  // refill are submitted as one batch per member, which merges them up to the member's
  // max_request_bytes.
  uint64_t speed_limit_min_kib = 1000;
  uint64_t speed_limit_max_kib = 0;
  double max_seconds = 0;   // stop at a checkpoint after this long (0 = no limit)
  uint64_t max_bytes = 0;   // stop at a checkpoint after visiting this many member bytes
  std::function<void(const RaidSyncProgress&)> progress;  // called a few times a second
  const std::atomic<bool>* cancel = nullptr;               // stop at a checkpoint when set
};

struct RaidSyncReport {
  std::string action;
  bool completed = false;          // false: stopped at `checkpoint_bytes`, resumable
  uint64_t start_bytes = 0;        // member position it started (or resumed) from
  uint64_t checkpoint_bytes = 0;
  uint64_t done_bytes = 0;         // member bytes visited by this run
  uint64_t stripes = 0;            // stripe units visited
  uint64_t mismatches = 0;         // stripe units whose parity (or mirrors) disagreed
  uint64_t repaired = 0;           // stripe units rewritten
  // Stripe units the action could not make consistent (resync with members missing, rebuild
  // through a region not resynced since an unclean stop): they stay in need of a resync.
  uint64_t unsynced = 0;
  std::vector<uint64_t> mismatched_stripes;  // first 100 stripe numbers with a mismatch
  uint64_t window_bytes = 0;
  uint64_t unit_bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0;          // thread CPU of the sync loop
  double parity_seconds = 0;       // of which computing parity
};

enum class MemberHealth : uint8_t { kInSync, kRebuilding, kFailed, kMissing };
std::string_view MemberHealthName(MemberHealth h);

struct RaidMemberStatus {
  uint32_t slot = 0;
  std::string name;  // empty when missing
  std::string member_uuid;
  MemberHealth health = MemberHealth::kMissing;
};

struct RaidStatus {
  std::string array_uuid;
  RaidLevel level = RaidLevel::kRaid5;
  RaidLayout layout = RaidLayout::kLeftSymmetric;
  uint32_t member_count = 0;
  uint64_t chunk_bytes = 0;
  uint64_t unit_bytes = 0;        // in use (0 = dynamic)
  uint64_t array_bytes = 0;
  uint64_t member_data_bytes = 0;
  uint64_t data_offset_bytes = 0;
  uint64_t events = 0;
  bool clean = false;
  std::string state;              // "clean", "active", "degraded", "failed" (beyond tolerance)
  uint32_t failed = 0;            // slots failed or missing
  uint64_t dirty_regions = 0;     // write-intent bits set
  uint64_t resync_regions = 0;    // regions still waiting for a resync
  uint64_t bitmap_region_bytes = 0;
  RaidSyncProgress sync;          // the action in progress or pending (from the checkpoint)
  uint64_t rebuild_checkpoint = 0;
  std::vector<RaidMemberStatus> members;
  std::vector<RaidForcedMember> forced;  // members this assembly took back by force
};

struct RaidMemberStats {
  uint32_t slot = 0;
  std::string name;
  DeviceStatsSnapshot io;
};

struct RaidStats {
  std::vector<RaidMemberStats> members;
  uint64_t full_stripe_writes = 0;     // stripe units written without reading
  uint64_t rmw_writes = 0;             // read-modify-write
  uint64_t rcw_writes = 0;             // reconstruct-write
  uint64_t degraded_writes = 0;        // with a member missing
  uint64_t degraded_reads = 0;         // pieces reconstructed from parity
  uint64_t read_errors_corrected = 0;  // member read errors rewritten from parity / mirrors
  uint64_t stripe_cache_waits = 0;     // operations that waited for a stripe or buffer
  bool stripe_cache_in_arena = false;  // stripe buffers are folios of a FolioArena
  uint64_t stripe_buffers_from_heap = 0;  // buffers the arena could not serve (heap instead)
  uint64_t bitmap_writes = 0;          // write-intent bitmap updates
  uint64_t superblock_writes = 0;
  uint64_t parity_ns = 0;              // computing parity / reconstruction
  uint64_t cpu_ns = 0;                 // thread CPU in Submit / Poll / Sync, parity included
};

// What a member's superblock says it belongs to.
struct RaidMemberLabel {
  std::string array_uuid;
  RaidLevel level = RaidLevel::kRaid5;
  uint32_t slot = 0;
  uint32_t member_count = 0;
  uint64_t events = 0;
};

// Reads a member's superblock; writes nothing. Errors: NotFound when the device carries no
// valid Folio RAID superblock, IOError when it cannot be read.
Result<RaidMemberLabel> ReadRaidMemberLabel(std::string_view name, BlockDevice* device);

// What RaidDevice::Create would refuse in its options for member_count members, without
// touching a device: level and member count, chunk, unit, bitmap region, and (when
// smallest_member_bytes is non-zero) whether the smallest member, named smallest_member, is
// large enough. Errors: InvalidArgument naming the option or member.
Status ValidateRaidCreate(const RaidCreateOptions& create, uint32_t member_count,
                          uint64_t smallest_member_bytes, std::string_view smallest_member);

class RaidDevice : public BlockDevice {
 public:
  // Writes superblocks and bitmaps to fresh members. Unless assume_clean, every bitmap region
  // is marked for the initial resync (run Sync(kResync)). Errors: InvalidArgument naming the
  // bad option or member (too small, wrong count for the level).
  static Result<std::unique_ptr<RaidDevice>> Create(std::vector<RaidMember> members,
                                                    const RaidCreateOptions& create,
                                                    const RaidOptions& options);
  // Reads every member's superblock and assembles the array (raid/assembly.h). Members may be
  // given in any order; stale and unreadable ones are kept out (see Describe()). Assembling
  // writes nothing: slots without a usable member run failed and are recorded failed in the
  // superblocks (events bumped) by the first write, sync or member change, so a member that
  // was away cannot rejoin unnoticed once the array changed without it.
  static Result<std::unique_ptr<RaidDevice>> Assemble(std::vector<RaidMember> members,
                                                      const RaidOptions& options);
  // The same, forced when assemble.force (RaidAssembleOptions): Describe().forced lists the
  // members taken back. Errors: as above; a forced assembly that cannot start names why each
  // failed member could not be taken back.
  static Result<std::unique_ptr<RaidDevice>> Assemble(std::vector<RaidMember> members,
                                                      const RaidOptions& options,
                                                      const RaidAssembleOptions& assemble);

  // The status of the array that `members` form, from their superblocks and bitmaps alone:
  // reads only, writes nothing, and needs no exclusive use of the members, so it may look at
  // an array another process runs (its sync position and speed are those of the last
  // checkpoint that process wrote). Errors: as Assemble's.
  static Result<RaidStatus> Inspect(std::vector<RaidMember> members);

  virtual RaidStatus Describe() const = 0;
  virtual RaidStats raid_stats() const = 0;
  // The slot of the member named `name` (as given at Create / Assemble), or -1.
  virtual int SlotOf(std::string_view name) const = 0;

  // Runs resync (regions the bitmap marks), check, repair or rebuild (onto rebuilding slots)
  // on the calling thread until done, stopped or cancelled; resumes from the superblock's
  // checkpoint of the same action.
  // Context: blocks; other threads' I/O proceeds and is serialised per stripe.
  virtual Result<RaidSyncReport> Sync(RaidSyncAction action, const RaidSyncOptions& options) = 0;
  // The action the array's state asks for next: a resync of regions an unclean stop left
  // (whatever action was stored), then a rebuild onto rebuilding members, then a stored
  // repair or check resumed; nullopt when none. The export's background runner follows it.
  virtual std::optional<RaidSyncAction> PendingSync() const = 0;

  // Marks a member failed (as if it failed a write). Errors: InvalidArgument for an unknown or
  // already failed slot, or when the array would lose more members than its level tolerates.
  virtual Status FailMember(uint32_t slot) = 0;
  // Puts a fresh member in a failed slot; it is rebuilt by Sync(kRebuild). Checks the member
  // with CheckReplacement first.
  virtual Status ReplaceMember(uint32_t slot, RaidMember fresh) = 0;
  // What ReplaceMember would refuse about `fresh` for `slot` (level without redundancy, slot out
  // of range, block size, too small), whatever the slot's health, and without touching the
  // array or the member: call it before failing a slot that is to be replaced.
  virtual Status CheckReplacement(uint32_t slot, const RaidMember& fresh) const = 0;

  // Healing for a checksumming layer above (a dev: block store): reads array bytes
  // [offset, offset + length) as if member `slot` were missing, rebuilding the pieces it holds
  // from the others (P for RAID 5 / 6, another mirror for RAID 1); writes nothing. When the
  // bytes a normal read returned fail a checksum and this variant passes, `slot` returned
  // wrong bytes. REQUIRES: offset and length 4096-aligned. Errors: InvalidArgument (RAID 0,
  // bad slot or range), DataLoss when another member the rebuild needs is unreadable.
  // Context: synchronous member I/O on the calling thread; holds the stripes' column locks.
  virtual Status ReadAsIfMissing(uint32_t slot, uint64_t offset, uint64_t length,
                                 char* buf) = 0;
  // Writes `data`, the known-good array bytes of [offset, offset + length), to the pieces
  // member `slot` holds in that range (every piece on RAID 1), then flushes it: the member
  // agrees with the others and parity again. Same requirements and context as above.
  virtual Status RepairMember(uint32_t slot, uint64_t offset, uint64_t length,
                              const char* data) = 0;

  // Waits for this thread's I/O, flushes, clears the bitmap and marks the array clean.
  // Further I/O fails. Called by the destructor when not called before.
  virtual Status Stop() = 0;
};

}  // namespace folio
