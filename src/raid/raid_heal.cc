// RaidDevice::ReadAsIfMissing / RepairMember: the reads and writes a checksumming layer above
// the array needs to heal a member that returned wrong bytes without an I/O error (a flipped
// byte): read the range with one member treated as missing (its pieces rebuilt from the
// others), and, once a variant verifies, write that member's pieces back so it agrees with
// the others again. Both hold the stripe column ranges they touch (StripeLockTable), so no
// write of the array interleaves; they do synchronous member I/O on the calling thread.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "base/clock.h"
#include "raid/raid_device_impl.h"

namespace folio::raid {
namespace {

// One piece of an array range inside one stripe: data index, column range.
struct Piece {
  uint32_t data_index;
  uint32_t member;
  uint32_t col_begin;
  uint32_t col_end;
  uint64_t array_pos;
};

}  // namespace

// Calls fn(stripe, pieces, lock columns) for each stripe [offset, offset + length) touches,
// with the stripe's columns locked.
static Status ForEachStripe(RaidDeviceImpl* raid, StripeLockTable* locks, uint64_t offset,
                            uint64_t length,
                            const std::function<Status(uint64_t, const std::vector<Piece>&)>& fn) {
  const StripeGeometry& g = raid->geometry();
  uint64_t pos = offset;
  const uint64_t end = offset + length;
  while (pos < end) {
    DataLocation loc = g.Locate(pos);
    const uint64_t stripe = loc.stripe;
    std::vector<Piece> pieces;
    uint32_t col_lo = UINT32_MAX, col_hi = 0;
    while (pos < end) {
      DataLocation l = g.Locate(pos);
      if (l.stripe != stripe) break;
      uint64_t n = std::min<uint64_t>(l.chunk_left_bytes, end - pos);
      uint32_t col = static_cast<uint32_t>(l.member_pos - (stripe << g.chunk_shift()));
      pieces.push_back(Piece{l.data_index, l.member, col, static_cast<uint32_t>(col + n), pos});
      col_lo = std::min(col_lo, col);
      col_hi = std::max(col_hi, static_cast<uint32_t>(col + n));
      pos += n;
    }
    // Wait for the columns, driving this thread's own array requests meanwhile (one of them
    // may hold the lock).
    const uint64_t deadline_ns = MonotonicNowNs() + 30ull * 1000 * 1000 * 1000;
    while (!locks->TryLock(stripe, col_lo, col_hi)) {
      uint64_t generation = locks->generation();
      (void)raid->Poll(0);
      if (MonotonicNowNs() > deadline_ns) {
        return Status::Busy(fmt::format("{}: stripe {} stayed locked for 30 s", raid->name(),
                                        stripe));
      }
      locks->WaitForUnlock(generation, std::chrono::microseconds(1000));
    }
    Status s = fn(stripe, pieces);
    locks->Unlock(stripe, col_lo, col_hi);
    FOLIO_RETURN_IF_ERROR(s);
  }
  return Status::OK();
}

Status RaidDeviceImpl::CheckHealArgs(uint32_t slot, uint64_t offset, uint64_t length) const {
  if (geometry_.level() == RaidLevel::kRaid0) {
    return Status::InvalidArgument(name_ + ": RAID 0 has no redundancy to read from");
  }
  if (slot >= geometry_.members()) {
    return Status::InvalidArgument(fmt::format("{}: no member slot {}", name_, slot));
  }
  if (length == 0 || offset % kBlockBytes != 0 || length % kBlockBytes != 0 ||
      offset > size_bytes() || length > size_bytes() - offset) {
    return Status::InvalidArgument(fmt::format(
        "{}: range {}+{}: must be 4096-aligned and inside the array", name_, offset, length));
  }
  return Status::OK();
}

Status RaidDeviceImpl::ReadAsIfMissing(uint32_t slot, uint64_t offset, uint64_t length,
                                       char* buf) {
  FOLIO_RETURN_IF_ERROR(CheckHealArgs(slot, offset, length));
  const StripeGeometry& g = geometry_;
  const uint64_t data_offset = meta_->data_offset_bytes();
  auto read_member = [&](uint32_t m, uint64_t member_pos, uint64_t n, char* out) -> Status {
    BlockDevice* dev = meta_->device(m);
    if (dev == nullptr || !meta_->Readable(m, member_pos + n)) {
      return Status::DataLoss(fmt::format("{}: member {} cannot be read to rebuild member {}",
                                          name_, m, slot));
    }
    return dev->Read(data_offset + member_pos, out, n);
  };
  return ForEachStripe(this, &locks_, offset, length,
                       [&](uint64_t stripe, const std::vector<Piece>& pieces) -> Status {
    const uint64_t base = stripe << g.chunk_shift();
    for (const Piece& p : pieces) {
      const uint32_t n = p.col_end - p.col_begin;
      char* out = buf + (p.array_pos - offset);
      AlignedBuffer tmp(n);
      if (g.level() == RaidLevel::kRaid1) {
        uint32_t from = slot == 0 ? 1 : 0;
        FOLIO_RETURN_IF_ERROR(read_member(from, base + p.col_begin, n, tmp.data()));
        std::memcpy(out, tmp.data(), n);
        continue;
      }
      if (p.member != slot) {
        FOLIO_RETURN_IF_ERROR(read_member(p.member, base + p.col_begin, n, tmp.data()));
        std::memcpy(out, tmp.data(), n);
        continue;
      }
      // The missing member's piece = P xor every other data chunk's same columns.
      FOLIO_RETURN_IF_ERROR(read_member(g.PMember(stripe), base + p.col_begin, n, tmp.data()));
      std::memcpy(out, tmp.data(), n);
      for (uint32_t d = 0; d < g.data_members(); ++d) {
        if (d == p.data_index) continue;
        FOLIO_RETURN_IF_ERROR(
            read_member(g.DataMember(stripe, d), base + p.col_begin, n, tmp.data()));
        for (uint32_t i = 0; i < n; ++i) out[i] ^= tmp.data()[i];
      }
      counters_.degraded_reads.fetch_add(1, std::memory_order_relaxed);
    }
    return Status::OK();
  });
}

Status RaidDeviceImpl::RepairMember(uint32_t slot, uint64_t offset, uint64_t length,
                                    const char* data) {
  FOLIO_RETURN_IF_ERROR(CheckHealArgs(slot, offset, length));
  BlockDevice* dev = meta_->device(slot);
  if (dev == nullptr || !meta_->Writable(slot)) {
    return Status::InvalidArgument(fmt::format("{}: member {} is failed", name_, slot));
  }
  const StripeGeometry& g = geometry_;
  const uint64_t data_offset = meta_->data_offset_bytes();
  FOLIO_RETURN_IF_ERROR(ForEachStripe(this, &locks_, offset, length,
                                      [&](uint64_t stripe, const std::vector<Piece>& pieces) {
    const uint64_t base = stripe << g.chunk_shift();
    for (const Piece& p : pieces) {
      if (g.level() != RaidLevel::kRaid1 && p.member != slot) continue;
      const uint32_t n = p.col_end - p.col_begin;
      AlignedBuffer tmp(n);
      std::memcpy(tmp.data(), data + (p.array_pos - offset), n);
      FOLIO_RETURN_IF_ERROR(dev->Write(data_offset + base + p.col_begin, tmp.data(), n));
      counters_.read_errors_corrected.fetch_add(1, std::memory_order_relaxed);
    }
    return Status::OK();
  }));
  return dev->Flush();
}

}  // namespace folio::raid
