#include "raid/array_meta.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/aligned_buffer.h"
#include "base/check.h"

namespace folio::raid {
namespace {

SlotHealth HealthOf(SlotState s) {
  switch (s) {
    case SlotState::kActive: return SlotHealth::kInSync;
    case SlotState::kRebuilding: return SlotHealth::kRebuilding;
    default: return SlotHealth::kFailed;
  }
}

}  // namespace

std::vector<SlotInit> SlotsFromPlan(const AssemblyPlan& plan, std::vector<RaidMember>& members) {
  std::vector<SlotInit> slots(plan.reference.member_count);
  for (uint32_t s = 0; s < slots.size(); ++s) {
    const int m = plan.slot_member[s];
    if (m < 0) continue;
    slots[s].name = members[m].name;
    slots[s].device = std::move(members[m].device);
  }
  for (const MemberDecision& d : plan.members) {
    if (d.slot >= 0 && slots[d.slot].name.empty()) slots[d.slot].name = d.name;
  }
  return slots;
}

ArrayMeta::ArrayMeta(const Superblock& sb, std::vector<SlotInit> slots)
    : member_count_(sb.member_count),
      data_offset_(sb.data_offset_bytes),
      slots_(new Slot[sb.member_count]),
      sb_(sb) {
  FOLIO_CHECK(slots.size() == sb.member_count);
  uint32_t failed = 0;
  for (uint32_t s = 0; s < member_count_; ++s) {
    slots_[s].name = std::move(slots[s].name);
    slots_[s].device = std::move(slots[s].device);
    SlotHealth h = HealthOf(sb.slot_states[s]);
    if (slots_[s].device == nullptr) h = SlotHealth::kFailed;
    slots_[s].health.store(static_cast<uint8_t>(h), std::memory_order_relaxed);
    if (h == SlotHealth::kFailed) ++failed;
    const bool rebuilding = sb.slot_states[s] == SlotState::kRebuilding;
    slots_[s].rebuild_pos.store(rebuilding ? sb.slot_rebuild[s] : 0, std::memory_order_relaxed);
    if (!rebuilding) sb_.slot_rebuild[s] = 0;
  }
  failed_.store(failed, std::memory_order_relaxed);
  sb_.rebuild_checkpoint = rebuild_checkpoint();
}

bool ArrayMeta::Readable(uint32_t slot, uint64_t member_end) const {
  switch (health(slot)) {
    case SlotHealth::kInSync: return true;
    case SlotHealth::kRebuilding: return member_end <= rebuild_position(slot);
    case SlotHealth::kFailed: return false;
  }
  return false;
}

uint64_t ArrayMeta::rebuild_checkpoint() const {
  uint64_t low = ~uint64_t{0};
  for (uint32_t s = 0; s < member_count_; ++s) {
    if (health(s) == SlotHealth::kRebuilding) low = std::min(low, rebuild_position(s));
  }
  return low == ~uint64_t{0} ? 0 : low;
}

Superblock ArrayMeta::superblock() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sb_;
}

void ArrayMeta::SetHealthLocked(uint32_t slot, SlotHealth h) {
  const SlotHealth old = health(slot);
  if (old == h) return;
  if (old == SlotHealth::kFailed) failed_.fetch_sub(1, std::memory_order_acq_rel);
  if (h == SlotHealth::kFailed) failed_.fetch_add(1, std::memory_order_acq_rel);
  slots_[slot].generation.fetch_add(1, std::memory_order_acq_rel);
  slots_[slot].health.store(static_cast<uint8_t>(h), std::memory_order_release);
  if (h != SlotHealth::kRebuilding) SetRebuildLocked(slot, 0);
}

void ArrayMeta::SetRebuildLocked(uint32_t slot, uint64_t pos) {
  slots_[slot].rebuild_pos.store(pos, std::memory_order_release);
  sb_.slot_rebuild[slot] = pos;
  uint64_t low = ~uint64_t{0};
  for (uint32_t s = 0; s < member_count_; ++s) {
    if (sb_.slot_states[s] == SlotState::kRebuilding && health(s) == SlotHealth::kRebuilding) {
      low = std::min(low, sb_.slot_rebuild[s]);
    }
  }
  sb_.rebuild_checkpoint = low == ~uint64_t{0} ? 0 : low;
}

Status ArrayMeta::WriteAllLocked() {
  AlignedBuffer block(kSuperblockBytes);
  Status first_error;
  for (uint32_t attempt = 0; attempt <= member_count_; ++attempt) {
    ++sb_.events;
    sb_.update_time_s = static_cast<uint64_t>(std::time(nullptr));
    bool any_failed = false;
    uint32_t written = 0;
    for (uint32_t s = 0; s < member_count_; ++s) {
      if (!Writable(s)) continue;
      Superblock copy = sb_;
      copy.role = s;
      copy.member_uuid = sb_.slot_uuids[s];
      const SuperblockBlock encoded = EncodeSuperblock(copy);
      std::memcpy(block.data(), encoded.data(), kSuperblockBytes);
      Status st = slots_[s].device->Write(0, block.data(), kSuperblockBytes);
      if (st.ok()) st = slots_[s].device->Flush();
      sb_writes_.fetch_add(1, std::memory_order_relaxed);
      if (st.ok()) {
        ++written;
        continue;
      }
      if (first_error.ok()) first_error = st.WithContext("member " + slots_[s].name);
      if (quiet_.load(std::memory_order_acquire)) continue;
      sb_.slot_states[s] = SlotState::kFailed;
      SetHealthLocked(s, SlotHealth::kFailed);
      any_failed = true;
    }
    if (written == 0) {
      return first_error.ok() ? Status::IOError("no member left to record the array state")
                              : first_error;
    }
    if (!any_failed) return quiet_.load(std::memory_order_acquire) ? first_error : Status::OK();
  }
  return first_error;
}

