// Shared parts of the BlockDevice API: names, statistics, synchronous helpers, validation.
#include "folio/block_device.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/may_block.h"
#include "base/units.h"
#include "io/device_util.h"

namespace folio {

std::string_view IoOpName(IoOp op) {
  switch (op) {
    case IoOp::kRead: return "read";
    case IoOp::kWrite: return "write";
    case IoOp::kFlush: return "flush";
    case IoOp::kTrim: return "trim";
  }
  return "unknown";
}

std::string_view FileEngineName(FileEngine e) {
  switch (e) {
    case FileEngine::kAuto: return "auto";
    case FileEngine::kUring: return "io_uring";
    case FileEngine::kSync: return "sync";
  }
  return "unknown";
}

// ---- DeviceStats ---------------------------------------------------------------------------

void DeviceStats::RecordRequest(IoOp op, uint64_t bytes, uint64_t latency_ns) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  switch (op) {
    case IoOp::kRead:
      read_requests_.fetch_add(1, kRelaxed);
      read_bytes_.fetch_add(bytes, kRelaxed);
      if (histograms_) histograms_->read_request_bytes.Record(bytes);
      break;
    case IoOp::kWrite:
      write_requests_.fetch_add(1, kRelaxed);
      write_bytes_.fetch_add(bytes, kRelaxed);
      if (histograms_) histograms_->write_request_bytes.Record(bytes);
      break;
    case IoOp::kFlush: flushes_.fetch_add(1, kRelaxed); break;
    case IoOp::kTrim: trims_.fetch_add(1, kRelaxed); break;
  }
  if (histograms_) histograms_->latency_ns.Record(latency_ns);
}

void DeviceStats::RecordMerge(IoOp op) {
  if (op == IoOp::kRead) read_merges_.fetch_add(1, std::memory_order_relaxed);
  if (op == IoOp::kWrite) write_merges_.fetch_add(1, std::memory_order_relaxed);
}

DeviceStatsSnapshot DeviceStats::Snapshot() const {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  DeviceStatsSnapshot s;
  s.read_requests = read_requests_.load(kRelaxed);
  s.read_bytes = read_bytes_.load(kRelaxed);
  s.write_requests = write_requests_.load(kRelaxed);
  s.write_bytes = write_bytes_.load(kRelaxed);
  s.flushes = flushes_.load(kRelaxed);
  s.trims = trims_.load(kRelaxed);
  s.read_merges = read_merges_.load(kRelaxed);
  s.write_merges = write_merges_.load(kRelaxed);
  s.errors = errors_.load(kRelaxed);
  if (histograms_) {
    s.read_request_bytes = histograms_->read_request_bytes.Snapshot();
    s.write_request_bytes = histograms_->write_request_bytes.Snapshot();
    s.latency_ns = histograms_->latency_ns.Snapshot();
  }
  return s;
}

void DeviceStats::Reset() {
  for (auto* c : {&read_requests_, &read_bytes_, &write_requests_, &write_bytes_, &flushes_,
                  &trims_, &read_merges_, &write_merges_, &errors_}) {
    c->store(0, std::memory_order_relaxed);
  }
  if (histograms_) {
    histograms_->read_request_bytes.Reset();
    histograms_->write_request_bytes.Reset();
    histograms_->latency_ns.Reset();
  }
}

// ---- Synchronous helpers -------------------------------------------------------------------

Status BlockDevice::SubmitAndWait(IoRequest* req) {
  IoRequest* batch[1] = {req};
  FOLIO_RETURN_IF_ERROR(Submit(batch));
  if (!req->completed.load(std::memory_order_acquire)) MayBlock();
  while (!req->completed.load(std::memory_order_acquire)) {
    Result<size_t> n = Poll(1);
    if (!n.ok()) return n.status();
    if (*n == 0 && InFlight() == 0 && !req->completed.load(std::memory_order_acquire)) {
      return Status::IOError(name() + ": request lost: nothing in flight but not completed");
    }
  }
  return req->status;
}

Status BlockDevice::Read(uint64_t offset, void* buf, uint64_t length) {
  IoRequest req;
  req.Reset(IoOp::kRead, offset, length, static_cast<char*>(buf));
  return SubmitAndWait(&req);
}

Status BlockDevice::Write(uint64_t offset, const void* buf, uint64_t length) {
  IoRequest req;
  // The device only reads a write's buffer.
  req.Reset(IoOp::kWrite, offset, length, const_cast<char*>(static_cast<const char*>(buf)));
  return SubmitAndWait(&req);
}

Status BlockDevice::Flush() {
  IoRequest req;
  req.Reset(IoOp::kFlush, 0, 0, nullptr);
  return SubmitAndWait(&req);
}

Status BlockDevice::Trim(uint64_t offset, uint64_t length) {
  IoRequest req;
  req.Reset(IoOp::kTrim, offset, length, nullptr);
  return SubmitAndWait(&req);
}

