// Resync, check, repair and rebuild: a walk over member positions in stripe units, each unit a
// StripeOp of work kSync, run on the caller's thread.
//
//   member pos:  |unit|unit|unit|unit|unit|unit|unit|unit| ...
//                 done      ^checkpoint   ^next
//                           [---- in flight (window) ----]
//
// The window bounds the sync bytes in flight per member (md's rule, 32 units, or a size);
// refills are issued when half the window is free, as one batch per member so the member
// merges them into large requests. Every second (and at the end or a stop) the members are
// flushed and the checkpoint (the lowest unit still in flight) is written to the superblocks;
// resync also clears the bitmap regions wholly below it. Throttling follows md's
// speed_limit_min / speed_limit_max.
#include <bit>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "base/check.h"
#include "raid/parity.h"
#include "raid/raid_device_impl.h"

namespace folio::raid {

struct SyncRun {
  RaidSyncAction action = RaidSyncAction::kCheck;
  uint64_t unit = 0;
  uint64_t window = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t next = 0;
  uint64_t in_flight_bytes = 0;
  std::set<uint64_t> in_flight;  // member positions of units in flight
  RaidSyncReport report;
  Status status;
};

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

void RaidDeviceImpl::ComputeSync(StripeOp* op) {
  const RaidSyncAction action = op->sync->action;
  const uint32_t n = geometry_.members();
  const uint32_t len = op->length();
  const uint32_t lost = op->lost_mask;
  if (geometry_.level() == RaidLevel::kRaid1) {
    const uint32_t readable = ~lost & ((n == 32) ? ~0u : (1u << n) - 1);
    if (readable == 0) {
      op->status = Status::DataLoss(name_ + ": stripe " + std::to_string(op->stripe) +
                                    ": no readable mirror");
      return;
    }
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
    return;
  }
  const uint32_t k = geometry_.data_members();
  const uint32_t par = geometry_.parity_members();
  char* blocks[kRaidMaxMembers + 2];
  BlocksOf(op, blocks);
  if (std::popcount(lost) > static_cast<int>(par)) {
    op->status = Status::DataLoss(name_ + ": stripe " + std::to_string(op->stripe) + ": " +
                                  std::to_string(std::popcount(lost)) +
                                  " members unreadable, more than parity can rebuild");
    return;
  }
  if (lost != 0) {
    // Rebuild (or read errors): recompute the lost blocks and write those that take writes.
    uint32_t roles[2];
    const uint32_t nlost = LostRoles(op, lost, roles);
    TimeParity([&] { Recover({blocks, k + par}, par, {roles, nlost}, len); });
    for (uint32_t s = 0; s < n; ++s) {
      if (((lost >> s) & 1) && meta_->Writable(s)) op->write_mask |= 1u << s;
    }
    return;
  }
  if (action == RaidSyncAction::kRebuild) return;
  // Verify: parity of the data into the scratch buffers, compared with what is on disk.
  char* p_new = op->buf[n];
  char* q_new = op->buf[n + 1];
  TimeParity([&] {
    if (par == 1) {
      XorGen({blocks, k}, p_new, len);
    } else {
      PqGen({blocks, k}, p_new, q_new, len);
    }
  });
  const uint32_t p_slot = geometry_.PMember(op->stripe);
  bool p_bad = std::memcmp(p_new, op->buf[p_slot], len) != 0;
  bool q_bad = false;
  uint32_t q_slot = 0;
  if (par == 2) {
    q_slot = geometry_.QMember(op->stripe);
    q_bad = std::memcmp(q_new, op->buf[q_slot], len) != 0;
  }
  op->mismatch = p_bad || q_bad;
  if (!op->mismatch || action == RaidSyncAction::kCheck) return;
  // Write the recomputed parity: swap the scratch buffer in (buf_list still frees both).
  if (p_bad) {
    std::swap(op->buf[p_slot], op->buf[n]);
    op->write_mask |= 1u << p_slot;
  }
  if (q_bad) {
    std::swap(op->buf[q_slot], op->buf[n + 1]);
    op->write_mask |= 1u << q_slot;
  }
  op->repaired = true;
}

void RaidDeviceImpl::OnSyncOpDone(StripeOp* op) {
  SyncRun* run = op->sync;
  const uint64_t pos = (op->stripe << geometry_.chunk_shift()) + op->col_begin;
  run->in_flight.erase(pos);
  run->in_flight_bytes -= op->length();
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
  if (!op->status.ok() && run->status.ok()) run->status = op->status;
}


namespace {

// Speed over a sliding window of marks, like md's sync_speed.
class SpeedMeter {
 public:
  // Both marks at the start: a zero second mark would measure the first second against the
  // time since boot (a near-zero speed, so speed_limit_max would not hold in it).
  void Start(uint64_t now_ns) {
    marks_[0] = marks_[1] = now_ = {now_ns, 0};
  }
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

}  // namespace

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

