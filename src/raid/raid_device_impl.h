// RaidDeviceImpl: the RaidDevice behind folio/raid.h. Its methods are spread over
//   raid_device.cc   the engine: per-thread contexts, Submit / Poll, member submission,
//                    operation completion, user request completion
//   raid_plan.cc     splitting user requests into piece, stripe and flush operations
//   stripe_op.cc     the stripe head state machine (lock, buffers, mode, reads, writes)
//   stripe_compute.cc parity work of each stripe mode
//   raid_sync.cc     resync / check / repair / rebuild
//   raid_admin.cc    create, assemble, status, stats, fail, replace, stop
//
// Lock order (outer first): ArrayMeta::mu_ (metadata writes, may do member I/O)
//   -> bitmap_persist_mu_ -> WriteIntentBitmap::mu_ / StripeLockTable::mu_ /
//   StripeBufferPool::mu_ (leaf locks, never held across I/O or callbacks).
// No lock is held while running a user callback.
//
// Thread safety: see folio/raid.h.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/clock.h"
#include "folio/arena.h"
#include "folio/raid.h"
#include "io/per_thread.h"
#include "raid/array_meta.h"
#include "raid/bitmap.h"
#include "raid/buffer_pool.h"
#include "raid/geometry.h"
#include "raid/raid_ops.h"
#include "raid/stripe_lock.h"
#include "raid/sync_machine.h"

namespace folio::raid {

struct SyncRun;

// Counters of the I/O path (RaidStats without the member stats).
struct PathCounters {
  std::atomic<uint64_t> full_stripe_writes{0}, rmw_writes{0}, rcw_writes{0}, degraded_writes{0};
  std::atomic<uint64_t> degraded_reads{0}, read_errors_corrected{0}, stripe_cache_waits{0};
  std::atomic<uint64_t> parity_ns{0}, cpu_ns{0};
};

Result<std::unique_ptr<RaidDevice>> CreateImpl(std::vector<RaidMember> members,
                                               const RaidCreateOptions& create,
                                               const RaidOptions& options);
Result<std::unique_ptr<RaidDevice>> AssembleImpl(std::vector<RaidMember> members,
                                                 const RaidOptions& options,
                                                 const RaidAssembleOptions& assemble);

class RaidDeviceImpl final : public RaidDevice {
 public:
  RaidDeviceImpl(const StripeGeometry& geometry, std::unique_ptr<ArrayMeta> meta,
                 std::unique_ptr<WriteIntentBitmap> bitmap, uint64_t unit_bytes,
                 const RaidOptions& options);
  ~RaidDeviceImpl() override;

  // ---- BlockDevice
  std::string name() const override { return name_; }
  uint32_t logical_block_bytes() const override { return kBlockBytes; }
  uint64_t size_bytes() const override { return geometry_.array_bytes(); }
  uint32_t queue_depth() const override { return options_.queue_depth; }
  uint64_t max_request_bytes() const override { return options_.max_request_bytes; }
  bool supports_trim() const override { return false; }
  Status Submit(std::span<IoRequest* const> batch) override;
  Result<size_t> Poll(size_t min_complete) override;
  size_t InFlight() const override;
  DeviceStatsSnapshot stats() const override { return stats_.Snapshot(); }
  void ResetStats() override;

  // ---- RaidDevice (raid_admin.cc, raid_sync.cc)
  RaidStatus Describe() const override;
  RaidStats raid_stats() const override;
  int SlotOf(std::string_view name) const override;
  Result<RaidSyncReport> Sync(RaidSyncAction action, const RaidSyncOptions& options) override;
  std::optional<RaidSyncAction> PendingSync() const override;
  Status FailMember(uint32_t slot) override;
  Status ReplaceMember(uint32_t slot, RaidMember fresh) override;
  Status CheckReplacement(uint32_t slot, const RaidMember& fresh) const override;
  Status Stop() override;
  // raid_heal.cc
  Status ReadAsIfMissing(uint32_t slot, uint64_t offset, uint64_t length, char* buf) override;
  Status RepairMember(uint32_t slot, uint64_t offset, uint64_t length, const char* data) override;

  static constexpr uint32_t kBlockBytes = 4096;

