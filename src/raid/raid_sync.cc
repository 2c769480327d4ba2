// Resync, check, repair and rebuild: a walk over member positions in stripe units, each unit a
// StripeOp of work kSync, run on the caller's thread. The bookkeeping (what is issued, how far
// a checkpoint may go, which regions and rebuild positions it may record) is SyncMachine's
// (sync_machine.h); this file does the I/O and the parity work of each unit.
//
// The window bounds the sync bytes in flight per member (md's rule, 32 units, or a size);
// refills are issued when half the window is free, as one batch per member so the member
// merges them into large requests. Every second (and at the end or a stop) a checkpoint
// flushes the members, then records what the flushed data allows (PersistCheckpoint; the
// order is the transition table of docs/format/raid.md). Throttling follows md's
// speed_limit_min / speed_limit_max.
//
// A unit whose region needs a resync (parity untrusted after an unclean stop) and that has a
// member it cannot read is made consistent only when the redundancy left proves the result
// (ComputeSyncUntrusted); otherwise it is left unsynced: never counted as resynced, never
// used to rebuild a member.
#include <bit>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/check.h"
#include "raid/parity.h"
#include "raid/raid_device_impl.h"
#include "raid/sync_machine.h"

namespace folio::raid {

namespace {

uint64_t UnixMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

SyncAction StoredAction(RaidSyncAction a) {
  switch (a) {
    case RaidSyncAction::kResync: return SyncAction::kResync;
    case RaidSyncAction::kCheck: return SyncAction::kCheck;
    case RaidSyncAction::kRepair: return SyncAction::kRepair;
    case RaidSyncAction::kRebuild: return SyncAction::kNone;
  }
  return SyncAction::kNone;
}

}  // namespace

// Speed over a sliding window of marks, like md's sync_speed. Not in the anonymous namespace:
// SyncRun (declared in raid_device_impl.h) holds one.
class SpeedMeter {
 public:
  // Both marks at the start: a zero second mark would measure the first second against the
  // time since boot (a near-zero speed, so speed_limit_max would not hold in it).
  void Start(uint64_t now_ns) { marks_[0] = marks_[1] = now_ = {now_ns, 0}; }
  void Mark(uint64_t now_ns, uint64_t done) {
    if (now_ns - marks_[1].ns > 1000000000ull) {
      marks_[0] = marks_[1];
      marks_[1] = {now_ns, done};
    }
    now_ = {now_ns, done};
  }
  double BytesPerSecond() const {
    const double dt = static_cast<double>(now_.ns - marks_[0].ns) / 1e9;
    return dt > 0 ? static_cast<double>(now_.done - marks_[0].done) / dt : 0;
  }

