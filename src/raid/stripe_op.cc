// The stripe head state machine (raid_ops.h):
//
//   kStart    take the stripe lock, choose the mode, take the buffers (or defer)
//   kReading  the reads the mode needs are in flight; a read error adds the member to
//             bad_mask and restarts the choice with the lock held (now degraded)
//   kWriting  parity computed (stripe_compute.cc), the writes are in flight; a write error
//             marks the member failed; past the level's tolerance the data is lost
//
// Mode choice for writes (md's handle_stripe_dirtying, by bytes instead of pages):
//   full        every data block of the head is written: parity from the new data
//   rmw / rcw   read-modify-write reads the old data being replaced and the parity;
//               reconstruct-write reads the data not being replaced; the fewer bytes win,
//               rcw on a tie and always in regions waiting for a resync (its parity is
//               computed from the data alone)
//   degraded    a member is unreadable: read every readable block, rebuild the lost ones,
//               apply the new data, recompute parity, write every writable block touched
//   more members unreadable than parity: rmw when it reads nothing unreadable (parity stays
//               consistent with the unreadable blocks); otherwise beyond: written straight to
//               the data members only when the stripe is lost for good (more members failed
//               than parity), else refused, since stale parity would rebuild a member whose
//               read error clears, or which a rebuild reaches, with wrong data
#include <bit>
#include <string>

#include "base/check.h"
#include "raid/raid_device_impl.h"

namespace folio::raid {

uint32_t RaidDeviceImpl::ParityMask(uint64_t stripe) const {
  uint32_t mask = 0;
  if (geometry_.parity_members() >= 1) mask |= 1u << geometry_.PMember(stripe);
  if (geometry_.parity_members() == 2) mask |= 1u << geometry_.QMember(stripe);
  return mask;
}

bool RaidDeviceImpl::NeedsResync(uint64_t stripe) const {
  return bitmap_ != nullptr &&
         bitmap_->NeedsResync(bitmap_->RegionOf(stripe << geometry_.chunk_shift()));
}

uint32_t RaidDeviceImpl::UnreadableMask(const StripeOp* op) const {
  uint32_t mask = op->bad_mask;
  const uint64_t end = MemberEnd(op);
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (!meta_->Readable(s, end)) mask |= 1u << s;
  }
  return mask;
}

StripeMode RaidDeviceImpl::ChooseMode(const StripeOp* op) const {
  if (op->work == StripeWork::kRead) return StripeMode::kReconstruct;
  if (op->work == StripeWork::kSync) return StripeMode::kSync;
  if (geometry_.level() == RaidLevel::kRaid1) return StripeMode::kMirror;
  const uint32_t par = geometry_.parity_members();
  const uint32_t k = geometry_.data_members();
  const uint32_t unreadable = UnreadableMask(op);
  const uint32_t lost = std::popcount(unreadable);
  if (lost > par) {
    // Parity cannot be computed from all the data. A read-modify-write still keeps it
    // consistent with the unreadable blocks (which may read again: a read error, a rebuild)
    // when everything it reads is readable.
    bool rmw_possible = (ParityMask(op->stripe) & unreadable) == 0 && !NeedsResync(op->stripe);
    for (uint32_t d = 0; d < k; ++d) {
      if (!op->piece[d].empty() && ((unreadable >> DataSlot(op->stripe, d)) & 1)) {
        rmw_possible = false;
      }
    }
    return rmw_possible ? StripeMode::kRmw : StripeMode::kBeyond;
  }
  const uint64_t len = op->length();
  uint64_t rmw = par * len;
  uint64_t rcw = 0;
  bool full = true;
  for (uint32_t d = 0; d < k; ++d) {
    const DataPiece& p = op->piece[d];
    const uint64_t written = p.end - p.begin;
    if (written != len) {
      full = false;
      rcw += len;
    }
    rmw += written;
  }
  if (full) return StripeMode::kFull;
  if (lost > 0) return StripeMode::kDegraded;
  if (NeedsResync(op->stripe)) return StripeMode::kRcw;
  return rmw < rcw ? StripeMode::kRmw : StripeMode::kRcw;
}