  // ---- Engine (raid_device.cc)
  ThreadCtx* Ctx();
  // Operations from the thread's pool (ctx set, everything else as constructed).
  StripeOp* NewStripeOp(ThreadCtx* c);
  PieceOp* NewPieceOp(ThreadCtx* c);
  // Queues a member request of `op` for the end of the current Drive.
  void QueueIo(Op* op, uint32_t slot, IoOp kind, uint64_t member_pos, uint64_t length,
               char* buf);
  // Advances every ready operation and submits the queued member requests.
  void Drive(ThreadCtx* c);
  // Waits until a member request of this thread completes or a deferred operation may retry.
  Status WaitForProgress(ThreadCtx* c);
  // Parks an operation until a stripe lock or stripe buffers are released.
  void Defer(Op* op);
  // The operation finished (op->status set): reports to its user request or sync run and
  // deletes it.
  void FinishOp(Op* op);
  void AddChild(UserIo* u, Op* op);
  // Drops one child reference of a user request (recording a failure); the last one
  // completes the request.
  void ReleaseChild(ThreadCtx* c, UserIo* u, const Status& status);
  // Marks a member failed after an I/O error; returns whether the array still has its data.
  bool HandleMemberError(uint32_t slot);
  // Writes the bitmap image to the members when version `version` is not yet durable (0:
  // when the image changed since it last was). With `flush` the members are flushed and the
  // written version is durable when this returns; without, it is not (the caller makes it
  // durable after its own member flush: MarkDurable(*written)).
  Status PersistBitmap(uint64_t version, bool flush, uint64_t* written = nullptr);
  uint64_t NowMs() const;

  // ---- Planning (raid_plan.cc)
  void StartUserIo(ThreadCtx* c, IoRequest* req);
  void StartRead(ThreadCtx* c, UserIo* u);
  Status StartWrite(ThreadCtx* c, UserIo* u);
  void StartFlush(ThreadCtx* c, UserIo* u);
  void AdvancePiece(PieceOp* op);
  void AdvanceFlush(FlushOp* op);
  // A read piece that cannot be (or was not) read directly: reconstruct it.
  void StartReconstruct(ThreadCtx* c, UserIo* u, uint64_t stripe, uint32_t data_index,
                        uint32_t col, uint32_t length, char* buf, uint32_t bad_mask);
  // A reconstructing read op of `stripe` with no pieces yet; AddPiece widens its columns.
  StripeOp* NewReconstructOp(ThreadCtx* c, UserIo* u, uint64_t stripe, uint32_t bad_mask);
  static void AddPiece(StripeOp* op, uint32_t data_index, uint32_t col, uint32_t length,
                       char* buf);
  // Whether a read starting at `first` with `left` bytes to go has a piece in first.stripe on
  // a member that cannot serve it.
  bool StripeHasUnreadable(const DataLocation& first, uint64_t left) const;

  // ---- Stripes (stripe_op.cc, stripe_compute.cc)
  void AdvanceStripe(StripeOp* op);
  bool AcquireStripe(StripeOp* op);
  void ReleaseBuffers(StripeOp* op);
  void ReleaseStripe(StripeOp* op);
  StripeMode ChooseMode(const StripeOp* op) const;
  uint32_t BufferMask(const StripeOp* op) const;
  void AfterReads(StripeOp* op);
  void AfterWrites(StripeOp* op);
  // A write head's outcome once its members' write errors are handled: DataLoss when data it
  // wrote is no longer held by enough members (its own member lost and more roles of the
  // stripe lost than the level tolerates); `write_failed` are the slots whose write failed.
  Status WriteLossStatus(const StripeOp* op, uint32_t write_failed) const;
  void IssueReads(StripeOp* op);
  void IssueWrites(StripeOp* op);
  bool NeedsResync(uint64_t stripe) const;
  uint32_t ParityMask(uint64_t stripe) const;
  uint32_t DataSlot(uint64_t stripe, uint32_t d) const { return geometry_.DataMember(stripe, d); }
  // Stripe blocks in parity order (D_0..D_k-1, P, Q) from per-slot buffers; lost slots -> roles.
  void BlocksOf(const StripeOp* op, char** blocks) const;
  uint32_t LostRoles(const StripeOp* op, uint32_t slots, uint32_t* roles) const;
  void ComputeWrite(StripeOp* op);
  Status ComputeReconstruct(StripeOp* op);
  void ComputeSync(StripeOp* op);
  // Slots a stripe head cannot read (failed, beyond the rebuild checkpoint, bad_mask).
  uint32_t UnreadableMask(const StripeOp* op) const;
  uint64_t MemberEnd(const StripeOp* op) const {
    return (op->stripe << geometry_.chunk_shift()) + op->col_end;
  }
  // Parity timing wrapper.
  template <typename Fn>
  void TimeParity(Fn&& fn);

