// UringFileDevice: the io_uring engine of the file device (the only liburing user).
//
// One ring per (device, thread), created on the thread's first Submit with queue_depth SQ
// entries and as many request slots; a slot is one merged device request in the kernel.
// Submit validates, merges, prepares one SQE per merged request (readv / writev, read / write,
// read_fixed / write_fixed for a single segment inside a registered arena, fsync, fallocate
// punch-hole) and calls io_uring_submit once. Poll peeks CQEs in a batch, records the
// completions, advances the CQ, and only then runs callbacks.
//
// Short transfers resubmit the remainder from the last whole block; a read reaching end of
// file zero-fills the rest; -EAGAIN / -EINTR resubmit; other errors become a Status naming the
// device, operation, offset and length.
//
// Thread safety: all methods are thread-safe; each thread uses only its own ring. Rings are
// owned by the device's PerThreadRegistry (destroyed with the device or at thread exit).
#include <fcntl.h>
#include <liburing.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "base/may_block.h"
#include "folio/arena.h"
#include "io/completion_queue.h"
#include "io/device_util.h"
#include "io/file_device_impl.h"
#include "io/per_thread.h"
#include "io/request_merger.h"

namespace folio::io_internal {
namespace {

std::atomic<int> g_probe_failure{0};
std::atomic<bool> g_fallback_warned{false};

constexpr uint64_t kMaxSqeBytes = 1ull << 30;   // one read / write SQE moves at most this
constexpr uint64_t kFixedBufferBytes = 1ull << 30;  // io_uring's limit per registered buffer
constexpr int kMaxRetries = 1000;

struct Slot {
  IoRequest* head = nullptr;
  IoOp op = IoOp::kRead;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t done_bytes = 0;
  uint64_t submit_ns = 0;
  int retries = 0;
  std::vector<iovec> retry_iov;  // remainder of a resubmitted transfer; grows once, then reused
};

struct FixedRange {
  char* base;
  uint64_t bytes;
  int index;
};

struct Ring : ThreadState {
  io_uring ring{};
  bool initialized = false;
  bool fixed_file = false;
  std::vector<Slot> slots;
  std::vector<uint32_t> free_slots;
  std::vector<io_uring_cqe*> cqes;
  RequestMerger merger;
  CompletionQueue completions;
  uint64_t in_flight = 0;      // original requests submitted and not yet completed
  uint32_t unsubmitted = 0;    // SQEs prepared since the last io_uring_submit
  uint64_t arena_generation = 0;
  std::vector<FixedRange> fixed;
  uint64_t fixed_requests = 0;  // SQEs that used a registered buffer (a test observes it)

  ~Ring() override {
    if (initialized) io_uring_queue_exit(&ring);
  }
  uint32_t busy_slots() const { return static_cast<uint32_t>(slots.size() - free_slots.size()); }
};

class UringFileDevice final : public BlockDevice {
 public:
  UringFileDevice(OpenedFile file, const FileDeviceOptions& options)
      : file_(std::move(file)),
        queue_depth_(options.queue_depth),
        max_request_bytes_(options.max_request_bytes) {}

  std::string name() const override { return file_.name; }
  uint32_t logical_block_bytes() const override { return file_.logical_block_bytes; }
  uint64_t size_bytes() const override { return file_.size_bytes; }
  uint32_t queue_depth() const override { return queue_depth_; }
  uint64_t max_request_bytes() const override { return max_request_bytes_; }
  bool supports_trim() const override { return !file_.read_only; }

  Status Submit(std::span<IoRequest* const> batch) override;
  Result<size_t> Poll(size_t min_complete) override;
  size_t InFlight() const override {
    auto* ring = static_cast<Ring*>(threads_.Find());
    return ring == nullptr ? 0 : ring->in_flight;
  }
  Status RegisterArena(FolioArena* arena) override;
  uint64_t fixed_requests() const {
    auto* ring = static_cast<Ring*>(threads_.Find());
    return ring == nullptr ? 0 : ring->fixed_requests;
  }
  DeviceStatsSnapshot stats() const override { return stats_.Snapshot(); }
  void ResetStats() override { stats_.Reset(); }

 private:
  Result<Ring*> GetRing();
  void SyncFixedBuffers(Ring* ring);
  Status AcquireSlot(Ring* ring, uint32_t* index);
  void Prepare(Ring* ring, uint32_t index, const iovec* iov, uint32_t iov_count);
  Status Flush(Ring* ring);
  Status Reap(Ring* ring, bool wait);
  void HandleCompletion(Ring* ring, uint32_t index, int res, uint64_t now_ns);
  void Finish(Ring* ring, uint32_t index, Status status, uint64_t now_ns);
  static std::string Describe(const Slot& s) {
    return std::string(IoOpName(s.op)) + " of " + std::to_string(s.length) + " bytes at offset " +
           std::to_string(s.offset);
  }
  std::string Context(const Slot& s) const { return file_.name + ": " + Describe(s); }

