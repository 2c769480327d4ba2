// FaultDevice: see include/folio/fault_device.h for the fault atlas and durability model.
//
// Mechanics. Each request submitted to the wrapper is screened (validation, crashed state,
// injected failures: counted per request as submitted, before merging), then the surviving
// batch is merged exactly as a device would merge it, so the latency model and the wrapper's
// statistics see merged request sizes. Each original is then forwarded, one by one in one
// batch, as a *shadow* request to the inner device (which merges them again itself); the
// shadow's completion is collected by the wrapper's Poll, post-processed (crash log, torn
// write result, crashed state) and delivered to the original no earlier than the finish time
// the latency model gave its merged request (Poll sleeps until then).
//
// Crash tracking: before a write (or trim) is forwarded, the flushed image of the blocks it
// touches is read from the inner device if not yet known, and the write's data is copied into
// the CrashLog (see crash_log.h for the exact semantics). Crash() rolls the inner device back
// to "flushed image + chosen subset of unflushed writes"; when writes are still in flight the
// rollback waits until the last of them completes (in the Poll that reaps it), so a write
// landing late cannot overwrite the rolled-back image.
//
// Lock order: mu_ -> (inner device internals). mu_ is held while reading the flushed image and
// while rolling back, both through the inner device's synchronous helpers; inner callbacks
// (OnInnerDone) touch only the calling thread's state, never mu_.
//
// Thread safety: all methods are thread-safe.
#include "folio/fault_device.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "base/clock.h"
#include "io/crash_log.h"
#include "io/device_util.h"
#include "io/latency_model.h"
#include "io/per_thread.h"
#include "io/request_merger.h"

namespace folio {
namespace {

using io_internal::CompleteChain;
using io_internal::CrashLog;
using io_internal::MergedRequest;

struct FaultThread;

// The request the inner device sees for one original request.
struct Shadow {
  IoRequest inner;
  IoRequest* orig = nullptr;
  FaultThread* thread = nullptr;
  Shadow* next_free = nullptr;
  uint64_t log_id = 0;           // CrashLog write id, 0 if not logged
  uint64_t flush_watermark = 0;  // kFlush: coverage mark at submission
  uint64_t finish_ns = 0;        // latency model: earliest delivery
  uint64_t group_bytes = 0;      // leader of a merged request: its size (for stats)
  bool leader = false;
  bool torn = false;
  Status torn_status;
};

// A completion waiting for its finish time.
struct Ready {
  IoRequest* orig;
  Status status;
  uint64_t finish_ns;
  bool leader;
  uint64_t group_bytes;
};

struct FaultThread : io_internal::ThreadState {
  std::vector<std::unique_ptr<Shadow[]>> shadow_blocks;
  Shadow* free_shadows = nullptr;
  std::vector<Shadow*> inner_done;  // completed by the inner device, not processed yet
  size_t inner_done_head = 0;
  std::vector<Ready> ready;
  uint64_t in_flight = 0;  // originals submitted and not delivered
  uint64_t forwarded = 0;  // shadows inside the inner device
  io_internal::RequestMerger merger;
  std::vector<IoRequest*> forward;

  Shadow* Alloc() {
    if (free_shadows == nullptr) {
      constexpr size_t kBlock = 64;
      shadow_blocks.push_back(std::make_unique<Shadow[]>(kBlock));
      for (size_t i = 0; i < kBlock; ++i) Free(&shadow_blocks.back()[i]);
    }
    Shadow* s = free_shadows;
    free_shadows = s->next_free;
    s->thread = this;
    return s;
  }
  void Free(Shadow* s) {
    s->torn_status = Status::OK();
    s->next_free = free_shadows;
    free_shadows = s;
  }
};

void OnInnerDone(IoRequest* inner) {
  auto* shadow = static_cast<Shadow*>(inner->ctx);
  shadow->thread->inner_done.push_back(shadow);
  --shadow->thread->forwarded;
}

// A buffer the inner device accepts (its logical block, at least 4 KiB, for O_DIRECT files).
Result<AlignedBuffer> InnerBuffer(uint64_t bytes, uint32_t logical_block_bytes) {
  return AlignedBuffer::TryAllocate(bytes, std::max<size_t>(logical_block_bytes, 4096));
}

class FaultDeviceImpl final : public FaultDevice {
 public:
  FaultDeviceImpl(std::unique_ptr<BlockDevice> owned, BlockDevice* inner)
      : owned_(std::move(owned)),
        inner_(inner),
        name_("fault(" + inner->name() + ")"),
        log_(inner->logical_block_bytes()) {}

