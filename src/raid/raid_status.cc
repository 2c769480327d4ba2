// Status, statistics, failing and replacing members, stopping.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "base/units.h"
#include "raid/raid_device_impl.h"

namespace folio::raid {

namespace {

// The status of an array from its agreed superblock, its members' health and its bitmap;
// the sync figures are those of the superblock's last checkpoint.
RaidStatus DescribeArray(const Superblock& sb, const ArrayMeta& meta,
                         const WriteIntentBitmap* bitmap, uint64_t unit_bytes) {
  RaidStatus st;
  st.array_uuid = UuidToString(sb.array_uuid);
  st.level = sb.level;
  st.layout = sb.layout;
  st.member_count = sb.member_count;
  st.chunk_bytes = sb.chunk_bytes;
  st.unit_bytes = unit_bytes;
  st.array_bytes = sb.array_bytes;
  st.member_data_bytes = sb.member_data_bytes;
  st.data_offset_bytes = sb.data_offset_bytes;
  st.events = sb.events;
  st.clean = sb.clean();
  st.failed = meta.failed_count();
  bool rebuilding = false;
  for (uint32_t s = 0; s < sb.member_count; ++s) {
    RaidMemberStatus m;
    m.slot = s;
    m.name = meta.name(s);
    m.member_uuid = UuidToString(sb.slot_uuids[s]);
    switch (meta.health(s)) {
      case SlotHealth::kInSync: m.health = MemberHealth::kInSync; break;
      case SlotHealth::kRebuilding:
        m.health = MemberHealth::kRebuilding;
        rebuilding = true;
        break;
      case SlotHealth::kFailed:
        // A slot whose (stale) member was named still shows that member as failed.
        m.health = m.name.empty() ? MemberHealth::kMissing : MemberHealth::kFailed;
        break;
    }
    st.members.push_back(m);
  }
  if (st.failed > RaidFailureTolerance(sb.level, sb.member_count)) {
    st.state = "failed";
  } else if (st.failed > 0 || rebuilding) {
    st.state = "degraded";
  } else {
    st.state = sb.clean() ? "clean" : "active";
  }
  if (bitmap != nullptr) {
    st.dirty_regions = bitmap->dirty_count();
    st.resync_regions = bitmap->resync_count();
    st.bitmap_region_bytes = bitmap->region_bytes();
  }
  st.rebuild_checkpoint = meta.rebuild_checkpoint();
  st.sync.total_bytes = sb.member_data_bytes;
  // What runs next (NextPendingSync's order, a rebuild shown first as before): a resync of
  // regions an unclean stop left comes before a stored check or repair.
  if (rebuilding) {
    st.sync.action = "rebuild";
    st.sync.position_bytes = meta.rebuild_checkpoint();
  } else if (sb.sync_action == SyncAction::kResync ||
             (sb.sync_action != SyncAction::kNone && st.resync_regions == 0)) {
    st.sync.action = std::string(SyncActionName(sb.sync_action));
    st.sync.position_bytes = sb.sync_checkpoint;
  } else if (st.resync_regions > 0) {
    st.sync.action = "resync";
    st.sync.total_bytes = st.resync_regions * st.bitmap_region_bytes;
  } else {
    st.sync.action = "idle";
  }
  if (st.sync.action != "idle" && sb.sync_speed_bytes_per_s != 0) {
    st.sync.speed_bytes_per_s = static_cast<double>(sb.sync_speed_bytes_per_s);
    st.sync.updated_unix_ms = sb.sync_speed_time_ms;
    const uint64_t left = st.sync.total_bytes - std::min(st.sync.total_bytes,
                                                         st.sync.position_bytes);
    st.sync.eta_s = static_cast<double>(left) / st.sync.speed_bytes_per_s;
  }
  return st;
}

}  // namespace

RaidStatus RaidDeviceImpl::Describe() const {
  const Superblock sb = meta_->superblock();
  RaidStatus st = DescribeArray(sb, *meta_, bitmap_.get(), unit_bytes_);
  st.forced = forced_;
  if (sync_running_.load()) {
    std::lock_guard<std::mutex> lock(progress_mu_);
    st.sync = progress_;
  } else {
    // Live figures only: a speed in the superblock is of a run that is over.
    st.sync.speed_bytes_per_s = 0;
    st.sync.eta_s = 0;
    st.sync.updated_unix_ms = 0;
  }
  return st;
}

RaidStats RaidDeviceImpl::raid_stats() const {
  RaidStats st;
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    BlockDevice* dev = meta_->device(s);
    if (dev == nullptr) continue;
    st.members.push_back({s, meta_->name(s), dev->stats()});
  }
  st.full_stripe_writes = counters_.full_stripe_writes.load();
  st.rmw_writes = counters_.rmw_writes.load();
  st.rcw_writes = counters_.rcw_writes.load();
  st.degraded_writes = counters_.degraded_writes.load();
  st.degraded_reads = counters_.degraded_reads.load();
  st.read_errors_corrected = counters_.read_errors_corrected.load();
  st.stripe_cache_waits = counters_.stripe_cache_waits.load();
  st.stripe_cache_in_arena = pool_.has_arena();
  st.stripe_buffers_from_heap = pool_.heap_fallbacks();
  st.bitmap_writes = meta_->bitmap_writes();
  st.superblock_writes = meta_->superblock_writes();
  st.parity_ns = counters_.parity_ns.load();
  st.cpu_ns = counters_.cpu_ns.load();
  return st;
}