  const Superblock sb = meta_->superblock();
  SyncRun run;
  run.action = action;
  run.unit = unit_bytes_ != 0 ? unit_bytes_ : std::min<uint64_t>(geometry_.chunk_bytes(), 1u << 20);
  run.window = opt.window_bytes != 0 ? std::max(opt.window_bytes, run.unit) : 32 * run.unit;
  run.end = geometry_.member_data_bytes();
  if (action == RaidSyncAction::kRebuild) {
    bool any = false;
    for (uint32_t s = 0; s < geometry_.members(); ++s) {
      any |= meta_->health(s) == SlotHealth::kRebuilding;
    }
    if (!any) return Status::InvalidArgument(name_ + ": no member is being rebuilt (use replace)");
    run.start = meta_->rebuild_checkpoint();
  } else if (sb.sync_action == StoredAction(action)) {
    run.start = sb.sync_checkpoint;  // resume
  }
  run.start = run.start / run.unit * run.unit;
  run.next = run.start;
  run.report.action = std::string(RaidSyncActionName(action));
  run.report.start_bytes = run.start;
  run.report.unit_bytes = run.unit;
  run.report.window_bytes = run.window;

  ThreadCtx* c = Ctx();
  const uint64_t t0 = NowNs();
  const uint64_t cpu0 = ThreadCpuNs();
  const uint64_t parity0 = counters_.parity_ns.load();
  SpeedMeter speed;
  speed.Start(t0);
  uint64_t last_checkpoint_ns = t0, last_progress_ns = 0, last_user = user_requests_.load();
  uint64_t checkpointed = run.start;
  uint64_t issued = 0;
  bool stopping = false;

  auto checkpoint = [&](bool final) -> Status {
    const uint64_t cp =
        run.in_flight.empty() ? std::min(run.next, run.end) : *run.in_flight.begin();
    if (cp == checkpointed && !final) return Status::OK();
    const uint64_t token = bitmap_->FlushBegin();
    for (uint32_t s = 0; s < geometry_.members(); ++s) {
      if (meta_->Writable(s)) (void)meta_->device(s)->Flush();
    }
    const bool done = final && cp >= run.end && run.status.ok();
    // The speed for other processes' status (zero once the run is over, whatever the end).
    const uint64_t bytes_per_s = final ? 0 : static_cast<uint64_t>(speed.BytesPerSecond());
    const uint64_t speed_ms = final ? 0 : UnixMs();
    auto set_speed = [&](Superblock* s) {
      s->sync_speed_bytes_per_s = bytes_per_s;
      s->sync_speed_time_ms = speed_ms;
    };
    if (action == RaidSyncAction::kRebuild) {
      FOLIO_RETURN_IF_ERROR(meta_->SetRebuildCheckpoint(done ? run.end : cp, set_speed));
    } else {
      if (action != RaidSyncAction::kCheck || done) {
        // Regions wholly below the checkpoint were resynced (check rewrites nothing).
        const uint64_t last = done ? bitmap_->regions() : bitmap_->RegionOf(cp);
        for (uint64_t r = bitmap_->NextResync(0); r < last; r = bitmap_->NextResync(r + 1)) {
          if (action != RaidSyncAction::kCheck) bitmap_->MarkResynced(r, token);
        }
        FOLIO_RETURN_IF_ERROR(PersistBitmap(0, /*flush=*/true));
      }
      FOLIO_RETURN_IF_ERROR(meta_->Update([&](Superblock* s) {
        s->sync_action = done ? SyncAction::kNone : StoredAction(action);
        s->sync_checkpoint = done ? 0 : cp;
        set_speed(s);
      }));
    }
    checkpointed = cp;
    run.report.checkpoint_bytes = done ? run.end : cp;
    return Status::OK();
  };

