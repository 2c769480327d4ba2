#include "raid/geometry.h"

#include <string>

#include "base/check.h"
#include "base/units.h"

namespace folio::raid {

Result<StripeGeometry> StripeGeometry::Create(const GeometryParams& params) {
  const uint32_t min_members = RaidMinMembers(params.level);
  if (params.level != RaidLevel::kRaid0 && params.level != RaidLevel::kRaid1 &&
      params.level != RaidLevel::kRaid5 && params.level != RaidLevel::kRaid6) {
    return Status::InvalidArgument("--level " + std::to_string(static_cast<int>(params.level)) +
                                   ": must be 0, 1, 5 or 6");
  }
  if (params.members < min_members || params.members > kRaidMaxMembers) {
    return Status::InvalidArgument(
        std::string(RaidLevelName(params.level)) + " with " + std::to_string(params.members) +
        " members: needs " + std::to_string(min_members) + " to " +
        std::to_string(kRaidMaxMembers) + " members");
  }
  if (!IsPowerOfTwo(params.chunk_bytes) || params.chunk_bytes < kRaidMinChunkBytes ||
      params.chunk_bytes > kRaidMaxChunkBytes) {
    return Status::InvalidArgument("--chunk " + std::to_string(params.chunk_bytes) +
                                   ": must be a power of two between 4K and 4M (e.g. 64K)");
  }
  if (static_cast<uint8_t>(params.layout) > static_cast<uint8_t>(RaidLayout::kRightSymmetric)) {
    return Status::InvalidArgument("--layout " +
                                   std::to_string(static_cast<int>(params.layout)) +
                                   ": must be left-symmetric, left-asymmetric, right-symmetric "
                                   "or right-asymmetric");
  }
  if (params.member_data_bytes < params.chunk_bytes) {
    return Status::InvalidArgument("member data area of " + FormatSize(params.member_data_bytes) +
                                   " is smaller than one chunk (" +
                                   FormatSize(params.chunk_bytes) + "): use larger members");
  }
  StripeGeometry g;
  g.level_ = params.level;
  g.layout_ = params.layout;
  g.members_ = params.members;
  switch (params.level) {
    case RaidLevel::kRaid0: g.parity_members_ = 0; g.data_members_ = params.members; break;
    case RaidLevel::kRaid1: g.parity_members_ = 0; g.data_members_ = 1; break;
    case RaidLevel::kRaid5: g.parity_members_ = 1; g.data_members_ = params.members - 1; break;
    case RaidLevel::kRaid6: g.parity_members_ = 2; g.data_members_ = params.members - 2; break;
  }
  g.chunk_bytes_ = params.chunk_bytes;
  g.chunk_shift_ = Log2(params.chunk_bytes);
  g.stripes_ = params.member_data_bytes >> g.chunk_shift_;
  return g;
}

uint32_t StripeGeometry::ParityStart(uint64_t stripe) const {
  const uint32_t rot = static_cast<uint32_t>(stripe % members_);
  switch (layout_) {
    case RaidLayout::kLeftAsymmetric:
    case RaidLayout::kLeftSymmetric:
      return members_ - 1 - rot;
    case RaidLayout::kRightAsymmetric:
    case RaidLayout::kRightSymmetric:
      return rot;
  }
  FOLIO_CHECK_MSG(false, "unknown RAID layout");
  return 0;
}

uint32_t StripeGeometry::PMember(uint64_t stripe) const {
  FOLIO_CHECK(parity_members_ > 0 && stripe < stripes_);
  return ParityStart(stripe);
}

uint32_t StripeGeometry::QMember(uint64_t stripe) const {
  FOLIO_CHECK(parity_members_ == 2 && stripe < stripes_);
  return (ParityStart(stripe) + 1) % members_;
}

uint32_t StripeGeometry::DataMember(uint64_t stripe, uint32_t data_index) const {
  FOLIO_CHECK(data_index < data_members_ && stripe < stripes_);
  if (parity_members_ == 0) return level_ == RaidLevel::kRaid1 ? 0 : data_index;
  const uint32_t p = ParityStart(stripe);
  if (layout_ == RaidLayout::kLeftSymmetric || layout_ == RaidLayout::kRightSymmetric) {
    return (p + parity_members_ + data_index) % members_;
  }
  // Asymmetric: data in member order, skipping the parity run [p, p + parity_members) mod n.
  // The parity run wraps only for RAID 6 when P is the last member (Q on member 0).
  if (p + parity_members_ > members_) return data_index + 1;
  return data_index < p ? data_index : data_index + parity_members_;
}

ChunkRole StripeGeometry::RoleOf(uint64_t stripe, uint32_t member) const {
  FOLIO_CHECK(member < members_ && stripe < stripes_);
  if (level_ == RaidLevel::kRaid1) return {ChunkKind::kMirror, 0};
  if (parity_members_ == 0) return {ChunkKind::kData, member};
  const uint32_t p = ParityStart(stripe);
  if (member == p) return {ChunkKind::kP, 0};
  if (parity_members_ == 2 && member == (p + 1) % members_) return {ChunkKind::kQ, 0};
  if (layout_ == RaidLayout::kLeftSymmetric || layout_ == RaidLayout::kRightSymmetric) {
    const uint32_t first_data = (p + parity_members_) % members_;
    return {ChunkKind::kData, (member + members_ - first_data) % members_};
  }
  if (p + parity_members_ > members_) return {ChunkKind::kData, member - 1};
  return {ChunkKind::kData, member < p ? member : member - parity_members_};
}

DataLocation StripeGeometry::Locate(uint64_t array_pos) const {
  FOLIO_CHECK(array_pos < array_bytes());
  const uint64_t chunk_no = array_pos >> chunk_shift_;
  const uint64_t in_chunk = array_pos & (chunk_bytes_ - 1);
  DataLocation loc;
  loc.stripe = chunk_no / data_members_;
  loc.data_index = static_cast<uint32_t>(chunk_no % data_members_);
  loc.member = DataMember(loc.stripe, loc.data_index);
  loc.member_pos = (loc.stripe << chunk_shift_) + in_chunk;
  loc.chunk_left_bytes = chunk_bytes_ - in_chunk;
  return loc;
}

std::optional<uint64_t> StripeGeometry::ArrayPos(uint32_t member, uint64_t member_pos) const {
  if (member >= members_ || member_pos >= member_data_bytes()) return std::nullopt;
  const uint64_t stripe = member_pos >> chunk_shift_;
  const ChunkRole role = RoleOf(stripe, member);
  if (role.kind == ChunkKind::kP || role.kind == ChunkKind::kQ) return std::nullopt;
  const uint64_t chunk_no = stripe * data_members_ + role.data_index;
  return (chunk_no << chunk_shift_) + (member_pos & (chunk_bytes_ - 1));
}

}  // namespace folio::raid
