#include "fs/store/block_store.h"

#include <fmt/format.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/may_block.h"
#include "fs/store/sector_codec.h"
#include "io/device_util.h"

namespace folio::store {

std::string_view StoreOpName(StoreOp op) {
  switch (op) {
    case StoreOp::kPut: return "put";
    case StoreOp::kGet: return "get";
    case StoreOp::kDelete: return "delete";
    case StoreOp::kList: return "list";
    case StoreOp::kSync: return "sync";
  }
  return "unknown";
}

void StoreStats::RecordStart() {
  uint64_t now = in_flight_.fetch_add(1, kRelaxed) + 1;
  uint64_t max = in_flight_max_.load(kRelaxed);
  while (now > max && !in_flight_max_.compare_exchange_weak(max, now, kRelaxed)) {
  }
}

void StoreStats::RecordDone(StoreOp op, bool ok, uint64_t bytes, uint64_t latency_ns) {
  Op& o = ops_[static_cast<int>(op)];
  o.requests.fetch_add(1, kRelaxed);
  if (!ok) o.errors.fetch_add(1, kRelaxed);
  o.bytes.fetch_add(bytes, kRelaxed);
  o.latency_ns.Record(latency_ns);
  in_flight_.fetch_sub(1, kRelaxed);
}

StoreStatsSnapshot StoreStats::Snapshot() const {
  StoreStatsSnapshot s;
  StoreOpStats* out[kStoreOpCount] = {&s.put, &s.get, &s.del, &s.list, &s.sync};
  for (int i = 0; i < kStoreOpCount; ++i) {
    out[i]->requests = ops_[i].requests.load(kRelaxed);
    out[i]->errors = ops_[i].errors.load(kRelaxed);
    out[i]->bytes = ops_[i].bytes.load(kRelaxed);
    out[i]->latency_ns = ops_[i].latency_ns.Snapshot();
  }
  s.stored_bytes_read = stored_read_.load(kRelaxed);
  s.stored_bytes_written = stored_written_.load(kRelaxed);
  s.checksum_failures = checksum_failures_.load(kRelaxed);
  s.healed = healed_.load(kRelaxed);
  s.fsyncs = fsyncs_.load(kRelaxed);
  s.direct_bytes_written = direct_written_.load(kRelaxed);
  s.in_flight = in_flight_.load(kRelaxed);
  s.in_flight_max = in_flight_max_.load(kRelaxed);
  return s;
}

void CompleteRequest(StoreStats* stats, StoreRequest* req, Status status, uint64_t now_ns) {
  uint64_t bytes = 0;
  if (status.ok()) {
    if (req->op == StoreOp::kPut) bytes = req->key.bytes;
    if (req->op == StoreOp::kGet) bytes = req->length;
  }
  stats->RecordDone(req->op, status.ok(), bytes,
                    now_ns > req->submit_ns ? now_ns - req->submit_ns : 0);
  req->status = std::move(status);
  req->next = nullptr;
  StoreDoneFn done = req->done;
  if (done != nullptr) {
    done(req);  // the request may be gone after this
    return;
  }
  req->completed.store(true, std::memory_order_release);
}

void EncodePut(uint32_t seed, const StoreRequest& req, char* out) {
  if (req.encoding == nullptr) {
    EncodeObject(seed, req.data, req.key.bytes, out);
    return;
  }
  std::memcpy(out, req.encoding, EncodedBytes(req.key.bytes));
  FillSectorCrcs(seed, out, req.key.bytes);
}

Status ValidateRequest(const StoreRequest& req) {
  switch (req.op) {
    case StoreOp::kList:
      if (req.list_out == nullptr) return Status::InvalidArgument("store list: no output vector");
      if (req.list_kind != ObjectKind::kBlock && req.list_kind != ObjectKind::kPack) {
        return Status::InvalidArgument("store list: kind must be block or pack");
      }
      return Status::OK();
    case StoreOp::kPut:
      FOLIO_RETURN_IF_ERROR(ValidateKey(req.key));
      if ((req.data == nullptr) == (req.encoding == nullptr)) {
        return Status::InvalidArgument(KeyText(req.key) +
                                       ": a put needs its data or its encoding (one of them)");
      }
      return Status::OK();
    case StoreOp::kGet:
      FOLIO_RETURN_IF_ERROR(ValidateKey(req.key));
      if (req.length == 0 || req.buf == nullptr || req.offset > req.key.bytes ||
          req.length > req.key.bytes - req.offset) {
        return Status::InvalidArgument(
            fmt::format("{}: get of {} bytes at {}: must be 1 or more bytes inside the object",
                        KeyText(req.key), req.length, req.offset));
      }
      return Status::OK();
    case StoreOp::kDelete:
      return ValidateKey(req.key);
    case StoreOp::kSync:
      for (const ObjectKey& key : req.sync_keys) FOLIO_RETURN_IF_ERROR(ValidateKey(key));
      return Status::OK();
  }
  return Status::InvalidArgument("store request: unknown operation");
}

void StoreLog(const StoreLogFn& log, std::string_view line) {
  if (log) {
    log(line);
    return;
  }
  std::fprintf(stderr, "folio: %.*s\n", static_cast<int>(line.size()), line.data());
}

namespace {

struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

void WaiterDone(StoreRequest* req) {
  auto* w = static_cast<Waiter*>(req->ctx);
  std::lock_guard<std::mutex> lock(w->mu);
  w->done = true;
  w->cv.notify_one();  // under the lock: the waiter cannot destroy cv before this returns
}

}  // namespace

Status BlockStore::SubmitAndWait(StoreRequest* req) {
  Waiter waiter;
  req->done = &WaiterDone;
  req->ctx = &waiter;
  Submit(req);
  std::unique_lock<std::mutex> lock(waiter.mu);
  WaitWithHint(waiter.cv, lock, [&] { return waiter.done; });
  req->done = nullptr;
  req->ctx = nullptr;
  return req->status;
}

Status BlockStore::Put(const ObjectKey& key, const char* data) {
  StoreRequest req;
  req.ResetPut(key, data);
  return SubmitAndWait(&req);
}

Status BlockStore::Get(const ObjectKey& key, uint64_t offset, uint64_t length, char* buf) {
  StoreRequest req;
  req.ResetGet(key, offset, length, buf);
  return SubmitAndWait(&req);
}

Status BlockStore::Delete(const ObjectKey& key) {
  StoreRequest req;
  req.ResetDelete(key);
  return SubmitAndWait(&req);
}

Result<std::vector<ObjectInfo>> BlockStore::List(ObjectKind kind) {
  std::vector<ObjectInfo> out;
  StoreRequest req;
  req.ResetList(kind, &out);
  FOLIO_RETURN_IF_ERROR(SubmitAndWait(&req));
  return out;
}

Status BlockStore::Sync(std::span<const ObjectKey> keys) {
  StoreRequest req;
  req.ResetSync(keys);
  return SubmitAndWait(&req);
}

}  // namespace folio::store