 private:
  struct MarkAt {
    uint64_t ns = 0;
    uint64_t done = 0;
  };
  MarkAt marks_[2];
  MarkAt now_;
};

// One Sync call: the machine of the current pass and what the loop keeps between steps.
struct SyncRun {
  RaidSyncAction action = RaidSyncAction::kCheck;
  const RaidSyncOptions* opt = nullptr;
  ThreadCtx* ctx = nullptr;
  SyncMachine machine;
  RaidSyncReport report;
  Status status;  // the first unit error
  SpeedMeter speed;
  uint64_t t0 = 0;
  uint64_t last_checkpoint_ns = 0;
  uint64_t last_progress_ns = 0;
  uint64_t last_user = 0;
  uint64_t issued = 0;
  uint64_t checkpointed = ~uint64_t{0};
  bool hold = false;
};

void RaidDeviceImpl::ComputeSyncMirror(StripeOp* op) {
  const RaidSyncAction action = op->sync->action;
  const uint32_t n = geometry_.members();
  const uint32_t len = op->length();
  const uint32_t lost = op->lost_mask;
  const uint32_t readable = ~lost & ((n == 32) ? ~0u : (1u << n) - 1);
  if (readable == 0) {
    op->status = Status::DataLoss(name_ + ": stripe " + std::to_string(op->stripe) +
                                  ": no readable mirror");
    return;
  }
  // The first readable mirror is the one reads use where a resync is pending: copy it.
  const uint32_t first = std::countr_zero(readable);
  for (uint32_t s = 0; s < n; ++s) {
    if (s == first || !meta_->Writable(s)) continue;
    const bool target = (lost >> s) & 1;  // rebuilding, or a read error to correct
    if (!target && action == RaidSyncAction::kRebuild) continue;
    if (!target && std::memcmp(op->buf[s], op->buf[first], len) == 0) continue;
    if (!target) op->mismatch = true;
    if (!target && action == RaidSyncAction::kCheck) continue;
    std::memcpy(op->buf[s], op->buf[first], len);
    op->write_mask |= 1u << s;
  }
  op->repaired = op->mismatch && action != RaidSyncAction::kCheck;
}

bool RaidDeviceImpl::VerifyParity(StripeOp* op, bool write) {
  const uint32_t n = geometry_.members();
  const uint32_t k = geometry_.data_members();
  const uint32_t par = geometry_.parity_members();
  const uint32_t len = op->length();
  char* blocks[kRaidMaxMembers + 2];
  BlocksOf(op, blocks);
  char* p_new = op->buf[n];
  char* q_new = op->buf[n + 1];
  TimeParity([&] {
    if (par == 1) {
      XorGen({blocks, k}, p_new, len);
    } else {
      PqGen({blocks, k}, p_new, q_new, len);
    }
  });
  bool bad[2] = {false, false};
  uint32_t slot[2] = {geometry_.PMember(op->stripe), 0};
  if (par == 2) slot[1] = geometry_.QMember(op->stripe);
  for (uint32_t i = 0; i < par; ++i) {
    const bool lost = (op->lost_mask >> slot[i]) & 1;
    // A lost parity block is not compared: it is written when its slot takes writes.
    bad[i] = lost ? meta_->Writable(slot[i])
                  : std::memcmp(op->buf[n + i], op->buf[slot[i]], len) != 0;
    if (!lost && bad[i]) op->mismatch = true;
  }
  if (!write) return op->mismatch;
  for (uint32_t i = 0; i < par; ++i) {
    if (!bad[i]) continue;
    // The recomputed parity replaces the block (buf_list still frees both buffers).
    std::swap(op->buf[slot[i]], op->buf[n + i]);
    op->write_mask |= 1u << slot[i];
  }
  op->repaired = op->mismatch;
  return op->mismatch;
}

void RaidDeviceImpl::ComputeSyncUntrusted(StripeOp* op) {
  const RaidSyncAction action = op->sync->action;
  const uint32_t n = geometry_.members();
  const uint32_t k = geometry_.data_members();
  const uint32_t par = geometry_.parity_members();
  const uint32_t len = op->length();
  uint32_t roles[2];
  const uint32_t nlost = LostRoles(op, op->lost_mask, roles);
  uint32_t lost_data = 0;
  for (uint32_t i = 0; i < nlost; ++i) lost_data += roles[i] < k ? 1 : 0;
  if (lost_data == 0) {
    // Every data block is readable: the data is the truth (as in any resync). Recompute the
    // parity, write it where it differs and onto lost parity slots that take writes.
    VerifyParity(op, action != RaidSyncAction::kCheck);
    return;
  }
  if (par == 2 && nlost == 1) {
    // RAID 6 missing one data block: rebuild it from the others and P, then Q proves it.
    char* blocks[kRaidMaxMembers + 2];
    BlocksOf(op, blocks);
    TimeParity([&] { Recover({blocks, k + par}, par, {roles, 1}, len); });
    char* p_new = op->buf[n];
    char* q_new = op->buf[n + 1];
    TimeParity([&] { PqGen({blocks, k}, p_new, q_new, len); });
    if (std::memcmp(p_new, blocks[k], len) == 0 && std::memcmp(q_new, blocks[k + 1], len) == 0) {
      for (uint32_t s = 0; s < n; ++s) {
        if (((op->lost_mask >> s) & 1) && meta_->Writable(s) &&
            action != RaidSyncAction::kCheck) {
          op->write_mask |= 1u << s;
        }
      }
      return;
    }
  }
  // A data block is missing and nothing proves what it held: P (and Q) may be stale.
  op->unsynced = true;
}

void RaidDeviceImpl::ComputeSync(StripeOp* op) {
  if (geometry_.level() == RaidLevel::kRaid1) {
    ComputeSyncMirror(op);
    return;
  }
  const RaidSyncAction action = op->sync->action;
  const uint32_t k = geometry_.data_members();
  const uint32_t par = geometry_.parity_members();
  const uint32_t lost = op->lost_mask;
  if (std::popcount(lost) > static_cast<int>(par)) {
    op->status = Status::DataLoss(name_ + ": stripe " + std::to_string(op->stripe) + ": " +
                                  std::to_string(std::popcount(lost)) +
                                  " members unreadable, more than parity can rebuild");
    return;
  }
  if (lost == 0) {
    if (action != RaidSyncAction::kRebuild) {
      VerifyParity(op, action != RaidSyncAction::kCheck);
    }
    return;
  }
  if (NeedsResync(op->stripe)) {
    ComputeSyncUntrusted(op);
    return;
  }
  // Parity is trusted: recompute the lost blocks and write those that take writes
  // (rebuilding slots, read errors to correct).
  char* blocks[kRaidMaxMembers + 2];
  BlocksOf(op, blocks);
  uint32_t roles[2];
  const uint32_t nlost = LostRoles(op, lost, roles);
  TimeParity([&] { Recover({blocks, k + par}, par, {roles, nlost}, op->length()); });
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (((lost >> s) & 1) && meta_->Writable(s)) op->write_mask |= 1u << s;
  }
}