uint32_t RaidDeviceImpl::BufferMask(const StripeOp* op) const {
  const uint32_t all = geometry_.members() == 32 ? ~0u : (1u << geometry_.members()) - 1;
  const uint32_t k = geometry_.data_members();
  uint32_t mask = 0;
  switch (op->mode) {
    case StripeMode::kFull:
      return ParityMask(op->stripe);
    case StripeMode::kRmw:
      mask = ParityMask(op->stripe);
      for (uint32_t d = 0; d < k; ++d) {
        if (!op->piece[d].empty()) mask |= 1u << DataSlot(op->stripe, d);
      }
      return mask;
    case StripeMode::kRcw:
      mask = ParityMask(op->stripe);
      for (uint32_t d = 0; d < k; ++d) {
        if (op->piece[d].end - op->piece[d].begin != op->length()) {
          mask |= 1u << DataSlot(op->stripe, d);
        }
      }
      return mask;
    case StripeMode::kDegraded:
    case StripeMode::kSync:
      return all;
    case StripeMode::kReconstruct:
      return geometry_.level() == RaidLevel::kRaid1 ? 0 : all;
    default:
      return 0;
  }
}

bool RaidDeviceImpl::AcquireStripe(StripeOp* op) {
  if (!op->locked) {
    if (!locks_.TryLock(op->stripe, op->col_begin, op->col_end)) {
      if (!op->counted_wait) {
        counters_.stripe_cache_waits.fetch_add(1, std::memory_order_relaxed);
        op->counted_wait = true;
      }
      Defer(op);
      return false;
    }
    op->locked = true;
  }
  op->mode = ChooseMode(op);
  const uint32_t mask = BufferMask(op);
  const uint32_t scratch = op->mode == StripeMode::kSync ? 2 : 0;
  const uint32_t count = std::popcount(mask) + scratch;
  if (count > 0) {
    if (!pool_.TryAlloc(op->length(), count, op->buf_list)) {
      // No buffers now: give the stripe back so others can finish and free theirs.
      locks_.Unlock(op->stripe, op->col_begin, op->col_end, /*notify=*/false);
      op->locked = false;
      if (!op->counted_wait) {
        counters_.stripe_cache_waits.fetch_add(1, std::memory_order_relaxed);
        op->counted_wait = true;
      }
      Defer(op);
      return false;
    }
    op->buf_count = count;
    uint32_t i = 0;
    for (uint32_t s = 0; s < geometry_.members(); ++s) {
      op->buf[s] = (mask >> s) & 1 ? op->buf_list[i++] : nullptr;
    }
    op->buf[geometry_.members()] = scratch ? op->buf_list[i++] : nullptr;
    op->buf[geometry_.members() + 1] = scratch ? op->buf_list[i++] : nullptr;
  }
  return true;
}

void RaidDeviceImpl::ReleaseBuffers(StripeOp* op) {
  if (op->buf_count > 0) pool_.Free(op->length(), op->buf_count, op->buf_list);
  op->buf_count = 0;
  for (char*& b : op->buf) b = nullptr;
}

void RaidDeviceImpl::ReleaseStripe(StripeOp* op) {
  // Buffers first: a waiter woken by the unlock must find them free.
  ReleaseBuffers(op);
  if (op->locked) locks_.Unlock(op->stripe, op->col_begin, op->col_end);
  op->locked = false;
}

void RaidDeviceImpl::AdvanceStripe(StripeOp* op) {
  switch (op->phase) {
    case StripePhase::kStart:
      if (!AcquireStripe(op)) return;
      op->phase = StripePhase::kReading;
      op->ResetIos(geometry_.members());
      IssueReads(op);
      if (op->pending == 0) AfterReads(op);
      return;
    case StripePhase::kReading:
      AfterReads(op);
      return;
    case StripePhase::kWriting:
      AfterWrites(op);
      return;
  }
}

