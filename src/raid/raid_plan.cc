// Splitting user requests into operations (see raid_ops.h).
//
// Reads: one PieceOp per chunk piece on a readable member (the member merges adjacent pieces
// of one batch); a piece on an unreadable member becomes a reconstructing StripeOp.
// Writes: per stripe, the written columns of each data block; then stripe heads:
//   fixed unit U   heads are the U-aligned column slices the write touches (md's stripe_size)
//   dynamic        heads follow the request: the column intervals between the begin / end
//                  columns of the written pieces, so a full-stripe write is one head of a
//                  whole chunk and a 4 KiB write one head of 4 KiB
#include <algorithm>
#include <string>

#include "base/check.h"
#include "io/device_util.h"
#include "raid/raid_device_impl.h"

namespace folio::raid {
namespace {

// Largest dynamic stripe head (a 2 MiB folio per member).
constexpr uint32_t kMaxDynamicHeadBytes = 2u << 20;

}  // namespace

void RaidDeviceImpl::StartUserIo(ThreadCtx* c, IoRequest* req) {
  req->submit_ns = MonotonicNowNs();
  user_requests_.fetch_add(1, std::memory_order_relaxed);
  UserIo* u = new UserIo();
  u->req = req;
  u->children = 1;  // planning holds a reference until every child is created
  io_internal::DeviceGeometry g{name_, kBlockBytes, kBlockBytes, size_bytes(), false};
  Status st = io_internal::ValidateRequest(*req, g);
  if (st.ok()) {
    switch (req->op) {
      case IoOp::kRead: StartRead(c, u); break;
      case IoOp::kWrite: st = StartWrite(c, u); break;
      case IoOp::kFlush: StartFlush(c, u); break;
      case IoOp::kTrim: st = Status::NotSupported(name_ + ": trim is not supported"); break;
    }
  }
  ReleaseChild(c, u, st);
}

void RaidDeviceImpl::StartRead(ThreadCtx* c, UserIo* u) {
  const uint64_t end = u->req->offset + u->req->length;
  char* p = u->req->buf;
  const uint32_t members = geometry_.members();
  const bool parity_level = geometry_.parity_members() > 0;
  // A parity stripe with a piece on an unreadable member is read once, whole, by one
  // reconstructing op that fills every piece of it: reading the readable pieces on their own
  // as well would read those member ranges twice, out of order.
  StripeOp* degraded = nullptr;
  for (uint64_t pos = u->req->offset; pos < end;) {
    const DataLocation loc = geometry_.Locate(pos);
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(end - pos, loc.chunk_left_bytes));
    const uint32_t col = static_cast<uint32_t>(loc.member_pos & (geometry_.chunk_bytes() - 1));
    if (degraded != nullptr && degraded->stripe != loc.stripe) {
      c->ready.push_back(degraded);
      degraded = nullptr;
    }
    int slot = static_cast<int>(loc.member);
    if (geometry_.level() == RaidLevel::kRaid1) {
      // Spread chunks over the readable mirrors, except where a resync is pending: there the
      // mirrors may differ, and reads come from the first one, which the resync copies.
      const uint64_t first = NeedsResync(loc.stripe) ? 0 : loc.stripe;
      slot = -1;
      for (uint32_t i = 0; i < members; ++i) {
        const uint32_t s = static_cast<uint32_t>((first + i) % members);
        if (meta_->Readable(s, loc.member_pos + n)) {
          slot = static_cast<int>(s);
          break;
        }
      }
    }
    if (parity_level && degraded == nullptr && slot >= 0 &&
        meta_->Readable(slot, loc.member_pos + n) && StripeHasUnreadable(loc, end - pos)) {
      slot = -1;  // a later piece of this stripe needs the reconstruction: join it
    }
    if (degraded != nullptr) {
      AddPiece(degraded, loc.data_index, col, n, p);
    } else if (slot >= 0 && meta_->Readable(slot, loc.member_pos + n)) {
      PieceOp* op = NewPieceOp(c);
      op->op = IoOp::kRead;
      op->slot = static_cast<uint32_t>(slot);
      op->stripe = loc.stripe;
      op->data_index = loc.data_index;
      op->col = col;
      op->length = n;
      op->buf = p;
      op->ResetIos(1);
      AddChild(u, op);
      QueueIo(op, op->slot, IoOp::kRead, loc.member_pos, n, p);
    } else if (geometry_.level() == RaidLevel::kRaid0) {
      if (u->status.ok()) {
        u->status = Status::DataLoss(name_ + ": member " + meta_->name(loc.member) +
                                     " failed; RAID 0 has no redundancy");
      }
    } else if (geometry_.level() == RaidLevel::kRaid1) {
      counters_.degraded_reads.fetch_add(1, std::memory_order_relaxed);
      StartReconstruct(c, u, loc.stripe, loc.data_index, col, n, p, 0);
    } else {
      counters_.degraded_reads.fetch_add(1, std::memory_order_relaxed);
      degraded = NewReconstructOp(c, u, loc.stripe, 0);
      AddPiece(degraded, loc.data_index, col, n, p);
    }
    pos += n;
    p += n;
  }
  if (degraded != nullptr) c->ready.push_back(degraded);
}