void RaidDeviceImpl::OnSyncOpDone(StripeOp* op) {
  SyncRun* run = op->sync;
  const uint64_t pos = (op->stripe << geometry_.chunk_shift()) + op->col_begin;
  run->report.done_bytes += op->length();
  ++run->report.stripes;
  if (op->mismatch) {
    ++run->report.mismatches;
    auto& list = run->report.mismatched_stripes;
    if (list.size() < 100 && (list.empty() || list.back() != op->stripe)) {
      list.push_back(op->stripe);
    }
  }
  if (op->repaired) ++run->report.repaired;
  UnitOutcome outcome = UnitOutcome::kConsistent;
  if (!op->status.ok()) {
    outcome = UnitOutcome::kFailed;
    if (run->status.ok()) run->status = op->status;
  } else if (op->unsynced) {
    outcome = UnitOutcome::kUnsynced;
    if (run->action == RaidSyncAction::kRebuild && run->status.ok()) {
      run->status = Status::DataLoss(
          name_ + ": stripe " + std::to_string(op->stripe) +
          ": cannot rebuild here: the region was not resynced since an unclean stop and a "
          "data member is missing, so its parity is untrusted (rebuild stopped at member "
          "position " + std::to_string(pos) + "; the member it replaced, put back, lets a "
          "resync fix the region)");
    }
  }
  run->machine.Finish(pos, outcome);
}

Status RaidDeviceImpl::FlushMembersForCheckpoint() {
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (!meta_->Writable(s)) continue;
    Status st = meta_->device(s)->Flush();
    if (st.ok()) continue;
    // The member may have lost what it acknowledged since its last flush: it is failed
    // (and so nothing it holds is recorded as synced or rebuilt).
    if (!HandleMemberError(s)) {
      return st.WithContext(name_ + ": flush of member " + meta_->name(s) +
                            " at a sync checkpoint; the array has no redundancy left");
    }
  }
  return Status::OK();
}

