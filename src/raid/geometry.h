// StripeGeometry: where every byte of a RAID array lives. Pure arithmetic, no I/O.
//
// Vocabulary. Each member's data area (after its superblock and bitmap) is cut into chunks of
// chunk_bytes. A *stripe* is one row of chunks, one per member, at the same member position
// [stripe * chunk_bytes, (stripe + 1) * chunk_bytes). A stripe holds data_members() data chunks
// and parity_members() parity chunks. The array's bytes fill the data chunks of stripe 0 in
// data-index order, then stripe 1, and so on.
//
//   RAID 5, 4 members, left-symmetric (md's default),    RAID 6, 4 members, left-symmetric,
//   labelled by array chunk number:                      labelled by data index in the stripe:
//
//              m0   m1   m2   m3                                  m0   m1   m2   m3
//   stripe 0   D0   D1   D2   P                        stripe 0   Q    D0   D1   P
//   stripe 1   D4   D5   P    D3                       stripe 1   D0   D1   P    Q
//   stripe 2   D8   P    D6   D7                       stripe 2   D1   P    Q    D0
//   stripe 3   P    D9   D10  D11                      stripe 3   P    Q    D0   D1
//
// Left parity starts on the last member and moves left; right parity starts on member 0 and
// moves right. Symmetric layouts place data index 0 on the member after the last parity chunk
// and continue round the members; asymmetric layouts keep data in member order, skipping the
// parity chunks. Q (RAID 6) is always on the member after P. RAID 0 has no parity (data index
// = member). RAID 1 has one data chunk per stripe, mirrored on every member (role kMirror).
//
// Positions: an array pos is a byte offset in the array; a member pos is a byte offset in a
// member's data area (the device adds the data offset).
//
// Thread safety: immutable after Create; safe to share.
#pragma once

#include <cstdint>
#include <optional>

#include "folio/raid.h"
#include "folio/status.h"

namespace folio::raid {

enum class ChunkKind : uint8_t { kData, kP, kQ, kMirror };

struct ChunkRole {
  ChunkKind kind = ChunkKind::kData;
  uint32_t data_index = 0;  // kData: 0..data_members()-1; otherwise 0
};

struct DataLocation {
  uint64_t stripe = 0;
  uint32_t data_index = 0;
  uint32_t member = 0;         // RAID 1: member 0 (every member holds the same bytes)
  uint64_t member_pos = 0;
  uint64_t chunk_left_bytes = 0;  // bytes from member_pos to the end of its chunk
};

struct GeometryParams {
  RaidLevel level = RaidLevel::kRaid5;
  RaidLayout layout = RaidLayout::kLeftSymmetric;
  uint32_t members = 0;
  uint64_t chunk_bytes = 64 * 1024;
  // Usable bytes of each member's data area; rounded down to whole chunks.
  uint64_t member_data_bytes = 0;
};

class StripeGeometry {
 public:
  // Errors (InvalidArgument, naming the value and the fix): members outside the level's
  // range, chunk not a power of two in 4K..4M, a member smaller than one chunk, a layout other
  // than the four above.
  static Result<StripeGeometry> Create(const GeometryParams& params);

  RaidLevel level() const { return level_; }
  RaidLayout layout() const { return layout_; }
  uint32_t members() const { return members_; }
  uint32_t data_members() const { return data_members_; }
  uint32_t parity_members() const { return parity_members_; }
  uint64_t chunk_bytes() const { return chunk_bytes_; }
  int chunk_shift() const { return chunk_shift_; }
  uint64_t stripes() const { return stripes_; }
  uint64_t member_data_bytes() const { return stripes_ << chunk_shift_; }
  uint64_t stripe_data_bytes() const { return uint64_t{data_members_} << chunk_shift_; }
  uint64_t array_bytes() const { return stripes_ * stripe_data_bytes(); }
  bool has_parity() const { return parity_members_ > 0; }

  // REQUIRES: level 5 or 6, stripe < stripes().
  uint32_t PMember(uint64_t stripe) const;
  // REQUIRES: level 6, stripe < stripes().
  uint32_t QMember(uint64_t stripe) const;
  // REQUIRES: data_index < data_members(), stripe < stripes(). RAID 1: member 0.
  uint32_t DataMember(uint64_t stripe, uint32_t data_index) const;
  // REQUIRES: member < members(), stripe < stripes().
  ChunkRole RoleOf(uint64_t stripe, uint32_t member) const;

  // REQUIRES: array_pos < array_bytes().
  DataLocation Locate(uint64_t array_pos) const;
  // The array pos of a data chunk byte; nullopt for parity chunks and past the data area.
  // RAID 1: every member maps to the same array pos.
  std::optional<uint64_t> ArrayPos(uint32_t member, uint64_t member_pos) const;

 private:
  StripeGeometry() = default;
  // The first parity member of a stripe (P), by layout.
  uint32_t ParityStart(uint64_t stripe) const;

  RaidLevel level_ = RaidLevel::kRaid0;
  RaidLayout layout_ = RaidLayout::kLeftSymmetric;
  uint32_t members_ = 0;
  uint32_t data_members_ = 0;
  uint32_t parity_members_ = 0;
  uint64_t chunk_bytes_ = 0;
  int chunk_shift_ = 0;
  uint64_t stripes_ = 0;
};

}  // namespace folio::raid