std::optional<RaidSyncAction> RaidDeviceImpl::PendingSync() const {
  if (bitmap_ == nullptr) return std::nullopt;
  bool rebuilding = false;
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    rebuilding |= meta_->health(s) == SlotHealth::kRebuilding;
  }
  return NextPendingSync(bitmap_->resync_count(), rebuilding, meta_->superblock().sync_action);
}

int RaidDeviceImpl::SlotOf(std::string_view name) const {
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (meta_->name(s) == name) return static_cast<int>(s);
  }
  return -1;
}

Status RaidDeviceImpl::FailMember(uint32_t slot) {
  if (slot >= geometry_.members()) {
    return Status::InvalidArgument("slot " + std::to_string(slot) + ": the array has " +
                                   std::to_string(geometry_.members()) + " members");
  }
  const std::string who = "member " + meta_->name(slot) + " (slot " + std::to_string(slot) + ")";
  if (meta_->health(slot) == SlotHealth::kFailed) {
    return Status::InvalidArgument(who + " is already failed");
  }
  const uint32_t tolerance = RaidFailureTolerance(geometry_.level(), geometry_.members());
  if (meta_->failed_count() + 1 > tolerance) {
    return Status::InvalidArgument("failing " + who + " would leave the " +
                                   std::string(RaidLevelName(geometry_.level())) + " array with " +
                                   std::to_string(meta_->failed_count() + 1) +
                                   " failed members; it survives " + std::to_string(tolerance));
  }
  return meta_->MarkFailed(slot);
}

Status RaidDeviceImpl::CheckReplacement(uint32_t slot, const RaidMember& fresh) const {
  if (geometry_.level() == RaidLevel::kRaid0) {
    return Status::NotSupported(name_ + ": RAID 0 members cannot be rebuilt");
  }
  if (slot >= geometry_.members()) {
    return Status::InvalidArgument("slot " + std::to_string(slot) + ": the array has " +
                                   std::to_string(geometry_.members()) + " members");
  }
  if (fresh.device == nullptr) {
    return Status::InvalidArgument("member " + fresh.name + ": no device");
  }
  const uint32_t lbs = fresh.device->logical_block_bytes();
  if (lbs == 0 || lbs > 4096 || 4096 % lbs != 0) {
    return Status::InvalidArgument("member " + fresh.name + ": logical block size " +
                                   std::to_string(lbs) + " does not divide 4096");
  }
  const uint64_t need = meta_->data_offset_bytes() + geometry_.member_data_bytes();
  if (fresh.device->size_bytes() < need) {
    return Status::InvalidArgument("member " + fresh.name + " is too small (" +
                                   FormatSize(fresh.device->size_bytes()) + "): needs at least " +
                                   FormatSize(need));
  }
  return Status::OK();
}