Status RaidDeviceImpl::PersistCheckpoint(SyncRun* run, bool final) {
  SyncMachine& m = run->machine;
  const uint64_t cp = m.Checkpoint();
  if (cp == run->checkpointed && !final) return Status::OK();
  const SyncConfig& cfg = m.config();
  // 1. Flush the members: everything below cp that this run wrote is durable after it.
  const uint64_t token = bitmap_->FlushBegin();
  FOLIO_RETURN_IF_ERROR(FlushMembersForCheckpoint());
  const bool done = final && m.Complete();
  // The speed for other processes' status (zero once the run is over, whatever the end).
  const uint64_t bytes_per_s = final ? 0 : static_cast<uint64_t>(run->speed.BytesPerSecond());
  const uint64_t speed_ms = final ? 0 : UnixMs();
  auto set_speed = [&](Superblock* s) {
    s->sync_speed_bytes_per_s = bytes_per_s;
    s->sync_speed_time_ms = speed_ms;
  };
  if (run->action == RaidSyncAction::kRebuild) {
    // 2. Rebuild positions of the slots this pass covered (ArrayMeta skips slots failed or
    //    replaced since the pass began).
    const std::vector<ArrayMeta::RebuildMove> moves = m.RebuildMoves(cp);
    FOLIO_RETURN_IF_ERROR(meta_->SetRebuildPositions(moves, set_speed));
  } else {
    // 2. Regions this run resynced wholly below cp: their bits, flushed after the data.
    if (run->action != RaidSyncAction::kCheck) {
      m.ForEachResyncedRegion(cp, [&](uint64_t r) { bitmap_->MarkResynced(r, token); });
      FOLIO_RETURN_IF_ERROR(PersistBitmap(0, /*flush=*/true));
    }
    // 3. The stored action and its checkpoint. A resync leaves a stored check or repair as
    //    it is (it resumes after the resync); otherwise the action records where it is.
    FOLIO_RETURN_IF_ERROR(meta_->Update([&](Superblock* s) {
      set_speed(s);
      const bool other_stored = run->action == RaidSyncAction::kResync &&
                                (s->sync_action == SyncAction::kCheck ||
                                 s->sync_action == SyncAction::kRepair);
      if (other_stored) return;
      s->sync_action = done ? SyncAction::kNone : StoredAction(run->action);
      s->sync_checkpoint = done ? 0 : cp;
    }));
  }
  run->checkpointed = cp;
  run->report.checkpoint_bytes = done ? cfg.end : cp;
  return Status::OK();
}

Result<SyncConfig> RaidDeviceImpl::PlanSync(RaidSyncAction action,
                                            const RaidSyncOptions& opt) const {
  SyncConfig cfg;
  cfg.action = action;
  cfg.unit = unit_bytes_ != 0 ? unit_bytes_ : std::min<uint64_t>(geometry_.chunk_bytes(), 1u << 20);
  cfg.window = opt.window_bytes != 0 ? std::max(opt.window_bytes, cfg.unit) : 32 * cfg.unit;
  cfg.end = geometry_.member_data_bytes();
  cfg.region_bytes = bitmap_->region_bytes();
  const Superblock sb = meta_->superblock();
  switch (action) {
    case RaidSyncAction::kRebuild: {
      bool any = false;
      for (uint32_t s = 0; s < geometry_.members(); ++s) {
        any |= meta_->health(s) == SlotHealth::kRebuilding;
      }
      if (!any) {
        return Status::InvalidArgument(name_ + ": no member is being rebuilt (use replace)");
      }
      cfg.start = meta_->rebuild_checkpoint() / cfg.unit * cfg.unit;
      break;
    }
    case RaidSyncAction::kResync: {
      // The bitmap says what needs a resync, whatever the stored checkpoint: regions below it
      // were cleared when it was written, so a set bit there is a later crash's.
      const uint64_t r = bitmap_->NextResync(0);
      cfg.start = std::min(cfg.end, r * cfg.region_bytes);
      break;
    }
    case RaidSyncAction::kCheck:
    case RaidSyncAction::kRepair:
      if (sb.sync_action == StoredAction(action)) {
        cfg.start = sb.sync_checkpoint / cfg.unit * cfg.unit;  // resume
      }
      break;
  }
  return cfg;
}