  std::string name() const override { return name_; }
  uint32_t logical_block_bytes() const override { return inner_->logical_block_bytes(); }
  uint64_t size_bytes() const override { return inner_->size_bytes(); }
  uint32_t queue_depth() const override { return inner_->queue_depth(); }
  uint64_t max_request_bytes() const override { return inner_->max_request_bytes(); }
  bool supports_trim() const override { return inner_->supports_trim(); }
  Status RegisterArena(FolioArena* arena) override { return inner_->RegisterArena(arena); }
  DeviceStatsSnapshot stats() const override { return stats_.Snapshot(); }
  void ResetStats() override { stats_.Reset(); }

  Status Submit(std::span<IoRequest* const> batch) override;
  Result<size_t> Poll(size_t min_complete) override;
  size_t InFlight() const override {
    auto* t = static_cast<FaultThread*>(threads_.Find());
    return t == nullptr ? 0 : t->in_flight;
  }

  void FailNth(uint64_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    fail_nth_ = n;
  }
  void FailNthOf(IoOp op, uint64_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    fail_nth_of_[static_cast<int>(op)] = n;
  }
  void FailRange(uint64_t offset, uint64_t length, bool reads, bool writes) override {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ranges_.push_back(FailedRange{offset, length, reads, writes});
  }
  void Shrink(uint64_t end_bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    shrunk_end_bytes_ = end_bytes;
  }
  void ClearFailures() override {
    std::lock_guard<std::mutex> lock(mu_);
    fail_nth_ = 0;
    for (uint64_t& n : fail_nth_of_) n = 0;
    fail_ranges_.clear();
    torn_armed_ = false;
    injected_errno_ = EIO;
    shrunk_end_bytes_ = kNotShrunk;
    shrink_seen_ = false;
  }
  void SetInjectedErrno(int err) override {
    std::lock_guard<std::mutex> lock(mu_);
    injected_errno_ = err;
  }
  void SetLatency(const LatencyModel& model) override {
    std::lock_guard<std::mutex> lock(mu_);
    clock_.Set(model);
  }
  void TearNextWrite(uint64_t prefix_bytes, bool report_error) override {
    std::lock_guard<std::mutex> lock(mu_);
    torn_armed_ = true;
    torn_prefix_bytes_ = prefix_bytes;
    torn_report_error_ = report_error;
  }
  void Crash(CrashMode mode, uint64_t seed) override;
  void Restart() override {
    std::lock_guard<std::mutex> lock(mu_);
    FOLIO_CHECK_MSG(!rollback_pending_,
                    "FaultDevice::Restart: writes submitted before Crash() are still in flight; "
                    "Poll them to completion first");
    crashed_ = false;
  }
  uint64_t injected_errors() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return injected_errors_;
  }
  BlockDevice* inner() const override { return inner_; }
  LatencyModelStats latency_stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return clock_.stats();
  }
  void SetCrashTracking(bool enabled) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!enabled) log_.Clear();
    tracking_ = enabled;
  }

 private:
  struct FailedRange {
    uint64_t offset, length;
    bool reads, writes;
  };

  Result<FaultThread*> GetThread();
  Status Screen(const IoRequest& r);                              // REQUIRES: mu_ held
  Status ScreenShrink(const IoRequest& r);                        // REQUIRES: mu_ held
  void Forward(FaultThread* t, IoRequest* r, uint64_t finish_ns,  // REQUIRES: mu_ held
               uint64_t group_bytes, bool leader);
  Status CaptureFlushedImage(uint64_t offset, uint64_t length);   // REQUIRES: mu_ held
  // scratch_, grown to at least `bytes` (the inner device's alignment). REQUIRES: mu_ held.
  Result<char*> Scratch(uint64_t bytes);
  void Process(FaultThread* t);
  void RollBack();                                                // REQUIRES: mu_ held
  size_t Deliver(FaultThread* t, uint64_t now_ns);
  Status CrashedError() const {
    return Status::IOError(name_ + ": device crashed (I/O fails until Restart)");
  }

  std::unique_ptr<BlockDevice> owned_;
  BlockDevice* const inner_;
  const std::string name_;
  DeviceStats stats_;

  mutable std::mutex mu_;
  uint64_t fail_nth_ = 0;             // GUARDED_BY(mu_), 0 = disarmed
  uint64_t fail_nth_of_[4] = {};      // GUARDED_BY(mu_), by IoOp
  std::vector<FailedRange> fail_ranges_;  // GUARDED_BY(mu_)
  bool torn_armed_ = false;           // GUARDED_BY(mu_)
  uint64_t torn_prefix_bytes_ = 0;    // GUARDED_BY(mu_)
  bool torn_report_error_ = false;    // GUARDED_BY(mu_)
  uint64_t injected_errors_ = 0;      // GUARDED_BY(mu_)
  int injected_errno_ = EIO;          // GUARDED_BY(mu_)
  static constexpr uint64_t kNotShrunk = UINT64_MAX;
  uint64_t shrunk_end_bytes_ = kNotShrunk;  // GUARDED_BY(mu_)
  bool shrink_seen_ = false;          // GUARDED_BY(mu_)
  io_internal::LatencyClock clock_;   // GUARDED_BY(mu_)
  CrashLog log_;                      // GUARDED_BY(mu_)
  // Reused by every capture read and rollback write: a fresh buffer each (under ASan an mmap
  // and first-touch page faults for a large one) cost the RAID fault model a few percent.
  AlignedBuffer scratch_;                       // GUARDED_BY(mu_)
  std::vector<CrashLog::Run> capture_runs_;     // GUARDED_BY(mu_)
  bool tracking_ = true;              // GUARDED_BY(mu_)
  uint64_t logged_in_flight_ = 0;     // GUARDED_BY(mu_): logged writes not yet completed
  bool crashed_ = false;              // GUARDED_BY(mu_)
  bool rollback_pending_ = false;     // GUARDED_BY(mu_)
  CrashMode crash_mode_ = CrashMode::kDropUnflushed;  // GUARDED_BY(mu_)
  uint64_t crash_seed_ = 0;           // GUARDED_BY(mu_)

  io_internal::PerThreadRegistry threads_;  // last: thread states die first
};

