#include "fs/store_io.h"

#include <algorithm>

#include "base/check.h"
#include "base/may_block.h"

namespace folio::fs {

void StoreLatch::Add(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ += n;
}

void StoreLatch::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  FOLIO_CHECK(pending_ > 0);
  if (--pending_ == 0) cv_.notify_all();
}

void StoreLatch::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  WaitWithHint(cv_, lock, [&] { return pending_ == 0; });
}

void StoreLatch::OnDone(store::StoreRequest* req) { static_cast<StoreLatch*>(req->ctx)->Done(); }

void StoreBatch::Get(const store::ObjectKey& key, uint64_t offset, uint64_t length, char* dst) {
  auto r = std::make_unique<store::StoreRequest>();
  r->ResetGet(key, offset, length, dst);
  reqs_.push_back(std::move(r));
}

void StoreBatch::Put(const store::ObjectKey& key, const char* data) {
  auto r = std::make_unique<store::StoreRequest>();
  r->ResetPut(key, data);
  reqs_.push_back(std::move(r));
}

void StoreBatch::Delete(const store::ObjectKey& key) {
  auto r = std::make_unique<store::StoreRequest>();
  r->ResetDelete(key);
  reqs_.push_back(std::move(r));
}

Status StoreBatch::Run() {
  if (reqs_.empty()) return Status::OK();
  StoreLatch latch;
  latch.Add(reqs_.size());
  std::vector<store::StoreRequest*> ptrs;
  ptrs.reserve(reqs_.size());
  for (auto& r : reqs_) {
    r->done = &StoreLatch::OnDone;
    r->ctx = &latch;
    ptrs.push_back(r.get());
  }
  store_->Submit(ptrs);
  latch.Wait();
  Status first;
  for (auto& r : reqs_) {
    if (r->status.ok()) continue;
    if (r->op == store::StoreOp::kDelete && r->status.IsNotFound()) continue;
    if (first.ok()) first = r->status;
  }
  reqs_.clear();
  return first;
}

store::ObjectKey BlockKey(uint64_t id, uint32_t index, uint64_t object_bytes,
                          uint64_t block_bytes) {
  const uint64_t start = static_cast<uint64_t>(index) * block_bytes;
  const uint64_t bytes = std::min(block_bytes, object_bytes - start);
  return store::ObjectKey::Block(id, index, static_cast<uint32_t>(bytes));
}

uint32_t BlockCount(uint64_t object_bytes, uint64_t block_bytes) {
  return static_cast<uint32_t>((object_bytes + block_bytes - 1) / block_bytes);
}

void AddObjectReads(StoreBatch* batch, const meta::Slice& s, uint64_t off, uint64_t len,
                    uint64_t block_bytes, char* dst) {
  ForEachObjectRange(s, off, len, block_bytes,
                     [&](const store::ObjectKey& key, uint64_t o, uint64_t n, uint64_t done) {
                       batch->Get(key, o, n, dst + done);
                     });
}

void AddObjectDeletes(StoreBatch* batch, meta::SliceKind kind, uint64_t id,
                      uint64_t object_bytes, uint64_t block_bytes) {
  if (kind == meta::SliceKind::kPacked) {
    batch->Delete(store::ObjectKey::Pack(id, static_cast<uint32_t>(object_bytes)));
    return;
  }
  if (kind != meta::SliceKind::kBlocks) return;
  const uint32_t n = BlockCount(object_bytes, block_bytes);
  for (uint32_t i = 0; i < n; ++i) batch->Delete(BlockKey(id, i, object_bytes, block_bytes));
}

}  // namespace folio::fs
