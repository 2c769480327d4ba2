// Parity work of the stripe modes (stripe_op.cc chooses the mode and does the I/O). All of it
// runs between the reads and the writes of one stripe head, under its lock, and is timed as
// parity CPU.
#include <bit>
#include <cstring>
#include <string>

#include "base/check.h"
#include "raid/parity.h"
#include "raid/raid_device_impl.h"

namespace folio::raid {

void RaidDeviceImpl::BlocksOf(const StripeOp* op, char** blocks) const {
  const uint32_t k = geometry_.data_members();
  for (uint32_t d = 0; d < k; ++d) blocks[d] = op->buf[DataSlot(op->stripe, d)];
  if (geometry_.parity_members() >= 1) blocks[k] = op->buf[geometry_.PMember(op->stripe)];
  if (geometry_.parity_members() == 2) blocks[k + 1] = op->buf[geometry_.QMember(op->stripe)];
}

uint32_t RaidDeviceImpl::LostRoles(const StripeOp* op, uint32_t slots, uint32_t* roles) const {
  const uint32_t k = geometry_.data_members();
  uint32_t n = 0;
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (!((slots >> s) & 1)) continue;
    const ChunkRole role = geometry_.RoleOf(op->stripe, s);
    roles[n++] = role.kind == ChunkKind::kData ? role.data_index
                 : role.kind == ChunkKind::kP  ? k
                                               : k + 1;
  }
  return n;
}

void RaidDeviceImpl::ComputeWrite(StripeOp* op) {
  const uint32_t k = geometry_.data_members();
  const uint32_t par = geometry_.parity_members();
  const uint32_t len = op->length();
  const uint32_t cb = op->col_begin;
  if (op->mode == StripeMode::kMirror) return;
  if (op->mode == StripeMode::kBeyond) {
    // Parity cannot be recomputed. Writing data without it is safe only when the stripe is
    // lost for good (more members failed than parity); otherwise an unreadable member (read
    // error, not yet rebuilt) would later be rebuilt from stale parity: wrong data.
    uint32_t failed = 0;
    for (uint32_t s = 0; s < geometry_.members(); ++s) {
      if (!meta_->Writable(s)) failed |= 1u << s;
    }
    if (static_cast<uint32_t>(std::popcount(failed)) <= par) {
      std::string unreadable;
      for (uint32_t s = 0; s < geometry_.members(); ++s) {
        if (!((op->lost_mask >> s) & 1)) continue;
        unreadable += (unreadable.empty() ? "" : ", ") + meta_->name(s);
      }
      op->status = Status::DataLoss(name_ + ": stripe " + std::to_string(op->stripe) +
                                    ": members " + unreadable +
                                    " cannot be read, more than parity rebuilds, so parity "
                                    "cannot be kept consistent: nothing written");
    }
    return;
  }
  const uint32_t p_slot = geometry_.PMember(op->stripe);
  const uint32_t q_slot = par == 2 ? geometry_.QMember(op->stripe) : 0;
  char* p = op->buf[p_slot];
  char* q = par == 2 ? op->buf[q_slot] : nullptr;
  char* src[kRaidMaxMembers];
  if (op->mode == StripeMode::kDegraded && NeedsResync(op->stripe)) {
    op->status = Status::DataLoss(name_ + ": stripe " + std::to_string(op->stripe) +
                                  " is degraded and not resynced since an unclean stop: its "
                                  "parity cannot be trusted to rebuild the missing member");
    return;
  }
  TimeParity([&] {
    switch (op->mode) {
      case StripeMode::kFull:
        for (uint32_t d = 0; d < k; ++d) src[d] = op->piece[d].buf;
        break;
      case StripeMode::kRcw:
        for (uint32_t d = 0; d < k; ++d) {
          const DataPiece& pc = op->piece[d];
          char* b = op->buf[DataSlot(op->stripe, d)];
          if (pc.end - pc.begin == len) {
            src[d] = pc.buf;
            continue;
          }
          if (!pc.empty()) std::memcpy(b + (pc.begin - cb), pc.buf, pc.end - pc.begin);
          src[d] = b;
        }
        break;
      case StripeMode::kRmw:
        for (uint32_t d = 0; d < k; ++d) {
          const DataPiece& pc = op->piece[d];
          if (pc.empty()) continue;
          char* delta = op->buf[DataSlot(op->stripe, d)] + (pc.begin - cb);
          const uint32_t off = pc.begin - cb;
          XorInto(delta, pc.buf, pc.end - pc.begin);  // old ^ new
          ParityUpdate(delta, d, p + off, q ? q + off : nullptr, pc.end - pc.begin);
        }
        return;
      case StripeMode::kDegraded: {
        char* blocks[kRaidMaxMembers + 2];
        BlocksOf(op, blocks);
        uint32_t roles[2];
        const uint32_t nlost = LostRoles(op, op->lost_mask, roles);
        if (nlost > 0) Recover({blocks, k + par}, par, {roles, nlost}, len);
        for (uint32_t d = 0; d < k; ++d) {
          const DataPiece& pc = op->piece[d];
          if (!pc.empty()) std::memcpy(blocks[d] + (pc.begin - cb), pc.buf, pc.end - pc.begin);
          src[d] = blocks[d];
        }
        break;
      }
      default:
        FOLIO_CHECK_MSG(false, "ComputeWrite: not a write mode");
    }
    if (par == 1) {
      XorGen({src, k}, p, len);
    } else {
      PqGen({src, k}, p, q, len);
    }
  });
  op->write_mask = ParityMask(op->stripe);
  if (op->mode == StripeMode::kDegraded) op->write_mask |= op->lost_mask;
}

Status RaidDeviceImpl::ComputeReconstruct(StripeOp* op) {
  const uint32_t k = geometry_.data_members();
  const uint32_t par = geometry_.parity_members();
  const uint32_t len = op->length();
  const std::string where = name_ + ": stripe " + std::to_string(op->stripe);
  if (geometry_.level() == RaidLevel::kRaid1) {
    if (std::popcount(op->lost_mask) >= static_cast<int>(geometry_.members())) {
      return Status::DataLoss(where + ": no readable mirror left");
    }
    op->write_mask = op->bad_mask;
    return Status::OK();
  }
  const int lost = std::popcount(op->lost_mask);
  if (lost > static_cast<int>(par)) {
    return Status::DataLoss(where + ": " + std::to_string(lost) +
                            " members unreadable, more than the " + std::to_string(par) +
                            " parity can rebuild");
  }
  if (lost > 0 && NeedsResync(op->stripe)) {
    return Status::DataLoss(where + ": not resynced since an unclean stop, so its parity "
                            "cannot be trusted to rebuild a member");
  }
  char* blocks[kRaidMaxMembers + 2];
  BlocksOf(op, blocks);
  uint32_t roles[2];
  const uint32_t nlost = LostRoles(op, op->lost_mask, roles);
  TimeParity([&] {
    if (nlost > 0) Recover({blocks, k + par}, par, {roles, nlost}, len);
  });
  uint32_t served = 0;
  for (uint32_t d = 0; d < k; ++d) {
    const DataPiece& pc = op->piece[d];
    if (pc.empty()) continue;
    std::memcpy(pc.buf, blocks[d] + (pc.begin - op->col_begin), pc.end - pc.begin);
    ++served;
  }
  FOLIO_CHECK(served > 0);
  op->write_mask = op->bad_mask;  // rewrite what failed to read
  return Status::OK();
}

}  // namespace folio::raid
