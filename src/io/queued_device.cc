#include "io/queued_device.h"

#include <algorithm>
#include <memory>

#include "base/clock.h"
#include "io/completion_queue.h"

namespace folio::io_internal {

struct QueuedDevice::State : ThreadState {
  RequestMerger merger;
  CompletionQueue completions;
  uint64_t in_flight = 0;  // original requests submitted and not yet completed
};

QueuedDevice::QueuedDevice(uint32_t queue_depth, uint64_t max_request_bytes, bool histograms,
                           uint64_t max_write_bytes)
    : queue_depth_(queue_depth),
      max_request_bytes_(max_request_bytes),
      max_write_bytes_(max_write_bytes),
      stats_(histograms) {}

namespace {

// A thread's state starts with room for this many requests and grows to what its batches
// need (the vectors keep their capacity across batches). Reserving queue_depth_ up front cost
// ~24 KiB per thread and device at depth 256: a Folio FS mount has an InodeDevice per cached
// file (thousands) used by each of its FUSE threads.
constexpr size_t kInitialRequests = 16;

}  // namespace

Result<QueuedDevice::State*> QueuedDevice::GetState() {
  Result<ThreadState*> s = threads_.GetOrCreate([this]() -> Result<std::unique_ptr<State>> {
    auto state = std::make_unique<State>();
    const size_t n = std::min<size_t>(queue_depth_, kInitialRequests);
    state->merger.Reserve(n);
    state->completions.Reserve(n);
    return state;
  });
  if (!s.ok()) return s.status();
  return static_cast<State*>(*s);
}

Status QueuedDevice::Submit(std::span<IoRequest* const> batch) {
  FOLIO_ASSIGN_OR_RETURN(State* state, GetState());
  const DeviceGeometry geo = geometry();
  const uint64_t now_ns = MonotonicNowNs();
  state->merger.Clear();
  for (IoRequest* r : batch) {
    r->next_in_merge = nullptr;
    r->submit_ns = now_ns;
    ++state->in_flight;
    Status s = ValidateRequest(*r, geo);
    if (!s.ok()) {
      stats_.RecordError();
      state->completions.Push(r, std::move(s));
      continue;
    }
    state->merger.Add(r);
  }
  state->merger.Build(max_request_bytes_, max_write_bytes_);
  for (const MergedRequest& m : state->merger.requests()) {
    for (uint32_t i = 1; i < m.nr_requests; ++i) stats_.RecordMerge(m.op);
    const uint64_t start_ns = MonotonicNowNs();
    Status s = Execute(m, state->merger.iovecs(m));
    stats_.RecordRequest(m.op, m.op == IoOp::kFlush ? 0 : m.length,
                         MonotonicNowNs() - start_ns);
    if (!s.ok()) stats_.RecordError();
    state->completions.Push(m.head, std::move(s));
  }
  return Status::OK();
}

Result<size_t> QueuedDevice::Poll(size_t /*min_complete*/) {
  // Everything submitted has executed: all that is left is running the callbacks.
  auto* state = static_cast<State*>(threads_.Find());
  if (state == nullptr) return size_t{0};
  size_t completed = 0;
  while (!state->completions.empty()) {
    CompletionQueue::Item item = state->completions.Pop();
    completed += CompleteChain(item.head, item.status, &state->in_flight);
  }
  return completed;
}

size_t QueuedDevice::InFlight() const {
  auto* state = static_cast<State*>(threads_.Find());
  return state == nullptr ? 0 : state->in_flight;
}

}  // namespace folio::io_internal