  const OpenedFile file_;
  ShrinkWatch shrink_;
  const uint32_t queue_depth_;
  const uint64_t max_request_bytes_;
  DeviceStats stats_;
  std::mutex arenas_mu_;
  std::vector<iovec> arenas_;  // GUARDED_BY(arenas_mu_): registered arena ranges
  std::atomic<uint64_t> arena_generation_{0};
  PerThreadRegistry threads_;  // last: rings are torn down before the fd closes
};

Result<Ring*> UringFileDevice::GetRing() {
  Result<ThreadState*> s = threads_.GetOrCreate([this]() -> Result<std::unique_ptr<Ring>> {
    auto ring = std::make_unique<Ring>();
    int ret = io_uring_queue_init(queue_depth_, &ring->ring, 0);
    if (ret < 0) return Status::FromErrno(-ret, file_.name + ": io_uring_queue_init");
    ring->initialized = true;
    ring->fixed_file = io_uring_register_files(&ring->ring, &file_.fd, 1) == 0;
    ring->slots.resize(queue_depth_);
    ring->free_slots.reserve(queue_depth_);
    for (uint32_t i = queue_depth_; i > 0; --i) ring->free_slots.push_back(i - 1);
    ring->cqes.resize(2 * static_cast<size_t>(queue_depth_));
    ring->merger.Reserve(queue_depth_);
    ring->completions.Reserve(2 * static_cast<size_t>(queue_depth_));
    return ring;
  });
  if (!s.ok()) return s.status();
  return static_cast<Ring*>(*s);
}

Status UringFileDevice::RegisterArena(FolioArena* arena) {
  std::lock_guard<std::mutex> lock(arenas_mu_);
  for (const iovec& a : arenas_) {
    if (a.iov_base == arena->base()) return Status::OK();
  }
  arenas_.push_back(iovec{arena->base(), arena->capacity_bytes()});
  arena_generation_.fetch_add(1, std::memory_order_release);
  return Status::OK();
}

// Registers the arenas as fixed buffers on this thread's ring when the set changed. Failure
// (e.g. RLIMIT_MEMLOCK) is not an error: the ring just does not use fixed buffers.
void UringFileDevice::SyncFixedBuffers(Ring* ring) {
  const uint64_t gen = arena_generation_.load(std::memory_order_acquire);
  if (ring->arena_generation == gen) return;
  ring->arena_generation = gen;
  std::vector<iovec> iovs;
  std::vector<FixedRange> ranges;
  {
    std::lock_guard<std::mutex> lock(arenas_mu_);
    for (const iovec& a : arenas_) {
      char* base = static_cast<char*>(a.iov_base);
      for (uint64_t off = 0; off < a.iov_len; off += kFixedBufferBytes) {
        uint64_t len = std::min<uint64_t>(kFixedBufferBytes, a.iov_len - off);
        ranges.push_back(FixedRange{base + off, len, static_cast<int>(iovs.size())});
        iovs.push_back(iovec{base + off, len});
      }
    }
  }
  if (!ring->fixed.empty()) io_uring_unregister_buffers(&ring->ring);
  ring->fixed.clear();
  if (iovs.empty()) return;
  if (io_uring_register_buffers(&ring->ring, iovs.data(), static_cast<unsigned>(iovs.size())) ==
      0) {
    ring->fixed = std::move(ranges);
  }
}

Status UringFileDevice::Submit(std::span<IoRequest* const> batch) {
  FOLIO_ASSIGN_OR_RETURN(Ring* ring, GetRing());
  SyncFixedBuffers(ring);
  const DeviceGeometry geo{file_.name, file_.logical_block_bytes, file_.mem_align_bytes,
                           file_.size_bytes, file_.read_only};
  const uint64_t now_ns = MonotonicNowNs();
  RequestMerger& merger = ring->merger;
  merger.Clear();
  for (IoRequest* r : batch) {
    r->next_in_merge = nullptr;
    r->submit_ns = now_ns;
    ++ring->in_flight;
    Status s = ValidateRequest(*r, geo);
    if (s.ok()) s = shrink_.Check(file_);
    if (!s.ok()) {
      stats_.RecordError();
      ring->completions.Push(r, std::move(s));
      continue;
    }
    merger.Add(r);
  }
  merger.Build(max_request_bytes_);
  for (const MergedRequest& m : merger.requests()) {
    for (uint32_t i = 1; i < m.nr_requests; ++i) stats_.RecordMerge(m.op);
    uint32_t index = 0;
    if (Status st = AcquireSlot(ring, &index); !st.ok()) {
      // The ring failed while waiting for room: fail this request, never drop it.
      stats_.RecordError();
      ring->completions.Push(m.head, std::move(st));
      continue;
    }
    Slot& s = ring->slots[index];
    s.head = m.head;
    s.op = m.op;
    s.offset = m.offset;
    s.length = m.length;
    s.done_bytes = 0;
    s.submit_ns = now_ns;
    s.retries = 0;
    Prepare(ring, index, merger.iovecs(m), m.iov_count);
  }
  return Flush(ring);
}

// Takes a free slot, reaping completions (their callbacks run at the next Poll) until one is.
Status UringFileDevice::AcquireSlot(Ring* ring, uint32_t* index) {
  while (ring->free_slots.empty()) FOLIO_RETURN_IF_ERROR(Reap(ring, /*wait=*/true));
  *index = ring->free_slots.back();
  ring->free_slots.pop_back();
  return Status::OK();
}

// Prepares the SQE of slot `index`: its whole request when iov is given, else (a resubmission)
// the remainder from s.done_bytes rebuilt from the merge chain.
void UringFileDevice::Prepare(Ring* ring, uint32_t index, const iovec* iov, uint32_t iov_count) {
  Slot& s = ring->slots[index];
  io_uring_sqe* sqe = io_uring_get_sqe(&ring->ring);
  if (sqe == nullptr) {
    // Cannot happen while SQ entries >= slots, but stay correct if it does.
    io_uring_submit(&ring->ring);
    ring->unsubmitted = 0;
    sqe = io_uring_get_sqe(&ring->ring);
    FOLIO_CHECK(sqe != nullptr);
  }
  const int fd = ring->fixed_file ? 0 : file_.fd;
  const uint64_t pos = s.offset + s.done_bytes;
  switch (s.op) {
    case IoOp::kRead:
    case IoOp::kWrite: {
      if (iov == nullptr) {
        s.retry_iov.resize(RequestMerger::kMaxSegments);
        iov_count = static_cast<uint32_t>(ChainIovecs(s.head, s.done_bytes, s.retry_iov.data(),
                                                      s.retry_iov.size()));
        iov = s.retry_iov.data();
      }
      const bool read = s.op == IoOp::kRead;
      if (iov_count == 1) {
        char* buf = static_cast<char*>(iov[0].iov_base);
        const unsigned len = static_cast<unsigned>(std::min<uint64_t>(iov[0].iov_len, kMaxSqeBytes));
        int buf_index = -1;
        for (const FixedRange& f : ring->fixed) {
          if (buf >= f.base && buf + len <= f.base + f.bytes) buf_index = f.index;
        }
        if (buf_index >= 0) ++ring->fixed_requests;
        if (buf_index >= 0 && read) {
          io_uring_prep_read_fixed(sqe, fd, buf, len, pos, buf_index);
        } else if (buf_index >= 0) {
          io_uring_prep_write_fixed(sqe, fd, buf, len, pos, buf_index);
        } else if (read) {
          io_uring_prep_read(sqe, fd, buf, len, pos);
        } else {
          io_uring_prep_write(sqe, fd, buf, len, pos);
        }
      } else if (read) {
        io_uring_prep_readv(sqe, fd, iov, iov_count, pos);
      } else {
        io_uring_prep_writev(sqe, fd, iov, iov_count, pos);
      }
      break;
    }
    case IoOp::kFlush:
      // A full fsync: a regular file's size and block map are metadata fdatasync may skip.
      io_uring_prep_fsync(sqe, fd, 0);
      break;
    case IoOp::kTrim:
      io_uring_prep_fallocate(sqe, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                              static_cast<off_t>(s.offset), static_cast<off_t>(s.length));
      break;
  }
  if (ring->fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, index);
  ++ring->unsubmitted;
}

// Submits the prepared SQEs. A hard io_uring_enter error (a bug or a dying ring) is returned;
// the SQEs stay queued in the ring and go out with the next submission.
Status UringFileDevice::Flush(Ring* ring) {
  while (ring->unsubmitted > 0) {
    int ret = io_uring_submit(&ring->ring);
    if (ret >= 0) {
      ring->unsubmitted -= std::min<uint32_t>(ring->unsubmitted, static_cast<uint32_t>(ret));
      if (ret == 0) ring->unsubmitted = 0;
      continue;
    }
    if (ret == -EINTR || ret == -EAGAIN || ret == -EBUSY) {
      FOLIO_RETURN_IF_ERROR(Reap(ring, /*wait=*/false));
      continue;
    }
    return Status::FromErrno(-ret, file_.name + ": io_uring_submit");
  }
  return Status::OK();
}

// Moves available CQEs (waiting for one if `wait` and something is in flight) into the
// completion queue; resubmissions of short transfers are prepared, not submitted (the caller
// flushes). Never runs callbacks.
Status UringFileDevice::Reap(Ring* ring, bool wait) {
  if (wait && ring->busy_slots() > 0) {
    int ret = io_uring_submit_and_wait(&ring->ring, 1);
    if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
      return Status::FromErrno(-ret, file_.name + ": io_uring_submit_and_wait");
    }
    if (ret >= 0) ring->unsubmitted = 0;
  }
  unsigned n = io_uring_peek_batch_cqe(&ring->ring, ring->cqes.data(),
                                       static_cast<unsigned>(ring->cqes.size()));
  if (n == 0) return Status::OK();
  const uint64_t now_ns = MonotonicNowNs();
  for (unsigned i = 0; i < n; ++i) {
    HandleCompletion(ring, static_cast<uint32_t>(io_uring_cqe_get_data64(ring->cqes[i])),
                     ring->cqes[i]->res, now_ns);
  }
  io_uring_cq_advance(&ring->ring, n);
  return Status::OK();
}

void UringFileDevice::HandleCompletion(Ring* ring, uint32_t index, int res, uint64_t now_ns) {
  Slot& s = ring->slots[index];
  if (res == -EAGAIN || res == -EINTR) {
    if (++s.retries <= kMaxRetries) {
      Prepare(ring, index, nullptr, 0);
      return;
    }
  }
  if (res < 0) {
    Finish(ring, index, Status::FromErrno(-res, Context(s)), now_ns);
    return;
  }
  if (s.op == IoOp::kFlush || s.op == IoOp::kTrim) {
    Finish(ring, index, s.op == IoOp::kFlush ? shrink_.AfterFlush(file_) : Status::OK(), now_ns);
    return;
  }
  switch (AfterTransfer(s.op, s.length, file_.logical_block_bytes, static_cast<uint64_t>(res),
                        &s.done_bytes)) {
    case ShortTransfer::kComplete: Finish(ring, index, Status::OK(), now_ns); return;
    case ShortTransfer::kResubmit: Prepare(ring, index, nullptr, 0); return;
    case ShortTransfer::kEndOfFile:
      Finish(ring, index,
             shrink_.ReadHitEnd(file_, Describe(s), s.offset + s.done_bytes),
             now_ns);
      return;
    case ShortTransfer::kNoProgress:
      Finish(ring, index,
             Status::IOError(Context(s) + ": write made no progress at byte " +
                             std::to_string(s.done_bytes)),
             now_ns);
      return;
  }
}

void UringFileDevice::Finish(Ring* ring, uint32_t index, Status status, uint64_t now_ns) {
  Slot& s = ring->slots[index];
  stats_.RecordRequest(s.op, s.op == IoOp::kFlush ? 0 : s.length, now_ns - s.submit_ns);
  if (!status.ok()) stats_.RecordError();
  ring->completions.Push(s.head, std::move(status));
  s.head = nullptr;
  ring->free_slots.push_back(index);
}

Result<size_t> UringFileDevice::Poll(size_t min_complete) {
  auto* ring = static_cast<Ring*>(threads_.Find());
  if (ring == nullptr) return size_t{0};
  size_t completed = 0;
  for (;;) {
    FOLIO_RETURN_IF_ERROR(Reap(ring, /*wait=*/false));
    FOLIO_RETURN_IF_ERROR(Flush(ring));
    if (ring->completions.empty() && completed < min_complete) {
      if (ring->busy_slots() == 0) break;
      MayBlock();
      FOLIO_RETURN_IF_ERROR(Reap(ring, /*wait=*/true));
    }
    while (!ring->completions.empty()) {
      CompletionQueue::Item item = ring->completions.Pop();
      completed += CompleteChain(item.head, item.status, &ring->in_flight);
    }
    if (completed >= min_complete) break;
  }
  return completed;
}

}  // namespace

int ProbeUring(uint32_t entries) {
  if (int err = g_probe_failure.load(std::memory_order_relaxed); err != 0) return -err;
  io_uring ring;
  int ret = io_uring_queue_init(entries, &ring, 0);
  if (ret < 0) return ret;
  io_uring_queue_exit(&ring);
  return 0;
}

bool FirstUringFallback() { return !g_fallback_warned.exchange(true, std::memory_order_relaxed); }

void SetUringProbeFailureForTest(int err) {
  g_probe_failure.store(err, std::memory_order_relaxed);
  g_fallback_warned.store(false, std::memory_order_relaxed);
}

uint64_t FixedBufferRequestsForTest(BlockDevice* dev) {
  auto* uring = dynamic_cast<UringFileDevice*>(dev);
  return uring == nullptr ? 0 : uring->fixed_requests();
}

std::unique_ptr<BlockDevice> NewUringFileDevice(OpenedFile file, const FileDeviceOptions& options) {
  return std::make_unique<UringFileDevice>(std::move(file), options);
}

}  // namespace folio::io_internal