Result<FaultThread*> FaultDeviceImpl::GetThread() {
  Result<io_internal::ThreadState*> s =
      threads_.GetOrCreate([this]() -> Result<std::unique_ptr<FaultThread>> {
        auto t = std::make_unique<FaultThread>();
        t->merger.Reserve(inner_->queue_depth());
        t->ready.reserve(inner_->queue_depth());
        return t;
      });
  if (!s.ok()) return s.status();
  return static_cast<FaultThread*>(*s);
}

// As ShrinkWatch does for a real file: the shrink is seen by a read reaching past the end or by
// a flush, and from then on every request fails.
Status FaultDeviceImpl::ScreenShrink(const IoRequest& r) {
  if (shrunk_end_bytes_ == kNotShrunk) return Status::OK();
  const std::string shrunk = name_ + ": the file shrank to " + std::to_string(shrunk_end_bytes_) +
                             " bytes while in use (injected)";
  if (shrink_seen_) return Status::IOError(shrunk);
  if (r.op == IoOp::kFlush || (r.op == IoOp::kRead && r.offset + r.length > shrunk_end_bytes_)) {
    shrink_seen_ = true;
    ++injected_errors_;
    return Status::IOError(shrunk + "; " + std::string(IoOpName(r.op)) + " at offset " +
                           std::to_string(r.offset));
  }
  return Status::OK();
}