  while (true) {
    const uint64_t now = NowNs();
    const double elapsed_s = static_cast<double>(now - t0) / 1e9;
    if (!stopping && ((opt.cancel != nullptr && opt.cancel->load()) ||
                      (opt.max_seconds > 0 && elapsed_s >= opt.max_seconds) || !run.status.ok())) {
      stopping = true;
    }
    speed.Mark(now, run.report.done_bytes);
    const double bps = speed.BytesPerSecond();
    bool hold = false;
    if (opt.speed_limit_max_kib != 0 && bps > opt.speed_limit_max_kib * 1024.0) hold = true;
    const uint64_t user = user_requests_.load();
    if (opt.speed_limit_min_kib != 0 && user != last_user &&
        bps > opt.speed_limit_min_kib * 1024.0) {
      // Foreground I/O is running and we are above the guaranteed minimum: let it through.
      hold = run.in_flight_bytes > 0;
      if (!hold) last_user = user;
    }
    if (!stopping && !hold && run.in_flight_bytes <= run.window / 2) {
      while (run.next < run.end && run.in_flight_bytes + run.unit <= run.window) {
        if (opt.max_bytes != 0 && issued >= opt.max_bytes) {
          stopping = true;
          break;
        }
        if (action == RaidSyncAction::kResync &&
            !bitmap_->NeedsResync(bitmap_->RegionOf(run.next))) {
          const uint64_t r = bitmap_->NextResync(bitmap_->RegionOf(run.next));
          run.next = std::min(run.end, r * bitmap_->region_bytes());
          continue;
        }
        StripeOp* op = NewStripeOp(c);
        op->sync = &run;
        op->work = StripeWork::kSync;
        op->stripe = run.next >> geometry_.chunk_shift();
        op->col_begin = static_cast<uint32_t>(run.next & (geometry_.chunk_bytes() - 1));
        op->col_end = op->col_begin + static_cast<uint32_t>(run.unit);
        run.in_flight.insert(run.next);
        run.in_flight_bytes += run.unit;
        c->ready.push_back(op);
        run.next += run.unit;
        issued += run.unit;
      }
    }
    {
      Drive(c);
    }
    if ((stopping || run.next >= run.end) && run.in_flight_bytes == 0) break;
    if (now - last_checkpoint_ns > 1000000000ull) {
      FOLIO_RETURN_IF_ERROR(checkpoint(false));
      last_checkpoint_ns = now;
    }
    if (now - last_progress_ns > 200000000ull) {
      RaidSyncProgress p;
      p.action = run.report.action;
      p.position_bytes = run.in_flight.empty() ? run.next : *run.in_flight.begin();
      p.total_bytes = run.end;
      p.done_bytes = run.report.done_bytes;
      p.speed_bytes_per_s = bps;
      const uint64_t left = run.end - std::min(run.end, p.position_bytes);
      p.eta_s = bps > 0 ? static_cast<double>(left) / bps : 0;
      p.mismatches = run.report.mismatches;
      {
        std::lock_guard<std::mutex> lock(progress_mu_);
        progress_ = p;
      }
      if (opt.progress) opt.progress(p);
      last_progress_ns = now;
    }
    if (hold && run.in_flight_bytes == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (!c->ready.empty()) continue;
    FOLIO_RETURN_IF_ERROR(WaitForProgress(c));
  }
  FOLIO_RETURN_IF_ERROR(checkpoint(true));
  run.report.completed = run.status.ok() && run.next >= run.end;
  run.report.seconds = static_cast<double>(NowNs() - t0) / 1e9;
  run.report.cpu_seconds = static_cast<double>(ThreadCpuNs() - cpu0) / 1e9;
  run.report.parity_seconds = static_cast<double>(counters_.parity_ns.load() - parity0) / 1e9;
  counters_.cpu_ns.fetch_add(ThreadCpuNs() - cpu0, std::memory_order_relaxed);
  if (!run.status.ok()) return run.status;
  return run.report;
}

}  // namespace folio::raid