Status ArrayMeta::Update(const std::function<void(Superblock*)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  fn(&sb_);
  return WriteAllLocked();
}

Status ArrayMeta::MarkFailed(uint32_t slot) {
  FOLIO_CHECK(slot < member_count_);
  if (quiet_.load(std::memory_order_acquire)) return Status::OK();
  std::lock_guard<std::mutex> lock(mu_);
  if (health(slot) == SlotHealth::kFailed && sb_.slot_states[slot] == SlotState::kFailed) {
    return Status::OK();
  }
  sb_.slot_states[slot] = SlotState::kFailed;
  SetHealthLocked(slot, SlotHealth::kFailed);
  return WriteAllLocked();
}

Status ArrayMeta::Replace(uint32_t slot, SlotInit fresh, bool in_sync,
                          std::unique_ptr<BlockDevice>* old) {
  FOLIO_CHECK(slot < member_count_);
  std::lock_guard<std::mutex> lock(mu_);
  if (health(slot) != SlotHealth::kFailed) {
    return Status::InvalidArgument("slot " + std::to_string(slot) + " (" + slots_[slot].name +
                                   ") is not failed: fail it first");
  }
  *old = std::move(slots_[slot].device);
  slots_[slot].device = std::move(fresh.device);
  slots_[slot].name = std::move(fresh.name);
  sb_.slot_uuids[slot] = NewUuid();
  sb_.slot_states[slot] = in_sync ? SlotState::kActive : SlotState::kRebuilding;
  SetHealthLocked(slot, in_sync ? SlotHealth::kInSync : SlotHealth::kRebuilding);
  SetRebuildLocked(slot, 0);
  return WriteAllLocked();
}

Status ArrayMeta::SetRebuildPositions(std::span<const RebuildMove> moves,
                                      const std::function<void(Superblock*)>& also,
                                      uint32_t* done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (also) also(&sb_);
  uint32_t made = 0;
  for (const RebuildMove& m : moves) {
    FOLIO_CHECK(m.slot < member_count_);
    if (health(m.slot) != SlotHealth::kRebuilding || generation(m.slot) != m.generation) {
      continue;  // failed or replaced since the sync saw it: its position is not ours
    }
    FOLIO_CHECK_MSG(m.position <= sb_.member_data_bytes, "rebuild position past the data area");
    if (m.position <= rebuild_position(m.slot)) continue;
    if (m.position >= sb_.member_data_bytes) {
      sb_.slot_states[m.slot] = SlotState::kActive;
      SetHealthLocked(m.slot, SlotHealth::kInSync);
      made |= 1u << m.slot;
    } else {
      SetRebuildLocked(m.slot, m.position);
    }
  }
  if (done != nullptr) *done = made;
  return WriteAllLocked();
}

Status ArrayMeta::WriteBitmap(const char* image, bool flush) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t bytes = sb_.bitmap_bytes;
  AlignedBuffer block(bytes);
  std::memcpy(block.data(), image, bytes);
  bitmap_writes_.fetch_add(1, std::memory_order_relaxed);
  bool any_failed = false;
  uint32_t written = 0;
  Status first_error;
  for (uint32_t s = 0; s < member_count_; ++s) {
    if (!Writable(s)) continue;
    Status st = slots_[s].device->Write(sb_.bitmap_offset_bytes, block.data(), bytes);
    if (st.ok() && flush) st = slots_[s].device->Flush();
    if (st.ok()) {
      ++written;
      continue;
    }
    if (first_error.ok()) first_error = st.WithContext("member " + slots_[s].name + " bitmap");
    if (quiet_.load(std::memory_order_acquire)) continue;
    sb_.slot_states[s] = SlotState::kFailed;
    SetHealthLocked(s, SlotHealth::kFailed);
    any_failed = true;
  }
  if (written == 0) {
    return first_error.ok() ? Status::IOError("no member for the bitmap") : first_error;
  }
  if (any_failed) return WriteAllLocked();
  return quiet_.load(std::memory_order_acquire) ? first_error : Status::OK();
}

MemberHeader ReadMemberHeader(const std::string& name, BlockDevice* device) {
  MemberHeader h{name, Status::IOError("unread")};
  if (device->size_bytes() < kSuperblockBytes) {
    h.superblock = Status::Corruption("member " + name + ": too small for a superblock (" +
                                      std::to_string(device->size_bytes()) + " bytes)");
    return h;
  }
  AlignedBuffer block(kSuperblockBytes);
  Status st = device->Read(0, block.data(), kSuperblockBytes);
  if (!st.ok()) {
    h.superblock = st.WithContext("member " + name + ": reading the superblock");
    return h;
  }
  h.superblock = DecodeSuperblock({block.data(), kSuperblockBytes}, name, device->size_bytes());
  return h;
}

}  // namespace folio::raid