void RaidDeviceImpl::BeginSyncPass(SyncRun* run, const SyncConfig& cfg) {
  std::vector<ArrayMeta::RebuildMove> rebuilding;
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (meta_->health(s) != SlotHealth::kRebuilding) continue;
    rebuilding.push_back({s, meta_->generation(s), meta_->rebuild_position(s)});
  }
  run->machine.Begin(cfg, std::move(rebuilding));
  run->checkpointed = ~uint64_t{0};
}

void RaidDeviceImpl::RefillSync(SyncRun* run) {
  SyncMachine& m = run->machine;
  const SyncConfig& cfg = m.config();
  if (m.in_flight_bytes() > cfg.window / 2) return;
  while (m.CanIssue()) {
    if (run->opt->max_bytes != 0 && run->issued >= run->opt->max_bytes) {
      m.Stop();
      return;
    }
    if (cfg.action == RaidSyncAction::kResync && !bitmap_->NeedsResync(bitmap_->RegionOf(m.next()))) {
      m.SkipTo(bitmap_->NextResync(bitmap_->RegionOf(m.next())) * cfg.region_bytes);
      continue;
    }
    const uint64_t pos = m.Issue();
    StripeOp* op = NewStripeOp(run->ctx);
    op->sync = run;
    op->work = StripeWork::kSync;
    op->stripe = pos >> geometry_.chunk_shift();
    op->col_begin = static_cast<uint32_t>(pos & (geometry_.chunk_bytes() - 1));
    op->col_end = op->col_begin + static_cast<uint32_t>(cfg.unit);
    run->ctx->ready.push_back(op);
    run->issued += cfg.unit;
  }
}

void RaidDeviceImpl::PublishSyncProgress(SyncRun* run, double bps) {
  const SyncMachine& m = run->machine;
  RaidSyncProgress p;
  p.action = run->report.action;
  p.position_bytes = m.Checkpoint();
  p.total_bytes = m.config().end;
  p.done_bytes = run->report.done_bytes;
  p.speed_bytes_per_s = bps;
  const uint64_t left = p.total_bytes - std::min(p.total_bytes, p.position_bytes);
  p.eta_s = bps > 0 ? static_cast<double>(left) / bps : 0;
  p.mismatches = run->report.mismatches;
  {
    std::lock_guard<std::mutex> lock(progress_mu_);
    progress_ = p;
  }
  if (run->opt->progress) run->opt->progress(p);
}

Result<bool> RaidDeviceImpl::StepSync(SyncRun* run) {
  SyncMachine& m = run->machine;
  const RaidSyncOptions& opt = *run->opt;
  const uint64_t now = MonotonicNowNs();
  const double elapsed_s = static_cast<double>(now - run->t0) / 1e9;
  if ((opt.cancel != nullptr && opt.cancel->load()) ||
      (opt.max_seconds > 0 && elapsed_s >= opt.max_seconds) || !run->status.ok() ||
      (run->action == RaidSyncAction::kRebuild && !RebuildLeft())) {
    m.Stop();  // (a rebuild whose every target failed has nothing left to write)
  }
  run->speed.Mark(now, run->report.done_bytes);
  const double bps = run->speed.BytesPerSecond();
  bool hold = opt.speed_limit_max_kib != 0 && bps > opt.speed_limit_max_kib * 1024.0;
  const uint64_t user = user_requests_.load();
  if (opt.speed_limit_min_kib != 0 && user != run->last_user &&
      bps > opt.speed_limit_min_kib * 1024.0) {
    // Foreground I/O is running and we are above the guaranteed minimum: let it through.
    hold = m.in_flight_bytes() > 0;
    if (!hold) run->last_user = user;
  }
  if (!hold) RefillSync(run);
  Drive(run->ctx);
  if (m.Finished()) return false;
  if (now - run->last_checkpoint_ns > 1000000000ull) {
    FOLIO_RETURN_IF_ERROR(PersistCheckpoint(run, /*final=*/false));
    run->last_checkpoint_ns = now;
  }
  if (now - run->last_progress_ns > 200000000ull) {
    PublishSyncProgress(run, bps);
    run->last_progress_ns = now;
  }
  if (hold && m.in_flight_bytes() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return true;
  }
  if (!run->ctx->ready.empty()) return true;
  FOLIO_RETURN_IF_ERROR(WaitForProgress(run->ctx));
  return true;
}