void RaidDeviceImpl::IssueReads(StripeOp* op) {
  const uint64_t base = op->stripe << geometry_.chunk_shift();
  const uint32_t cb = op->col_begin;
  const uint32_t len = op->length();
  const uint32_t k = geometry_.data_members();
  op->lost_mask = UnreadableMask(op);
  switch (op->mode) {
    case StripeMode::kRmw:
      for (uint32_t d = 0; d < k; ++d) {
        const DataPiece& p = op->piece[d];
        if (p.empty()) continue;
        const uint32_t slot = DataSlot(op->stripe, d);
        QueueIo(op, slot, IoOp::kRead, base + p.begin, p.end - p.begin,
                op->buf[slot] + (p.begin - cb));
      }
      for (uint32_t s = 0; s < geometry_.members(); ++s) {
        if ((ParityMask(op->stripe) >> s) & 1) {
          QueueIo(op, s, IoOp::kRead, base + cb, len, op->buf[s]);
        }
      }
      return;
    case StripeMode::kRcw:
      for (uint32_t d = 0; d < k; ++d) {
        if (op->piece[d].end - op->piece[d].begin == len) continue;
        const uint32_t slot = DataSlot(op->stripe, d);
        QueueIo(op, slot, IoOp::kRead, base + cb, len, op->buf[slot]);
      }
      return;
    case StripeMode::kDegraded:
    case StripeMode::kSync:
      for (uint32_t s = 0; s < geometry_.members(); ++s) {
        if (!((op->lost_mask >> s) & 1)) QueueIo(op, s, IoOp::kRead, base + cb, len, op->buf[s]);
      }
      return;
    case StripeMode::kReconstruct:
      if (geometry_.level() == RaidLevel::kRaid1) {
        // Read another mirror straight into the caller's buffer.
        for (uint32_t i = 0; i < geometry_.members(); ++i) {
          const uint32_t s = static_cast<uint32_t>((op->stripe + i) % geometry_.members());
          if ((op->lost_mask >> s) & 1) continue;
          QueueIo(op, s, IoOp::kRead, base + cb, len, op->piece[0].buf);
          return;
        }
        return;  // no mirror left: ComputeReconstruct reports it
      }
      for (uint32_t s = 0; s < geometry_.members(); ++s) {
        if (!((op->lost_mask >> s) & 1)) QueueIo(op, s, IoOp::kRead, base + cb, len, op->buf[s]);
      }
      return;
    default:
      return;
  }
}

void RaidDeviceImpl::AfterReads(StripeOp* op) {
  uint32_t newly_bad = 0;
  for (uint32_t i = 0; i < op->ios_used; ++i) {
    if (!op->ios[i].req.status.ok()) newly_bad |= 1u << op->ios[i].slot;
  }
  op->ResetIos(geometry_.members());
  if (newly_bad != 0) {
    // Read errors: those members are unreadable for this head; choose again (degraded).
    op->bad_mask |= newly_bad;
    ReleaseBuffers(op);
    op->phase = StripePhase::kStart;
    AdvanceStripe(op);
    return;
  }
  op->write_mask = 0;
  switch (op->work) {
    case StripeWork::kRead: op->status = ComputeReconstruct(op); break;
    case StripeWork::kSync: ComputeSync(op); break;
    case StripeWork::kWrite: ComputeWrite(op); break;
  }
  op->phase = StripePhase::kWriting;
  if (op->status.ok()) IssueWrites(op);
  if (op->pending == 0) AfterWrites(op);
}