  // ---- Sync (raid_sync.cc): each step of a run, in the order Sync() takes them.
  // The pass an action needs now: start, unit, window. Errors: nothing to rebuild.
  Result<SyncConfig> PlanSync(RaidSyncAction action, const RaidSyncOptions& opt) const;
  void BeginSyncPass(SyncRun* run, const SyncConfig& cfg);
  // Issues units while the window has room (resync skips regions needing none).
  void RefillSync(SyncRun* run);
  // One turn of the loop: stop conditions, throttle, refill, drive, checkpoint, progress,
  // wait. Returns false when the pass is over.
  Result<bool> StepSync(SyncRun* run);
  // Flush the members, then record what the flushed data allows (docs/format/raid.md).
  Status PersistCheckpoint(SyncRun* run, bool final);
  // Flushes every writable member; one that fails is failed. Errors: no redundancy left.
  Status FlushMembersForCheckpoint();
  void PublishSyncProgress(SyncRun* run, double bps);
  bool RebuildLeft() const;
  void OnSyncOpDone(StripeOp* op);
  // Parity work of a sync unit (after its reads).
  void ComputeSyncMirror(StripeOp* op);
  // Recomputes parity from the data; marks mismatches of readable parity, and with `write`
  // queues the recomputed parity for every slot that differs or is lost and writable.
  bool VerifyParity(StripeOp* op, bool write);
  // A unit with unreadable members where parity is untrusted (region needs a resync).
  void ComputeSyncUntrusted(StripeOp* op);

  const StripeGeometry& geometry() const { return geometry_; }
  ArrayMeta& meta() { return *meta_; }
  WriteIntentBitmap* bitmap() { return bitmap_.get(); }
  uint64_t unit_bytes() const { return unit_bytes_; }
  PathCounters& counters() { return counters_; }
  // The superblock says not clean (set by Assemble; the first write sets it otherwise).
  void SetActive(bool active) { active_.store(active, std::memory_order_release); }
  // What a forced assembly took back (Describe().forced). REQUIRES: before any other use.
  void SetForced(std::vector<RaidForcedMember> forced) { forced_ = std::move(forced); }

 private:
  Status EnsureActive();
  Status CheckHealArgs(uint32_t slot, uint64_t offset, uint64_t length) const;
  Status SubmitBatches(ThreadCtx* c);
  void Deliver(ThreadCtx* c, size_t* delivered);

  const StripeGeometry geometry_;
  std::unique_ptr<ArrayMeta> meta_;
  std::unique_ptr<WriteIntentBitmap> bitmap_;  // null for RAID 0
  const uint64_t unit_bytes_;                   // 0 = dynamic
  const RaidOptions options_;
  const std::string name_;
  StripeLockTable locks_;
  // The stripe cache's folios: options_.arena, or this array's own arena without one.
  std::unique_ptr<FolioArena> own_arena_;
  StripeBufferPool pool_;
  PathCounters counters_;
  DeviceStats stats_;
  std::mutex bitmap_persist_mu_;
  std::atomic<bool> active_{false};   // superblock says not clean
  std::atomic<bool> stopped_{false};
  std::mutex retired_mu_;
  std::vector<std::unique_ptr<BlockDevice>> retired_;  // replaced devices, kept for pollers
  std::vector<RaidForcedMember> forced_;  // set once at assembly, then read-only
  std::atomic<bool> sync_running_{false};
  std::atomic<uint64_t> user_requests_{0};  // for the sync's foreground-I/O check
  mutable std::mutex progress_mu_;
  RaidSyncProgress progress_;  // GUARDED_BY(progress_mu_): of the running sync
  io_internal::PerThreadRegistry threads_;  // last: thread states die first
};

template <typename Fn>
void RaidDeviceImpl::TimeParity(Fn&& fn) {
  const uint64_t t0 = MonotonicNowNs();
  fn();
  counters_.parity_ns.fetch_add(MonotonicNowNs() - t0, std::memory_order_relaxed);
}

}  // namespace folio::raid