bool RaidDeviceImpl::StripeHasUnreadable(const DataLocation& first, uint64_t left) const {
  // The request's pieces in first.stripe: data indexes first.data_index.. while bytes are left.
  uint64_t col_end = (first.member_pos & (geometry_.chunk_bytes() - 1)) +
                     std::min<uint64_t>(left, first.chunk_left_bytes);
  left -= std::min<uint64_t>(left, first.chunk_left_bytes);
  const uint64_t base = first.stripe << geometry_.chunk_shift();
  for (uint32_t d = first.data_index; d < geometry_.data_members(); ++d) {
    if (d > first.data_index) {
      if (left == 0) break;
      col_end = std::min<uint64_t>(left, geometry_.chunk_bytes());
      left -= col_end;
    }
    if (!meta_->Readable(DataSlot(first.stripe, d), base + col_end)) return true;
  }
  return false;
}

StripeOp* RaidDeviceImpl::NewReconstructOp(ThreadCtx* c, UserIo* u, uint64_t stripe,
                                           uint32_t bad_mask) {
  StripeOp* op = NewStripeOp(c);
  op->work = StripeWork::kRead;
  op->stripe = stripe;
  op->col_begin = ~0u;
  op->col_end = 0;
  op->bad_mask = bad_mask;
  AddChild(u, op);
  return op;
}

void RaidDeviceImpl::AddPiece(StripeOp* op, uint32_t data_index, uint32_t col, uint32_t length,
                              char* buf) {
  op->piece[data_index] = {col, col + length, buf};
  op->col_begin = std::min(op->col_begin, col);
  op->col_end = std::max(op->col_end, col + length);
}

void RaidDeviceImpl::StartReconstruct(ThreadCtx* c, UserIo* u, uint64_t stripe,
                                      uint32_t data_index, uint32_t col, uint32_t length,
                                      char* buf, uint32_t bad_mask) {
  StripeOp* op = NewReconstructOp(c, u, stripe, bad_mask);
  AddPiece(op, data_index, col, length, buf);
  c->ready.push_back(op);
}

void RaidDeviceImpl::AdvancePiece(PieceOp* op) {
  const Status& st = op->ios[0].req.status;
  if (!st.ok()) {
    if (op->op == IoOp::kRead && geometry_.level() != RaidLevel::kRaid0) {
      // Read error on one member: reconstruct the piece, then rewrite it (stripe_op.cc).
      StartReconstruct(op->ctx, op->user, op->stripe, op->data_index, op->col, op->length,
                       op->buf, 1u << op->slot);
    } else if (geometry_.level() == RaidLevel::kRaid0) {
      // RAID 0 keeps one copy: the member's range is lost. Fail the member so later I/O to
      // its ranges is refused at once instead of trusting it again.
      (void)HandleMemberError(op->slot);
      op->status = Status::DataLoss(name_ + ": " + std::string(IoOpName(op->op)) + " of member " +
                                    meta_->name(op->slot) +
                                    " failed and RAID 0 has no redundancy: " + st.ToString());
    } else {
      op->status = st.WithContext(name_ + ": member " + meta_->name(op->slot));
    }
  }
  FinishOp(op);
}

// Emits the stripe heads of one stripe. piece[d] holds the written columns of data block d.
static void EachHead(const DataPiece* piece, uint32_t data_members, uint64_t unit_bytes,
                     const std::function<void(uint32_t, uint32_t)>& emit) {
  uint32_t lo = ~0u, hi = 0;
  std::vector<uint32_t> cuts;
  for (uint32_t d = 0; d < data_members; ++d) {
    if (piece[d].empty()) continue;
    lo = std::min(lo, piece[d].begin);
    hi = std::max(hi, piece[d].end);
    cuts.push_back(piece[d].begin);
    cuts.push_back(piece[d].end);
  }
  if (cuts.empty()) return;
  if (unit_bytes != 0) {
    const uint32_t u = static_cast<uint32_t>(unit_bytes);
    for (uint32_t cb = lo / u * u; cb < hi; cb += u) emit(cb, cb + u);
    return;
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    for (uint32_t cb = cuts[i]; cb < cuts[i + 1];) {
      const uint32_t next_boundary = (cb / kMaxDynamicHeadBytes + 1) * kMaxDynamicHeadBytes;
      const uint32_t ce = std::min(cuts[i + 1], next_boundary);
      emit(cb, ce);
      cb = ce;
    }
  }
}

