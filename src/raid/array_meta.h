// ArrayMeta: the members of a running array and the metadata they share: the reference
// superblock (event counter, slot table, checkpoints) and the write-intent bitmap's on-disk
// image. Every superblock or bitmap write goes through here.
//
// Fast-path queries (device, health, readability) read atomics and take no lock. Updates are
// serialised by one mutex and write synchronously, on the calling thread, to every member that
// is not failed, then flush them, so an update is durable when it returns. A member that fails
// a metadata write is marked failed in the same update.
//
// Invariants:
//   1. health(slot) mirrors sb_.slot_states (kFailed for failed slots and for slots whose
//      member is absent); it only moves away from kFailed through Replace().
//   2. Readable(slot, end) implies the member holds valid data below `end`: an in-sync slot
//      everywhere, a rebuilding slot below its own rebuild position.
//   3. generation(slot) changes whenever the slot's member or health changes (fail, replace,
//      rebuilt to the end): a sync that saw one generation may move that slot's rebuild
//      position only while it is unchanged (SetRebuildPositions checks it).
//   4. sb_.rebuild_checkpoint is the lowest rebuild position of the rebuilding slots (0 when
//      none), the array-wide position older superblocks had.
//
// Thread safety: all methods are thread-safe.
// Context: Update / MarkFailed / WriteBitmap / Replace block on member I/O.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "folio/raid.h"
#include "raid/assembly.h"
#include "raid/superblock.h"

namespace folio::raid {

enum class SlotHealth : uint8_t { kInSync, kRebuilding, kFailed };

struct SlotInit {
  std::string name;                      // empty when the slot has no member
  std::unique_ptr<BlockDevice> device;   // null when the slot has no member
};

// The slot table of an assembly plan: each slot gets its member's name and device (moved out
// of `members`); a slot whose member is stale keeps that member's name (for status) and no
// device.
std::vector<SlotInit> SlotsFromPlan(const AssemblyPlan& plan, std::vector<RaidMember>& members);

class ArrayMeta {
 public:
  // REQUIRES: slots.size() == sb.member_count.
  ArrayMeta(const Superblock& sb, std::vector<SlotInit> slots);

  uint32_t members() const { return member_count_; }
  BlockDevice* device(uint32_t slot) const { return slots_[slot].device.get(); }
  const std::string& name(uint32_t slot) const { return slots_[slot].name; }
  SlotHealth health(uint32_t slot) const {
    return static_cast<SlotHealth>(slots_[slot].health.load(std::memory_order_acquire));
  }
  // The member holds valid data in member positions below member_end.
  bool Readable(uint32_t slot, uint64_t member_end) const;
  // The member takes writes (in sync or being rebuilt).
  bool Writable(uint32_t slot) const { return health(slot) != SlotHealth::kFailed; }
  uint32_t failed_count() const { return failed_.load(std::memory_order_acquire); }
  // The lowest rebuild position of the rebuilding slots (0 when none).
  uint64_t rebuild_checkpoint() const;
  // A rebuilding slot's rebuild position (0 for other slots).
  uint64_t rebuild_position(uint32_t slot) const {
    return slots_[slot].rebuild_pos.load(std::memory_order_acquire);
  }
  uint64_t generation(uint32_t slot) const {
    return slots_[slot].generation.load(std::memory_order_acquire);
  }
  uint64_t data_offset_bytes() const { return data_offset_; }
  // A copy of the reference superblock.
  Superblock superblock() const;

  // Applies fn to the reference superblock, bumps the event counter and writes it to every
  // writable member, then flushes them.
  Status Update(const std::function<void(Superblock*)>& fn);
  // Marks a slot failed and records it (no-op when already failed). `why` is for the log.
  Status MarkFailed(uint32_t slot);
  // Puts a fresh member (already holding nothing of value) into a failed slot as kRebuilding
  // with rebuild position 0 (or, when in_sync, as kInSync); other slots' rebuild positions
  // are untouched. The slot's previous device is moved to *old (callers keep it alive while
  // requests to it may be in flight).
  Status Replace(uint32_t slot, SlotInit fresh, bool in_sync, std::unique_ptr<BlockDevice>* old);
  // A new rebuild position for a slot, valid only while the slot keeps `generation`.
  struct RebuildMove {
    uint32_t slot = 0;
    uint64_t generation = 0;
    uint64_t position = 0;
  };
  // Moves the rebuild positions of the slots in `moves` that are still rebuilding with the
  // same generation (never backwards); a slot reaching the end of the data area becomes in
  // sync. `also`, when set, changes other fields in the same update. Returns the slots made
  // in sync through *done (may be null).
  Status SetRebuildPositions(std::span<const RebuildMove> moves,
                             const std::function<void(Superblock*)>& also = nullptr,
                             uint32_t* done = nullptr);

  // Writes bitmap_bytes of `image` to every writable member; flushes them when `flush`.
  Status WriteBitmap(const char* image, bool flush);
  // Stops marking members failed on write errors (used while stopping after a crash).
  void SetQuiet(bool quiet) { quiet_.store(quiet, std::memory_order_release); }

  uint64_t superblock_writes() const { return sb_writes_.load(std::memory_order_relaxed); }
  uint64_t bitmap_writes() const { return bitmap_writes_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::string name;
    std::unique_ptr<BlockDevice> device;
    std::atomic<uint8_t> health{static_cast<uint8_t>(SlotHealth::kFailed)};
    std::atomic<uint64_t> rebuild_pos{0};
    std::atomic<uint64_t> generation{1};
  };
  // Writes sb_ to every writable member and flushes; marks failing members failed and
  // retries. REQUIRES: mu_ held.
  Status WriteAllLocked();
  void SetHealthLocked(uint32_t slot, SlotHealth h);
  void SetRebuildLocked(uint32_t slot, uint64_t pos);

  const uint32_t member_count_;
  const uint64_t data_offset_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint32_t> failed_{0};
  std::atomic<bool> quiet_{false};
  std::atomic<uint64_t> sb_writes_{0};
  std::atomic<uint64_t> bitmap_writes_{0};
  mutable std::mutex mu_;
  Superblock sb_;  // GUARDED_BY(mu_)
};

// Reads and decodes the superblock at offset 0 of a member.
MemberHeader ReadMemberHeader(const std::string& name, BlockDevice* device);

}  // namespace folio::raid