Status FaultDeviceImpl::Screen(const IoRequest& r) {
  const io_internal::DeviceGeometry geo{name_, inner_->logical_block_bytes(), 0,
                                        inner_->size_bytes(), false};
  FOLIO_RETURN_IF_ERROR(io_internal::ValidateRequest(r, geo));
  if (crashed_) return CrashedError();
  FOLIO_RETURN_IF_ERROR(ScreenShrink(r));
  bool fail = false;
  if (fail_nth_ > 0 && --fail_nth_ == 0) fail = true;
  uint64_t& nth_of = fail_nth_of_[static_cast<int>(r.op)];
  if (nth_of > 0 && --nth_of == 0) fail = true;
  if (r.op != IoOp::kFlush) {
    const bool is_read = r.op == IoOp::kRead;
    for (const FailedRange& f : fail_ranges_) {
      const bool overlaps = r.offset < f.offset + f.length && f.offset < r.offset + r.length;
      if (overlaps && (is_read ? f.reads : f.writes)) fail = true;
    }
  }
  if (!fail) return Status::OK();
  ++injected_errors_;
  const std::string what = name_ + ": injected error on " + std::string(IoOpName(r.op)) +
                           " of " + std::to_string(r.length) + " bytes at offset " +
                           std::to_string(r.offset);
  if (injected_errno_ == EIO) return Status::IOError(what);
  return Status::FromErrno(injected_errno_, what);
}

Status FaultDeviceImpl::Submit(std::span<IoRequest* const> batch) {
  FOLIO_ASSIGN_OR_RETURN(FaultThread* t, GetThread());
  const uint64_t now_ns = MonotonicNowNs();
  t->merger.Clear();
  t->forward.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (IoRequest* r : batch) {
      r->next_in_merge = nullptr;
      r->submit_ns = now_ns;
      ++t->in_flight;
      Status s = Screen(*r);
      if (!s.ok()) {
        stats_.RecordError();
        t->ready.push_back(Ready{r, std::move(s), 0, false, 0});
        continue;
      }
      t->merger.Add(r);
    }
    t->merger.Build(inner_->max_request_bytes());
    for (const MergedRequest& m : t->merger.requests()) {
      for (uint32_t i = 1; i < m.nr_requests; ++i) stats_.RecordMerge(m.op);
      const uint64_t finish_ns = clock_.Charge(m.op, m.offset, m.length, now_ns);
      bool leader = true;
      for (IoRequest* r = m.head; r != nullptr;) {
        IoRequest* next = r->next_in_merge;
        r->next_in_merge = nullptr;  // originals complete one by one, not as a chain
        Forward(t, r, finish_ns, m.length, leader);
        leader = false;
        r = next;
      }
    }
  }
  if (t->forward.empty()) return Status::OK();
  t->forwarded += t->forward.size();
  Status s = inner_->Submit(t->forward);
  if (!s.ok()) {
    // Nothing was accepted: complete every shadow with the inner device's error.
    for (IoRequest* inner : t->forward) {
      inner->status = s;
      OnInnerDone(inner);
    }
  }
  return Status::OK();
}