void RaidDeviceImpl::IssueWrites(StripeOp* op) {
  const uint64_t base = op->stripe << geometry_.chunk_shift();
  const uint32_t k = geometry_.data_members();
  switch (op->mode) {
    case StripeMode::kFull: ++counters_.full_stripe_writes; break;
    case StripeMode::kRmw: ++counters_.rmw_writes; break;
    case StripeMode::kRcw: ++counters_.rcw_writes; break;
    case StripeMode::kDegraded:
    case StripeMode::kBeyond: ++counters_.degraded_writes; break;
    default: break;
  }
  if (op->mode == StripeMode::kMirror) {
    const DataPiece& p = op->piece[0];
    for (uint32_t s = 0; s < geometry_.members(); ++s) {
      if (meta_->Writable(s)) QueueIo(op, s, IoOp::kWrite, base + p.begin, p.end - p.begin, p.buf);
    }
    if (op->pending == 0) op->status = Status::DataLoss(name_ + ": no member left to write");
    return;
  }
  if (op->work == StripeWork::kWrite) {
    for (uint32_t d = 0; d < k; ++d) {
      const DataPiece& p = op->piece[d];
      if (p.empty()) continue;
      const uint32_t slot = DataSlot(op->stripe, d);
      if ((op->write_mask >> slot) & 1) continue;  // written whole below
      if (op->mode == StripeMode::kBeyond && !meta_->Readable(slot, MemberEnd(op)) &&
          op->status.ok()) {
        // Failed, or not rebuilt this far (a rebuild cannot fill it in: too many lost).
        op->status = Status::DataLoss(name_ + ": stripe " + std::to_string(op->stripe) +
                                      ": member " + meta_->name(slot) +
                                      " cannot be read and the array has no redundancy left");
      }
      if (!meta_->Writable(slot)) continue;  // degraded: the data lives in the parity
      QueueIo(op, slot, IoOp::kWrite, base + p.begin, p.end - p.begin, p.buf);
    }
  }
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (!((op->write_mask >> s) & 1) || !meta_->Writable(s)) continue;
    char* src = op->buf[s] != nullptr ? op->buf[s] : op->piece[0].buf;
    QueueIo(op, s, IoOp::kWrite, base + op->col_begin, op->length(), src);
  }
}

void RaidDeviceImpl::AfterWrites(StripeOp* op) {
  uint32_t write_failed = 0;
  for (uint32_t i = 0; i < op->ios_used; ++i) {
    const MemberIo& io = op->ios[i];
    const bool rewrite = (op->bad_mask >> io.slot) & 1;
    if (io.req.status.ok()) {
      if (rewrite) counters_.read_errors_corrected.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    (void)HandleMemberError(io.slot);
    write_failed |= 1u << io.slot;
  }
  if (op->work == StripeWork::kWrite && op->status.ok()) {
    op->status = WriteLossStatus(op, write_failed);
  }
  ReleaseStripe(op);
  FinishOp(op);
}

Status RaidDeviceImpl::WriteLossStatus(const StripeOp* op, uint32_t write_failed) const {
  // Lost roles of the stripe: members failed (before or by this op) and members whose write
  // failed (counted even when MarkFailed is quiet, e.g. while stopping after a crash).
  uint32_t lost = write_failed;
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (!meta_->Writable(s)) lost |= 1u << s;
  }
  const uint32_t tolerance = RaidFailureTolerance(geometry_.level(), geometry_.members());
  if (static_cast<uint32_t>(std::popcount(lost)) <= tolerance) return Status::OK();
  // More roles lost than redundancy: data of this op whose own member is lost is gone (it
  // cannot be rebuilt); data that reached its own member is still there.
  uint32_t lost_homes = 0;
  if (geometry_.level() == RaidLevel::kRaid1) {
    lost_homes = lost;  // every mirror is a home, and all of them are lost
  } else {
    for (uint32_t d = 0; d < geometry_.data_members(); ++d) {
      if (op->piece[d].empty()) continue;
      const uint32_t slot = DataSlot(op->stripe, d);
      if ((lost >> slot) & 1) lost_homes |= 1u << slot;
    }
  }
  if (lost_homes == 0) return Status::OK();
  auto names = [&](uint32_t mask) {
    std::string out;
    for (uint32_t s = 0; s < geometry_.members(); ++s) {
      if (!((mask >> s) & 1)) continue;
      if (!out.empty()) out += ", ";
      out += meta_->name(s);
    }
    return out;
  };
  std::string msg = name_ + ": stripe " + std::to_string(op->stripe) + ": data written for " +
                    names(lost_homes) + " is lost: members " + names(lost) +
                    " are failed, more than the array's redundancy (" +
                    std::to_string(tolerance) + ")";
  for (uint32_t i = 0; i < op->ios_used; ++i) {
    const MemberIo& io = op->ios[i];
    if (io.req.status.ok()) continue;
    msg += "; write to " + meta_->name(io.slot) + " failed: " + io.req.status.ToString();
  }
  return Status::DataLoss(msg);
}

}  // namespace folio::raid