// ---- Validation and shared helpers ---------------------------------------------------------

namespace io_internal {
namespace {

std::string Prefix(const DeviceGeometry& g) { return std::string(g.name) + ": "; }

Status NotMultiple(const DeviceGeometry& g, const char* what, uint64_t value) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s %" PRIu64 " is not a multiple of the %" PRIu32
                "-byte logical block size", what, value, g.logical_block_bytes);
  return Status::InvalidArgument(Prefix(g) + buf);
}

}  // namespace

Status ValidateRequest(const IoRequest& req, const DeviceGeometry& g) {
  const uint64_t lbs = g.logical_block_bytes;
  if (req.op == IoOp::kFlush) return Status::OK();
  if (req.op != IoOp::kRead && g.read_only) {
    return Status::NotSupported(Prefix(g) + std::string(IoOpName(req.op)) +
                                " on a device opened read-only");
  }
  if (req.length == 0) {
    return Status::InvalidArgument(Prefix(g) + std::string(IoOpName(req.op)) + " at offset " +
                                   std::to_string(req.offset) + " has length 0");
  }
  if (req.offset % lbs != 0) return NotMultiple(g, "offset", req.offset);
  if (req.length % lbs != 0) return NotMultiple(g, "length", req.length);
  if (req.offset > g.size_bytes || req.length > g.size_bytes - req.offset) {
    return Status::InvalidArgument(
        Prefix(g) + std::string(IoOpName(req.op)) + " of " + std::to_string(req.length) +
        " bytes at offset " + std::to_string(req.offset) + " ends beyond the device size " +
        FormatSize(g.size_bytes) + " (" + std::to_string(g.size_bytes) + " bytes)");
  }
  if (req.op == IoOp::kTrim) return Status::OK();
  if (req.buf == nullptr) {
    return Status::InvalidArgument(Prefix(g) + std::string(IoOpName(req.op)) + " at offset " +
                                   std::to_string(req.offset) + " has no buffer");
  }
  if (g.mem_align_bytes != 0 && reinterpret_cast<uintptr_t>(req.buf) % g.mem_align_bytes != 0) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "buffer address %p is not aligned to %" PRIu32
                  " bytes (O_DIRECT requires %" PRIu32 "-byte aligned memory)",
                  static_cast<void*>(req.buf), g.mem_align_bytes, g.mem_align_bytes);
    return Status::InvalidArgument(Prefix(g) + buf);
  }
  return Status::OK();
}

size_t CompleteChain(IoRequest* head, const Status& status, uint64_t* in_flight) {
  size_t n = 0;
  for (IoRequest* r = head; r != nullptr;) {
    IoRequest* next = r->next_in_merge;
    r->next_in_merge = nullptr;
    r->status = status;  // OK copies a null pointer; only errors allocate
    --*in_flight;
    ++n;
    IoDoneFn done = r->done;
    r->completed.store(true, std::memory_order_release);
    if (done != nullptr) done(r);
    r = next;
  }
  return n;
}

size_t ChainLength(const IoRequest* head) {
  size_t n = 0;
  for (const IoRequest* r = head; r != nullptr; r = r->next_in_merge) ++n;
  return n;
}

size_t ChainIovecs(const IoRequest* head, uint64_t skip_bytes, iovec* out, size_t max) {
  size_t n = 0;
  for (const IoRequest* r = head; r != nullptr; r = r->next_in_merge) {
    if (skip_bytes >= r->length) {
      skip_bytes -= r->length;
      continue;
    }
    char* base = r->buf + skip_bytes;
    size_t len = r->length - skip_bytes;
    skip_bytes = 0;
    if (n > 0 && static_cast<char*>(out[n - 1].iov_base) + out[n - 1].iov_len == base) {
      out[n - 1].iov_len += len;
      continue;
    }
    if (n == max) break;
    out[n].iov_base = base;
    out[n].iov_len = len;
    ++n;
  }
  return n;
}

ShortTransfer AfterTransfer(IoOp op, uint64_t length_bytes, uint32_t logical_block_bytes,
                            uint64_t res, uint64_t* done_bytes) {
  uint64_t reached = *done_bytes + res;
  if (reached >= length_bytes) {
    *done_bytes = length_bytes;
    return ShortTransfer::kComplete;
  }
  // O_DIRECT needs aligned positions: continue from the last whole block transferred
  // (re-transferring a partial block is harmless).
  uint64_t aligned = reached - reached % logical_block_bytes;
  if (aligned > *done_bytes) {
    *done_bytes = aligned;
    return ShortTransfer::kResubmit;
  }
  if (op == IoOp::kRead) {
    // No whole block beyond the current position: end of file inside this block.
    *done_bytes = reached;
    return ShortTransfer::kEndOfFile;
  }
  return ShortTransfer::kNoProgress;
}

}  // namespace io_internal
}  // namespace folio