void FaultDeviceImpl::Forward(FaultThread* t, IoRequest* r, uint64_t finish_ns,
                              uint64_t group_bytes, bool leader) {
  Shadow* sh = t->Alloc();
  sh->orig = r;
  sh->finish_ns = finish_ns;
  sh->group_bytes = group_bytes;
  sh->leader = leader;
  sh->log_id = 0;
  sh->flush_watermark = 0;
  sh->torn = false;
  uint64_t length = r->length;
  if (r->op == IoOp::kWrite && torn_armed_) {
    const uint64_t lbs = inner_->logical_block_bytes();
    torn_armed_ = false;
    ++injected_errors_;
    length = std::min(length, torn_prefix_bytes_ / lbs * lbs);
    sh->torn = true;
    if (torn_report_error_) {
      sh->torn_status = Status::IOError(name_ + ": injected torn write: " +
                                        std::to_string(length) + " of " +
                                        std::to_string(r->length) + " bytes at offset " +
                                        std::to_string(r->offset) + " landed");
    }
  }
  Status status;
  if ((r->op == IoOp::kWrite || r->op == IoOp::kTrim) && tracking_ && length > 0) {
    status = CaptureFlushedImage(r->offset, length);
    if (status.ok()) {
      sh->log_id = log_.AddWrite(r->offset, r->op == IoOp::kWrite ? r->buf : nullptr, length);
      ++logged_in_flight_;
    }
  }
  if (r->op == IoOp::kFlush) sh->flush_watermark = log_.FlushWatermark();
  if (!status.ok() || (r->op == IoOp::kWrite && length == 0)) {
    // Never reaches the inner device: a failed capture, or a write torn to nothing.
    if (status.ok()) status = sh->torn_status;
    if (!status.ok()) stats_.RecordError();
    t->ready.push_back(Ready{r, std::move(status), finish_ns, leader, group_bytes});
    t->Free(sh);
    return;
  }
  sh->inner.Reset(r->op, r->offset, length, r->buf);
  sh->inner.done = &OnInnerDone;
  sh->inner.ctx = sh;
  t->forward.push_back(&sh->inner);
}

Status FaultDeviceImpl::CaptureFlushedImage(uint64_t offset, uint64_t length) {
  capture_runs_.clear();
  log_.MissingRuns(offset, length, &capture_runs_);
  for (const CrashLog::Run& run : capture_runs_) {
    Result<char*> buf = Scratch(run.length);
    if (!buf.ok()) return Status::NoSpace(name_ + ": out of memory for the crash log");
    Status s = inner_->Read(run.offset, *buf, run.length);
    if (!s.ok()) return s.WithContext(name_ + ": reading the flushed image for the crash log");
    log_.Capture(run.offset, *buf, run.length);
  }
  return Status::OK();
}

Result<char*> FaultDeviceImpl::Scratch(uint64_t bytes) {
  if (scratch_.size() < bytes) {
    scratch_.Reset();
    Result<AlignedBuffer> buf = InnerBuffer(std::bit_ceil(std::max<uint64_t>(bytes, 64 << 10)),
                                            inner_->logical_block_bytes());
    if (!buf.ok()) return buf.status();
    scratch_ = std::move(buf).value();
  }
  return scratch_.data();
}

// Post-processes the shadows the inner device completed for this thread.
void FaultDeviceImpl::Process(FaultThread* t) {
  std::lock_guard<std::mutex> lock(mu_);
  while (t->inner_done_head < t->inner_done.size()) {
    Shadow* sh = t->inner_done[t->inner_done_head++];
    Status st = std::move(sh->inner.status);
    if (sh->log_id != 0) {
      // A request the inner device rejected as invalid never touched it.
      if (st.IsInvalidArgument()) {
        log_.DropWrite(sh->log_id);
      } else {
        log_.CompleteWrite(sh->log_id);
      }
      --logged_in_flight_;
    }
    if (sh->inner.op == IoOp::kFlush && st.ok() && !crashed_ && tracking_) {
      log_.FlushCompleted(sh->flush_watermark);
    }
    if (sh->torn && st.ok()) st = sh->torn_status;
    if (crashed_) st = CrashedError();
    if (!st.ok()) stats_.RecordError();
    t->ready.push_back(Ready{sh->orig, std::move(st), sh->finish_ns, sh->leader, sh->group_bytes});
    t->Free(sh);
  }
  t->inner_done.clear();
  t->inner_done_head = 0;
  // The rollback's synchronous inner I/O may reap more shadows into inner_done: Poll loops
  // until they are processed.
  if (rollback_pending_ && logged_in_flight_ == 0) RollBack();
}