bool RaidDeviceImpl::RebuildLeft() const {
  for (uint32_t s = 0; s < geometry_.members(); ++s) {
    if (meta_->health(s) == SlotHealth::kRebuilding) return true;
  }
  return false;
}

Result<RaidSyncReport> RaidDeviceImpl::Sync(RaidSyncAction action, const RaidSyncOptions& opt) {
  if (geometry_.level() == RaidLevel::kRaid0) {
    return Status::NotSupported(name_ + ": RAID 0 has no redundancy to " +
                                std::string(RaidSyncActionName(action)));
  }
  if (stopped_.load()) return Status::IOError(name_ + ": array is stopped");
  if (sync_running_.exchange(true)) {
    return Status::Busy(name_ + ": a resync, check, repair or rebuild is already running");
  }
  struct Clear {
    std::atomic<bool>* flag;
    ~Clear() { flag->store(false); }
  } clear{&sync_running_};

  SyncRun run;
  run.action = action;
  run.opt = &opt;
  run.ctx = Ctx();
  run.t0 = MonotonicNowNs();
  run.last_checkpoint_ns = run.t0;
  run.last_user = user_requests_.load();
  run.speed.Start(run.t0);
  run.report.action = std::string(RaidSyncActionName(action));
  const uint64_t cpu0 = ThreadCpuNs();
  const uint64_t parity0 = counters_.parity_ns.load();
  bool first = true;
  bool complete = false;
  // A rebuild runs passes until no slot is left to rebuild: a member replaced during a pass
  // starts at 0, below where the pass began, so the next pass covers it.
  for (uint32_t pass = 0; pass <= geometry_.members(); ++pass) {
    FOLIO_ASSIGN_OR_RETURN(const SyncConfig cfg, PlanSync(action, opt));
    if (first) {
      run.report.start_bytes = cfg.start;
      run.report.unit_bytes = cfg.unit;
      run.report.window_bytes = cfg.window;
      first = false;
    }
    BeginSyncPass(&run, cfg);
    while (true) {
      FOLIO_ASSIGN_OR_RETURN(const bool more, StepSync(&run));
      if (!more) break;
    }
    FOLIO_RETURN_IF_ERROR(PersistCheckpoint(&run, /*final=*/true));
    run.report.unsynced += run.machine.unsynced();
    complete = run.machine.Complete() && run.status.ok();
    run.machine.End();
    if (action != RaidSyncAction::kRebuild || !complete || !RebuildLeft()) break;
  }
  run.report.completed = complete;
  run.report.seconds = static_cast<double>(MonotonicNowNs() - run.t0) / 1e9;
  run.report.cpu_seconds = static_cast<double>(ThreadCpuNs() - cpu0) / 1e9;
  run.report.parity_seconds = static_cast<double>(counters_.parity_ns.load() - parity0) / 1e9;
  counters_.cpu_ns.fetch_add(ThreadCpuNs() - cpu0, std::memory_order_relaxed);
  if (!run.status.ok()) return run.status;
  return run.report;
}

}  // namespace folio::raid