Status RaidDeviceImpl::StartWrite(ThreadCtx* c, UserIo* u) {
  const uint64_t begin = u->req->offset;
  const uint64_t end = begin + u->req->length;
  if (geometry_.level() == RaidLevel::kRaid0) {
    char* p = u->req->buf;
    for (uint64_t pos = begin; pos < end;) {
      const DataLocation loc = geometry_.Locate(pos);
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(end - pos, loc.chunk_left_bytes));
      if (!meta_->Writable(loc.member)) {
        return Status::DataLoss(name_ + ": member " + meta_->name(loc.member) + " failed");
      }
      PieceOp* op = NewPieceOp(c);
      op->op = IoOp::kWrite;
      op->slot = loc.member;
      op->ResetIos(1);
      AddChild(u, op);
      QueueIo(op, loc.member, IoOp::kWrite, loc.member_pos, n, p);
      pos += n;
      p += n;
    }
    return Status::OK();
  }
  FOLIO_RETURN_IF_ERROR(EnsureActive());
  const int shift = geometry_.chunk_shift();
  const uint64_t first_stripe = geometry_.Locate(begin).stripe;
  const uint64_t last_stripe = geometry_.Locate(end - 1).stripe;
  u->bitmap_first = bitmap_->RegionOf(first_stripe << shift);
  u->bitmap_last = bitmap_->RegionOf(((last_stripe + 1) << shift) - 1);
  u->bitmap_held = true;
  const uint64_t need = bitmap_->StartWrite(u->bitmap_first, u->bitmap_last);
  if (need != 0) FOLIO_RETURN_IF_ERROR(PersistBitmap(need, /*flush=*/true));

  const uint32_t k = geometry_.data_members();
  char* p = u->req->buf;
  for (uint64_t stripe = first_stripe, pos = begin; stripe <= last_stripe; ++stripe) {
    DataPiece piece[kRaidMaxMembers];
    const uint64_t stripe_end = std::min(end, (stripe + 1) * geometry_.stripe_data_bytes());
    while (pos < stripe_end) {
      const DataLocation loc = geometry_.Locate(pos);
      const uint32_t n =
          static_cast<uint32_t>(std::min<uint64_t>(stripe_end - pos, loc.chunk_left_bytes));
      const uint32_t col = static_cast<uint32_t>(loc.member_pos & (geometry_.chunk_bytes() - 1));
      piece[loc.data_index] = {col, col + n, p};
      pos += n;
      p += n;
    }
    EachHead(piece, k, unit_bytes_, [&](uint32_t cb, uint32_t ce) {
      StripeOp* op = NewStripeOp(c);
      op->work = StripeWork::kWrite;
      op->stripe = stripe;
      op->col_begin = cb;
      op->col_end = ce;
      for (uint32_t d = 0; d < k; ++d) {
        const uint32_t b = std::max(cb, piece[d].begin);
        const uint32_t e = std::min(ce, piece[d].end);
        if (b < e) op->piece[d] = {b, e, piece[d].buf + (b - piece[d].begin)};
      }
      AddChild(u, op);
      c->ready.push_back(op);
    });
  }
  return Status::OK();
}

void RaidDeviceImpl::StartFlush(ThreadCtx* c, UserIo* u) {
  if (bitmap_ != nullptr) {
    u->flush_token = bitmap_->FlushBegin();
    // Bits cleared by earlier flushes reach the disk now; this flush makes them durable.
    Status st = PersistBitmap(0, /*flush=*/false, &u->bitmap_written);
    if (!st.ok() && u->status.ok()) u->status = st;
  }
  FlushOp* op = new FlushOp();
  op->ctx = c;
  op->ResetIos(geometry_.members());
  AddChild(u, op);
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (meta_->Writable(s)) QueueIo(op, s, IoOp::kFlush, 0, 0, nullptr);
  }
  if (op->pending == 0) {
    op->status = Status::DataLoss(name_ + ": no member left to flush");
    c->ready.push_back(op);
  }
}

void RaidDeviceImpl::AdvanceFlush(FlushOp* op) {
  for (uint32_t i = 0; i < op->ios_used; ++i) {
    const MemberIo& io = op->ios[i];
    if (io.req.status.ok()) continue;
    if (!HandleMemberError(io.slot) && op->status.ok()) {
      op->status = io.req.status.WithContext(name_ + ": flush of member " +
                                             meta_->name(io.slot));
    }
  }
  FinishOp(op);
}

}  // namespace folio::raid