Status RaidDeviceImpl::ReplaceMember(uint32_t slot, RaidMember fresh) {
  FOLIO_RETURN_IF_ERROR(CheckReplacement(slot, fresh));
  std::unique_ptr<BlockDevice> old;
  Status st = meta_->Replace(slot, {fresh.name, std::move(fresh.device)}, false, &old);
  if (old != nullptr) {
    std::lock_guard<std::mutex> lock(retired_mu_);
    retired_.push_back(std::move(old));
  }
  FOLIO_RETURN_IF_ERROR(st);
  // The new member gets the current bitmap too.
  AlignedBuffer image(bitmap_->image_bytes());
  std::lock_guard<std::mutex> lock(bitmap_persist_mu_);
  const uint64_t v = bitmap_->Snapshot(image.data());
  FOLIO_RETURN_IF_ERROR(meta_->WriteBitmap(image.data(), /*flush=*/true));
  bitmap_->MarkDurable(v);
  return Status::OK();
}

Status RaidDeviceImpl::Stop() {
  if (stopped_.exchange(true)) return Status::OK();
  ThreadCtx* c = Ctx();
  while (c->in_flight > 0) {
    Result<size_t> n = Poll(1);
    if (!n.ok()) break;
  }
  Status st;
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (!meta_->Writable(s)) continue;
    Status f = meta_->device(s)->Flush();
    if (!f.ok() && st.ok()) st = f.WithContext("member " + meta_->name(s));
  }
  if (!st.ok()) {
    // Members are gone (or the machine "crashed"): leave the on-disk state as it is.
    meta_->SetQuiet(true);
    return st;
  }
  if (bitmap_ != nullptr) {
    bitmap_->ClearIdle();
    st = PersistBitmap(0, /*flush=*/true);
  }
  // Clean only when nothing waits for a resync: a stop after read-only use of an unclean
  // array (a copy from it, a check) leaves it as it was, with no superblock written.
  if (st.ok() && active_.load() && (bitmap_ == nullptr || bitmap_->resync_count() == 0)) {
    st = meta_->Update([](Superblock* sb) { sb->flags |= kSuperblockFlagClean; });
  }
  meta_->SetQuiet(true);
  return st;
}

}  // namespace folio::raid

namespace folio {

Result<RaidStatus> RaidDevice::Inspect(std::vector<RaidMember> members) {
  using namespace raid;
  std::vector<MemberHeader> headers;
  for (const RaidMember& m : members) {
    if (m.device == nullptr) return Status::InvalidArgument("member " + m.name + ": no device");
    headers.push_back(ReadMemberHeader(m.name, m.device.get()));
  }
  FOLIO_ASSIGN_OR_RETURN(AssemblyPlan plan, DecideAssembly(headers));
  const Superblock& sb = plan.reference;
  std::vector<SlotInit> slots = SlotsFromPlan(plan, members);
  // Only read: the ArrayMeta is built to derive health as Assemble does, never updated.
  const ArrayMeta meta(sb, std::move(slots));
  std::unique_ptr<WriteIntentBitmap> bitmap;
  if (sb.level != RaidLevel::kRaid0) {
    bitmap = std::make_unique<WriteIntentBitmap>(sb.bitmap_bits(), sb.bitmap_region_bytes,
                                                 sb.bitmap_bytes);
    AlignedBuffer image(sb.bitmap_bytes);
    for (uint32_t s = 0; s < sb.member_count; ++s) {
      if (meta.health(s) == SlotHealth::kFailed) continue;
      if (meta.device(s)->Read(sb.bitmap_offset_bytes, image.data(), sb.bitmap_bytes).ok()) {
        bitmap->LoadImage({image.data(), sb.bitmap_bytes});
      }
    }
  }
  return DescribeArray(sb, meta, bitmap.get(), sb.unit_bytes);
}

}  // namespace folio
