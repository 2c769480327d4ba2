// The engine of RaidDeviceImpl: per-thread contexts, Submit / Poll, member submission and
// completion, and the completion of operations and user requests.
//
// Flow on one thread:
//   Submit(user requests) -> StartUserIo creates operations on ctx->ready -> Drive
//   Drive: advance ready operations (they queue member requests), submit the queued member
//          requests, one batch per member so the member can merge them
//   member completion callback (inside a member's Poll): op->pending--, at 0 the operation
//          goes back on ctx->ready; nothing else runs inside the callback
//   Poll: Drive, deliver completed user requests (run their callbacks), and when more is
//          wanted, WaitForProgress: poll the members this thread has requests on, or sleep
//          until a stripe lock this thread waits for is released.

#include <algorithm>
#include <cstdlib>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "io/device_util.h"
#include "raid/raid_device_impl.h"

namespace folio::raid {
namespace {

void OnMemberDone(IoRequest* r) {
  MemberIo* io = reinterpret_cast<MemberIo*>(r);
  Op* op = io->op;
  FOLIO_CHECK(op->pending > 0);
  if (--op->pending == 0) op->ctx->ready.push_back(op);
}

// Adds the thread CPU time of a scope to a counter.
class CpuScope {
 public:
  explicit CpuScope(std::atomic<uint64_t>* counter) : counter_(counter), t0_(ThreadCpuNs()) {}
  ~CpuScope() { counter_->fetch_add(ThreadCpuNs() - t0_, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t>* counter_;
  uint64_t t0_;
};

}  // namespace

void Op::ResetIos(uint32_t capacity) {
  FOLIO_CHECK(pending == 0);
  if (capacity > ios_capacity) {
    ios.reset(new MemberIo[capacity]);
    ios_capacity = capacity;
  }
  ios_used = 0;
}

void Op::ResetOp() {
  ctx = nullptr;
  user = nullptr;
  sync = nullptr;
  pending = 0;
  status = Status::OK();
  ios_used = 0;
}

void StripeOp::Reset() {
  ResetOp();
  work = StripeWork::kWrite;
  mode = StripeMode::kNone;
  phase = StripePhase::kStart;
  stripe = 0;
  col_begin = col_end = 0;
  for (DataPiece& p : piece) p = DataPiece();
  bad_mask = lost_mask = write_mask = 0;
  locked = counted_wait = false;
  for (char*& b : buf) b = nullptr;
  buf_count = 0;
  mismatch = repaired = unsynced = false;
}

ThreadCtx::~ThreadCtx() {
  for (StripeOp* op : stripe_pool) delete op;
  for (PieceOp* op : piece_pool) delete op;
}

StripeOp* RaidDeviceImpl::NewStripeOp(ThreadCtx* c) {
  StripeOp* op;
  if (c->stripe_pool.empty()) {
    op = new StripeOp();
  } else {
    op = c->stripe_pool.back();
    c->stripe_pool.pop_back();
  }
  op->ctx = c;
  return op;
}

PieceOp* RaidDeviceImpl::NewPieceOp(ThreadCtx* c) {
  PieceOp* op;
  if (c->piece_pool.empty()) {
    op = new PieceOp();
  } else {
    op = c->piece_pool.back();
    c->piece_pool.pop_back();
  }
  op->ctx = c;
  return op;
}

MemberIo* Op::NextIo() {
  FOLIO_CHECK(ios_used < ios_capacity);
  return &ios[ios_used++];
}

// An arena for the stripe cache of an array that was given none: THP-backed where the machine
// allows, pre-faulted in the background so creating an array does not wait for it. Without
// one (the arena could not be made) the buffers come from the heap.
static std::unique_ptr<FolioArena> NewStripeArena(uint64_t bytes) {
  ArenaOptions o;
  o.capacity_bytes = bytes;
  o.prefault_in_background = true;
  auto arena = FolioArena::Create(o);
  return arena.ok() ? std::move(arena).value() : nullptr;
}

RaidDeviceImpl::RaidDeviceImpl(const StripeGeometry& geometry, std::unique_ptr<ArrayMeta> meta,
                               std::unique_ptr<WriteIntentBitmap> bitmap, uint64_t unit_bytes,
                               const RaidOptions& options)
    : geometry_(geometry),
      meta_(std::move(meta)),
      bitmap_(std::move(bitmap)),
      unit_bytes_(unit_bytes),
      options_(options),
      name_("raid" + std::to_string(static_cast<int>(geometry.level())) + "(" +
            meta_->name(0) + ",...)"),
      own_arena_(options.arena == nullptr ? NewStripeArena(options.stripe_cache_bytes) : nullptr),
      pool_(options.stripe_cache_bytes,
            options.arena != nullptr ? options.arena : own_arena_.get()) {}

RaidDeviceImpl::~RaidDeviceImpl() {
  if (!stopped_.load()) (void)Stop();
}

uint64_t RaidDeviceImpl::NowMs() const { return MonotonicNowMs(); }

ThreadCtx* RaidDeviceImpl::Ctx() {
  auto state = threads_.GetOrCreate(
      []() -> Result<std::unique_ptr<io_internal::ThreadState>> {
        return std::unique_ptr<io_internal::ThreadState>(new ThreadCtx());
      });
  FOLIO_CHECK(state.ok());
  return static_cast<ThreadCtx*>(*state);
}

void RaidDeviceImpl::QueueIo(Op* op, uint32_t slot, IoOp kind, uint64_t member_pos,
                             uint64_t length, char* buf) {
  ThreadCtx* c = op->ctx;
  BlockDevice* dev = meta_->device(slot);
  FOLIO_CHECK_MSG(dev != nullptr, "member request to a slot without a device");
  MemberIo* io = op->NextIo();
  io->op = op;
  io->slot = slot;
  io->device = dev;
  if (kind == IoOp::kFlush) {
    io->req.Reset(kind, 0, 0, nullptr);
  } else {
    io->req.Reset(kind, meta_->data_offset_bytes() + member_pos, length, buf);
  }
  io->req.done = OnMemberDone;
  io->req.ctx = io;
  ++op->pending;
  if (c->batch_device[slot] != dev && !c->batch[slot].empty()) {
    // The slot's device was replaced since the batch began: send the old batch first.
    Status st = c->batch_device[slot]->Submit(c->batch[slot]);
    if (!st.ok()) {
      for (IoRequest* r : c->batch[slot]) {
        r->status = st;
        OnMemberDone(r);
      }
    }
    c->batch[slot].clear();
  }
  c->batch[slot].push_back(&io->req);
  c->batch_device[slot] = dev;
  if (std::find(c->devices.begin(), c->devices.end(), dev) == c->devices.end()) {
    c->devices.push_back(dev);
  }
}

Status RaidDeviceImpl::SubmitBatches(ThreadCtx* c) {
  for (uint32_t slot = 0; slot < geometry_.members(); ++slot) {
    if (c->batch[slot].empty()) continue;
    Status st = c->batch_device[slot]->Submit(c->batch[slot]);
    if (!st.ok()) {
      // Not accepted at all: complete them here with the device's status.
      for (IoRequest* r : c->batch[slot]) {
        r->status = st;
        OnMemberDone(r);
      }
    }
    c->batch[slot].clear();
  }
  return Status::OK();
}

void RaidDeviceImpl::Drive(ThreadCtx* c) {
  // Deferred operations are retried once per Drive, and only after a stripe was released
  // since the last retry (the generation moved); otherwise they wait in WaitForProgress.
  if (!c->deferred.empty() && locks_.generation() != c->deferred_generation) {
    c->deferred_generation = locks_.generation();
    c->ready.insert(c->ready.end(), c->deferred.begin(), c->deferred.end());
    c->deferred.clear();
  }
  std::vector<Op*> work;
  while (true) {
    if (c->ready.empty()) {
      (void)SubmitBatches(c);
      if (c->ready.empty()) break;  // a refused batch may have readied operations
      continue;
    }
    work.clear();
    work.swap(c->ready);
    for (Op* op : work) {
      switch (op->kind) {
        case OpKind::kPiece: AdvancePiece(static_cast<PieceOp*>(op)); break;
        case OpKind::kStripe: AdvanceStripe(static_cast<StripeOp*>(op)); break;
        case OpKind::kFlush: AdvanceFlush(static_cast<FlushOp*>(op)); break;
      }
    }
  }
}

void RaidDeviceImpl::Defer(Op* op) {
  ThreadCtx* c = op->ctx;
  if (c->deferred.empty()) c->deferred_generation = locks_.generation();
  c->deferred.push_back(op);
}

Status RaidDeviceImpl::WaitForProgress(ThreadCtx* c) {
  bool progressed = false;
  for (BlockDevice* dev : c->devices) {
    if (dev->InFlight() == 0) continue;
    Result<size_t> n = dev->Poll(0);
    if (!n.ok()) return n.status();
    progressed |= *n > 0;
  }
  if (progressed || !c->ready.empty()) return Status::OK();
  for (BlockDevice* dev : c->devices) {
    if (dev->InFlight() == 0) continue;
    Result<size_t> n = dev->Poll(1);
    return n.ok() ? Status::OK() : n.status();
  }
  if (!c->deferred.empty()) {
    locks_.WaitForUnlock(c->deferred_generation, std::chrono::microseconds(1000));
    // Buffers come back with unlocks; a wait that timed out retries anyway.
    c->deferred_generation = ~uint64_t{0};
  }
  return Status::OK();
}

void RaidDeviceImpl::AddChild(UserIo* u, Op* op) {
  op->user = u;
  ++u->children;
}

void RaidDeviceImpl::FinishOp(Op* op) {
  FOLIO_CHECK(op->pending == 0);
  if (op->sync != nullptr) {
    OnSyncOpDone(static_cast<StripeOp*>(op));
  } else if (op->user != nullptr) {
    ReleaseChild(op->ctx, op->user, op->status);
  }
  // Keep a bounded number of operations per thread for reuse.
  constexpr size_t kPoolMax = 1024;
  ThreadCtx* c = op->ctx;
  if (op->kind == OpKind::kStripe && c->stripe_pool.size() < kPoolMax) {
    static_cast<StripeOp*>(op)->Reset();
    c->stripe_pool.push_back(static_cast<StripeOp*>(op));
  } else if (op->kind == OpKind::kPiece && c->piece_pool.size() < kPoolMax) {
    static_cast<PieceOp*>(op)->Reset();
    c->piece_pool.push_back(static_cast<PieceOp*>(op));
  } else {
    delete op;
  }
}

void RaidDeviceImpl::ReleaseChild(ThreadCtx* c, UserIo* u, const Status& status) {
  if (!status.ok() && u->status.ok()) u->status = status;
  FOLIO_CHECK(u->children > 0);
  if (--u->children > 0) return;
  IoRequest* req = u->req;
  if (u->bitmap_held) bitmap_->EndWrite(u->bitmap_first, u->bitmap_last, NowMs());
  if (req->op == IoOp::kFlush && bitmap_ != nullptr && u->status.ok()) {
    // The members were flushed after the flush's bitmap write: that image is durable now.
    if (u->bitmap_written != 0) bitmap_->MarkDurable(u->bitmap_written);
    bitmap_->FlushDone(u->flush_token, NowMs(), options_.bitmap_clear_delay_ms);
  }
  stats_.RecordRequest(req->op, req->length, MonotonicNowNs() - req->submit_ns);
  if (!u->status.ok()) stats_.RecordError();
  req->status = std::move(u->status);
  c->completed.push_back(req);
  --c->active;
  delete u;
}

bool RaidDeviceImpl::HandleMemberError(uint32_t slot) {
  if (meta_->Writable(slot)) (void)meta_->MarkFailed(slot);
  return meta_->failed_count() <= RaidFailureTolerance(geometry_.level(), geometry_.members());
}

Status RaidDeviceImpl::PersistBitmap(uint64_t version, bool flush, uint64_t* written) {
  std::lock_guard<std::mutex> lock(bitmap_persist_mu_);
  // version 0: write out whatever changed (cleared bits); otherwise make `version` durable.
  if (version != 0 ? bitmap_->IsDurable(version) : !bitmap_->ImageChanged()) {
    return Status::OK();
  }
  AlignedBuffer image(bitmap_->image_bytes());
  const uint64_t v = bitmap_->Snapshot(image.data());
  Status st = meta_->WriteBitmap(image.data(), flush);
  // Written without a member flush, the image may still be lost to a crash: a writer that
  // needs one of its bits must not skip its own flushed write for it.
  if (st.ok() && flush) bitmap_->MarkDurable(v);
  if (st.ok() && written != nullptr) *written = v;
  return st;
}

Status RaidDeviceImpl::EnsureActive() {
  if (active_.load(std::memory_order_acquire)) return Status::OK();
  Status st = meta_->Update([](Superblock* sb) { sb->flags &= ~kSuperblockFlagClean; });
  if (st.ok()) active_.store(true, std::memory_order_release);
  return st;
}

Status RaidDeviceImpl::Submit(std::span<IoRequest* const> batch) {
  if (stopped_.load(std::memory_order_acquire)) {
    return Status::IOError(name_ + ": array is stopped");
  }
  CpuScope cpu(&counters_.cpu_ns);
  ThreadCtx* c = Ctx();
  for (IoRequest* req : batch) {
    while (c->active >= options_.queue_depth) {
      Drive(c);
      if (c->active < options_.queue_depth) break;
      FOLIO_RETURN_IF_ERROR(WaitForProgress(c));
    }
    ++c->in_flight;
    ++c->active;
    StartUserIo(c, req);
  }
  Drive(c);
  return Status::OK();
}

void RaidDeviceImpl::Deliver(ThreadCtx* c, size_t* delivered) {
  while (!c->completed.empty()) {
    std::vector<IoRequest*> done;
    done.swap(c->completed);
    for (IoRequest* req : done) {
      --c->in_flight;
      ++*delivered;
      IoDoneFn fn = req->done;
      req->completed.store(true, std::memory_order_release);
      if (fn != nullptr) fn(req);
    }
  }
}

Result<size_t> RaidDeviceImpl::Poll(size_t min_complete) {
  ThreadCtx* c = Ctx();
  size_t delivered = 0;
  while (true) {
    {
      CpuScope cpu(&counters_.cpu_ns);
      Drive(c);
    }
    Deliver(c, &delivered);
    if (delivered >= min_complete || c->in_flight == 0) return delivered;
    if (!c->ready.empty() || !c->completed.empty()) continue;
    CpuScope cpu(&counters_.cpu_ns);
    FOLIO_RETURN_IF_ERROR(WaitForProgress(c));
  }
}

size_t RaidDeviceImpl::InFlight() const {
  io_internal::ThreadState* s = threads_.Find();
  return s == nullptr ? 0 : static_cast<ThreadCtx*>(s)->in_flight;
}

void RaidDeviceImpl::ResetStats() {
  stats_.Reset();
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (meta_->device(s) != nullptr) meta_->device(s)->ResetStats();
  }
  counters_.full_stripe_writes = 0;
  counters_.rmw_writes = 0;
  counters_.rcw_writes = 0;
  counters_.degraded_writes = 0;
  counters_.degraded_reads = 0;
  counters_.read_errors_corrected = 0;
  counters_.stripe_cache_waits = 0;
  counters_.parity_ns = 0;
  counters_.cpu_ns = 0;
}

}  // namespace folio::raid