void FaultDeviceImpl::Crash(CrashMode mode, uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  crashed_ = true;
  if (!tracking_) return;
  crash_mode_ = mode;
  crash_seed_ = seed;
  rollback_pending_ = true;
  if (logged_in_flight_ == 0) RollBack();
}

void FaultDeviceImpl::RollBack() {
  for (CrashLog::ImageRun& run : log_.CrashImage(crash_mode_, crash_seed_)) {
    Result<char*> buf = Scratch(run.data.size());
    FOLIO_CHECK_MSG(buf.ok(), "FaultDevice: out of memory rolling back a crash");
    std::memcpy(*buf, run.data.data(), run.data.size());
    Status s = inner_->Write(run.offset, *buf, run.data.size());
    FOLIO_CHECK_MSG(s.ok(), "FaultDevice: the inner device failed a crash rollback write");
  }
  log_.Clear();
  rollback_pending_ = false;
}

// Delivers the ready completions whose finish time has come, earliest first.
size_t FaultDeviceImpl::Deliver(FaultThread* t, uint64_t now_ns) {
  size_t delivered = 0;
  for (;;) {
    size_t best = t->ready.size();
    for (size_t i = 0; i < t->ready.size(); ++i) {
      if (t->ready[i].finish_ns <= now_ns &&
          (best == t->ready.size() || t->ready[i].finish_ns < t->ready[best].finish_ns)) {
        best = i;
      }
    }
    if (best == t->ready.size()) break;
    Ready item = std::move(t->ready[best]);
    t->ready.erase(t->ready.begin() + static_cast<std::ptrdiff_t>(best));
    if (item.leader) {
      const IoOp op = item.orig->op;
      stats_.RecordRequest(op, op == IoOp::kFlush ? 0 : item.group_bytes,
                           MonotonicNowNs() - item.orig->submit_ns);
    }
    delivered += CompleteChain(item.orig, item.status, &t->in_flight);
  }
  return delivered;
}

Result<size_t> FaultDeviceImpl::Poll(size_t min_complete) {
  auto* t = static_cast<FaultThread*>(threads_.Find());
  if (t == nullptr) return size_t{0};
  size_t delivered = 0;
  for (;;) {
    if (t->forwarded > 0) {
      Result<size_t> r = inner_->Poll(0);
      if (!r.ok()) return r.status();
    }
    Process(t);
    delivered += Deliver(t, MonotonicNowNs());
    if (delivered >= min_complete) break;
    if (!t->ready.empty()) {
      // Everything ready waits for the latency model: sleep until the earliest finish.
      uint64_t earliest = UINT64_MAX;
      for (const Ready& r : t->ready) earliest = std::min(earliest, r.finish_ns);
      SleepUntilNs(earliest);  // a ManualClock jumps to it
      continue;
    }
    if (t->inner_done_head < t->inner_done.size()) continue;  // completions to process
    if (t->forwarded == 0) break;  // nothing of this thread left anywhere
    Result<size_t> r = inner_->Poll(1);
    if (!r.ok()) return r.status();
  }
  return delivered;
}

}  // namespace

std::unique_ptr<FaultDevice> FaultDevice::Wrap(std::unique_ptr<BlockDevice> inner) {
  BlockDevice* raw = inner.get();
  return std::make_unique<FaultDeviceImpl>(std::move(inner), raw);
}

std::unique_ptr<FaultDevice> FaultDevice::WrapUnowned(BlockDevice* inner) {
  return std::make_unique<FaultDeviceImpl>(nullptr, inner);
}

}  // namespace folio
