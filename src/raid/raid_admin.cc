// Creating and assembling arrays, status, statistics, failing and replacing members, stopping.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "base/units.h"
#include "raid/raid_device_impl.h"

namespace folio::raid {
namespace {

constexpr uint64_t kDataOffsetBytes = 1 << 20;
constexpr uint64_t kBitmapOffsetBytes = 4096;
constexpr uint64_t kBitmapBytes = 4096;
constexpr uint64_t kDefaultRegionBytes = 64ull << 20;

// A size as the user could have typed it: "64K" when exact, else the byte count ("3000"),
// never a rounded "2.93K".
std::string Size(uint64_t b) {
  const std::string f = FormatSize(b);
  auto back = ParseSize(f, "");
  return back.ok() && *back == b ? f : std::to_string(b);
}

Status ValidateUnit(uint64_t unit, uint64_t chunk) {
  if (unit == 0) return Status::OK();
  if (!IsPowerOfTwo(unit) || unit < kRaidMinUnitBytes) {
    return Status::InvalidArgument("--unit " + Size(unit) +
                                   ": must be a power of two of at least 4K, or dynamic");
  }
  if (unit > chunk) {
    return Status::InvalidArgument("--unit " + Size(unit) + ": larger than the chunk (" +
                                   Size(chunk) + "); must be 4K..chunk or dynamic");
  }
  return Status::OK();
}

// The sizes a create derives from its options and the smallest member.
struct CreatePlan {
  uint64_t data_bytes = 0;    // per member, whole chunks
  uint64_t region_bytes = 0;  // per bitmap bit
};

// Every check of a create that needs no device; sizes only when smallest != 0.
Result<CreatePlan> PlanCreate(const RaidCreateOptions& create, uint32_t n, uint64_t smallest,
                              std::string_view smallest_name) {
  if (n < RaidMinMembers(create.level) || n > kRaidMaxMembers) {
    return Status::InvalidArgument(std::string(RaidLevelName(create.level)) + " with " +
                                   std::to_string(n) + " members: needs " +
                                   std::to_string(RaidMinMembers(create.level)) + " to " +
                                   std::to_string(kRaidMaxMembers) + " members");
  }
  if (!IsPowerOfTwo(create.chunk_bytes) || create.chunk_bytes < kRaidMinChunkBytes ||
      create.chunk_bytes > kRaidMaxChunkBytes) {
    return Status::InvalidArgument("--chunk " + Size(create.chunk_bytes) +
                                   ": must be a power of two between 4K and 4M (e.g. 64K)");
  }
  FOLIO_RETURN_IF_ERROR(ValidateUnit(create.unit_bytes, create.chunk_bytes));
  const std::string region_rule =
      ": must be a power of two, at least the chunk, and at most 32768 regions must cover a "
      "member";
  if (create.bitmap_region_bytes != 0 &&
      (!IsPowerOfTwo(create.bitmap_region_bytes) ||
       create.bitmap_region_bytes < create.chunk_bytes)) {
    return Status::InvalidArgument("--bitmap-region " + Size(create.bitmap_region_bytes) +
                                   region_rule);
  }
  CreatePlan plan;
  if (smallest == 0) return plan;
  const uint64_t need = kDataOffsetBytes + create.chunk_bytes;
  if (smallest < need) {
    return Status::InvalidArgument("member " + std::string(smallest_name) + " is too small (" +
                                   Size(smallest) + "): needs at least " + Size(need) +
                                   " (1M of metadata and one chunk)");
  }
  uint64_t data = smallest - kDataOffsetBytes;
  if (create.member_data_bytes != 0) {
    if (create.member_data_bytes > data) {
      return Status::InvalidArgument("member " + std::string(smallest_name) + " is too small (" +
                                     Size(smallest) + ") for a data area of " +
                                     Size(create.member_data_bytes));
    }
    data = create.member_data_bytes;
  }
  data = data / create.chunk_bytes * create.chunk_bytes;
  uint64_t region = create.bitmap_region_bytes;
  if (region == 0) {
    // Large regions keep bitmap updates rare (md's default bitmap chunk is 64M); small
    // arrays still get about 16 regions. The bitmap block holds 32768 bits.
    region = create.chunk_bytes;
    while (region < kDefaultRegionBytes && region * 16 <= data) region *= 2;
    while ((data + region - 1) / region > kBitmapBytes * 8) region *= 2;
  }
  if ((data + region - 1) / region > kBitmapBytes * 8) {
    return Status::InvalidArgument("--bitmap-region " + Size(region) + region_rule);
  }
  plan.data_bytes = data;
  plan.region_bytes = region;
  return plan;
}

Status ValidateMember(const RaidMember& m) {
  if (m.device == nullptr) return Status::InvalidArgument("member " + m.name + ": no device");
  const uint32_t lbs = m.device->logical_block_bytes();
  if (lbs == 0 || lbs > 4096 || 4096 % lbs != 0) {
    return Status::InvalidArgument("member " + m.name + ": logical block size " +
                                   std::to_string(lbs) + " does not divide 4096");
  }
  return Status::OK();
}

// Stripe cache large enough for two of the largest stripe heads (a sync head of every
// member plus two scratch buffers), whatever the option says.
RaidOptions WithMinimumCache(RaidOptions o, const StripeGeometry& g, uint64_t unit) {
  const uint64_t head = unit != 0 ? unit : std::min<uint64_t>(g.chunk_bytes(), 2u << 20);
  o.stripe_cache_bytes = std::max(o.stripe_cache_bytes, 2 * (g.members() + 2) * head);
  return o;
}

Result<uint64_t> RuntimeUnit(const RaidOptions& options, uint64_t stored, uint64_t chunk) {
  const uint64_t unit = options.unit_bytes.has_value() ? *options.unit_bytes : stored;
  FOLIO_RETURN_IF_ERROR(ValidateUnit(unit, chunk));
  return unit;
}

// A forced assembly's decision reaches the disk before any I/O: every present member's
// superblock gets the slot table with the forced members active (not clean: the array is in
// use from here), and every bitmap region is marked for resync (writes that failed while the
// members dropped out may have left any stripe inconsistent, and the bitmap of a failing array
// may have cleared bits of writes it acknowledged without them).
Status PersistForced(ArrayMeta* meta, WriteIntentBitmap* bitmap) {
  FOLIO_RETURN_IF_ERROR(meta->Update([](Superblock* s) { s->flags &= ~kSuperblockFlagClean; })
                            .WithContext("recording the forced assembly"));
  if (bitmap == nullptr) return Status::OK();
  bitmap->MarkAllForResync();
  AlignedBuffer image(bitmap->image_bytes());
  const uint64_t v = bitmap->Snapshot(image.data());
  FOLIO_RETURN_IF_ERROR(meta->WriteBitmap(image.data(), /*flush=*/true)
                            .WithContext("recording the forced assembly's resync"));
  bitmap->MarkDurable(v);
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<RaidDevice>> CreateImpl(std::vector<RaidMember> members,
                                               const RaidCreateOptions& create,
                                               const RaidOptions& options) {
  const uint32_t n = static_cast<uint32_t>(members.size());
  FOLIO_RETURN_IF_ERROR(PlanCreate(create, n, 0, "").status());
  std::set<std::string> names;
  uint64_t smallest = ~uint64_t{0};
  std::string smallest_name;
  for (const RaidMember& m : members) {
    FOLIO_RETURN_IF_ERROR(ValidateMember(m));
    if (!names.insert(m.name).second) {
      return Status::InvalidArgument("member " + m.name + " is listed twice");
    }
    if (m.device->size_bytes() < smallest) {
      smallest = m.device->size_bytes();
      smallest_name = m.name;
    }
  }
  // A zero-byte member is "too small", not "size unknown".
  FOLIO_ASSIGN_OR_RETURN(const CreatePlan plan,
                         PlanCreate(create, n, std::max<uint64_t>(smallest, 1), smallest_name));
  const uint64_t data = plan.data_bytes;
  const uint64_t region = plan.region_bytes;
  FOLIO_ASSIGN_OR_RETURN(
      StripeGeometry geometry,
      StripeGeometry::Create({create.level, create.layout, n, create.chunk_bytes, data}));
  FOLIO_ASSIGN_OR_RETURN(uint64_t unit, RuntimeUnit(options, create.unit_bytes,
                                                    create.chunk_bytes));

  Superblock sb;
  sb.array_uuid = NewUuid();
  sb.create_time_s = static_cast<uint64_t>(std::time(nullptr));
  sb.level = create.level;
  sb.layout = (create.level == RaidLevel::kRaid5 || create.level == RaidLevel::kRaid6)
                  ? create.layout
                  : RaidLayout::kLeftSymmetric;
  sb.member_count = n;
  sb.chunk_bytes = create.chunk_bytes;
  sb.unit_bytes = create.unit_bytes;
  sb.flags = kSuperblockFlagClean;
  sb.data_offset_bytes = kDataOffsetBytes;
  sb.member_data_bytes = geometry.member_data_bytes();
  sb.array_bytes = geometry.array_bytes();
  sb.bitmap_offset_bytes = kBitmapOffsetBytes;
  sb.bitmap_bytes = kBitmapBytes;
  sb.bitmap_region_bytes = region;
  std::vector<SlotInit> slots;
  for (uint32_t s = 0; s < n; ++s) {
    sb.slot_states[s] = SlotState::kActive;
    sb.slot_uuids[s] = NewUuid();
    slots.push_back({members[s].name, std::move(members[s].device)});
  }
  auto meta = std::make_unique<ArrayMeta>(sb, std::move(slots));
  FOLIO_RETURN_IF_ERROR(meta->Update([](Superblock*) {}));
  auto bitmap = std::make_unique<WriteIntentBitmap>((data + region - 1) / region, region,
                                                    kBitmapBytes);
  if (!create.assume_clean && create.level != RaidLevel::kRaid0) bitmap->MarkAllForResync();
  AlignedBuffer image(kBitmapBytes);
  bitmap->MarkDurable(bitmap->Snapshot(image.data()));
  FOLIO_RETURN_IF_ERROR(meta->WriteBitmap(image.data(), /*flush=*/true));
  if (create.level == RaidLevel::kRaid0) bitmap.reset();
  const RaidOptions o = WithMinimumCache(options, geometry, unit);
  return std::unique_ptr<RaidDevice>(
      new RaidDeviceImpl(geometry, std::move(meta), std::move(bitmap), unit, o));
}

Result<std::unique_ptr<RaidDevice>> AssembleImpl(std::vector<RaidMember> members,
                                                 const RaidOptions& options,
                                                 const RaidAssembleOptions& assemble) {
  std::vector<MemberHeader> headers;
  for (const RaidMember& m : members) {
    FOLIO_RETURN_IF_ERROR(ValidateMember(m));
    headers.push_back(ReadMemberHeader(m.name, m.device.get()));
  }
  FOLIO_ASSIGN_OR_RETURN(AssemblyPlan plan,
                         DecideAssembly(headers, AssemblyOptions{.force = assemble.force}));
  const Superblock& sb = plan.reference;
  FOLIO_ASSIGN_OR_RETURN(StripeGeometry geometry,
                         StripeGeometry::Create({sb.level, sb.layout, sb.member_count,
                                                 sb.chunk_bytes, sb.member_data_bytes}));
  FOLIO_ASSIGN_OR_RETURN(uint64_t unit, RuntimeUnit(options, sb.unit_bytes, sb.chunk_bytes));
  std::vector<SlotInit> slots = SlotsFromPlan(plan, members);
  // The running array's slot table has the slots without a member failed (ArrayMeta's
  // invariant 1); it reaches the disk with the first update (below).
  Superblock running = sb;
  for (uint32_t s = 0; s < sb.member_count; ++s) {
    if (plan.slot_member[s] < 0) running.slot_states[s] = SlotState::kFailed;
  }
  auto meta = std::make_unique<ArrayMeta>(running, std::move(slots));
  std::unique_ptr<WriteIntentBitmap> bitmap;
  if (sb.level != RaidLevel::kRaid0) {
    bitmap = std::make_unique<WriteIntentBitmap>(sb.bitmap_bits(), sb.bitmap_region_bytes,
                                                 sb.bitmap_bytes);
    AlignedBuffer image(sb.bitmap_bytes);
    for (uint32_t s = 0; s < sb.member_count; ++s) {
      if (meta->health(s) == SlotHealth::kFailed) continue;
      if (meta->device(s)->Read(sb.bitmap_offset_bytes, image.data(), sb.bitmap_bytes).ok()) {
        bitmap->LoadImage({image.data(), sb.bitmap_bytes});
      }
    }
  }
  // Slots that assembled without a member run failed (ArrayMeta), and lagging superblocks
  // wait for a refresh. Neither is written here: assembling for a look (status, a read-only
  // copy) must leave the members as they were. The first superblock update records both
  // (every update writes the whole slot table to every writable member), and the array makes
  // one before anything else can change: the first write marks it active (EnsureActive, so it
  // is treated as not yet active below), a sync checkpoints, fail / replace update.
  bool pending = false;
  for (const MemberDecision& d : plan.members) {
    pending |= !d.why.empty() && d.verdict == MemberVerdict::kActive;
  }
  for (uint32_t s = 0; s < sb.member_count; ++s) {
    if (meta->health(s) == SlotHealth::kFailed && sb.slot_states[s] != SlotState::kFailed) {
      pending = true;
    }
  }
  std::vector<RaidForcedMember> forced;
  if (!plan.forced.empty()) {
    FOLIO_RETURN_IF_ERROR(PersistForced(meta.get(), bitmap.get()));
    for (const ForcedMember& f : plan.forced) {
      forced.push_back({f.slot, members[static_cast<size_t>(f.member)].name, f.events,
                        f.events_behind});
    }
  }
  const RaidOptions o = WithMinimumCache(options, geometry, unit);
  auto device = std::make_unique<RaidDeviceImpl>(geometry, std::move(meta), std::move(bitmap),
                                                 unit, o);
  device->SetActive(!forced.empty() || (!sb.clean() && !pending));
  device->SetForced(std::move(forced));
  return std::unique_ptr<RaidDevice>(std::move(device));
}

}  // namespace folio::raid

namespace folio {

Result<std::unique_ptr<RaidDevice>> RaidDevice::Create(std::vector<RaidMember> members,
                                                       const RaidCreateOptions& create,
                                                       const RaidOptions& options) {
  return raid::CreateImpl(std::move(members), create, options);
}

Result<std::unique_ptr<RaidDevice>> RaidDevice::Assemble(std::vector<RaidMember> members,
                                                         const RaidOptions& options) {
  return raid::AssembleImpl(std::move(members), options, RaidAssembleOptions{});
}

Result<std::unique_ptr<RaidDevice>> RaidDevice::Assemble(std::vector<RaidMember> members,
                                                         const RaidOptions& options,
                                                         const RaidAssembleOptions& assemble) {
  return raid::AssembleImpl(std::move(members), options, assemble);
}

Status ValidateRaidCreate(const RaidCreateOptions& create, uint32_t member_count,
                          uint64_t smallest_member_bytes, std::string_view smallest_member) {
  return raid::PlanCreate(create, member_count, smallest_member_bytes, smallest_member).status();
}

Result<RaidMemberLabel> ReadRaidMemberLabel(std::string_view name, BlockDevice* device) {
  const std::string who(name);
  if (device->size_bytes() < raid::kSuperblockBytes) {
    return Status::NotFound(who + ": no Folio RAID superblock (smaller than one)");
  }
  raid::MemberHeader h = raid::ReadMemberHeader(who, device);
  if (!h.superblock.ok()) {
    if (h.superblock.status().code() == StatusCode::kCorruption) {
      return Status::NotFound(std::string(h.superblock.status().message()));
    }
    return h.superblock.status();
  }
  const raid::Superblock& sb = *h.superblock;
  RaidMemberLabel label;
  label.array_uuid = raid::UuidToString(sb.array_uuid);
  label.level = sb.level;
  label.slot = sb.role;
  label.member_count = sb.member_count;
  label.events = sb.events;
  return label;
}

std::string_view RaidSyncActionName(RaidSyncAction a) {
  switch (a) {
    case RaidSyncAction::kResync: return "resync";
    case RaidSyncAction::kCheck: return "check";
    case RaidSyncAction::kRepair: return "repair";
    case RaidSyncAction::kRebuild: return "rebuild";
  }
  return "unknown";
}

std::string_view MemberHealthName(MemberHealth h) {
  switch (h) {
    case MemberHealth::kInSync: return "in_sync";
    case MemberHealth::kRebuilding: return "rebuilding";
    case MemberHealth::kFailed: return "failed";
    case MemberHealth::kMissing: return "missing";
  }
  return "unknown";
}

}  // namespace folio
