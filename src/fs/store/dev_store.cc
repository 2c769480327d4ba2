// dev: store, the I/O thread: submit queue, gets, write batches, completions (see
// dev_store_impl.h for the invariants and the map of files).
#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "base/check.h"
#include "base/may_block.h"
#include "fs/store/dev_store_impl.h"
#include "fs/store/sector_codec.h"
#include "base/clock.h"
#include "io/device_util.h"

namespace folio::store {

using dev::kUnitBytes;
using dev::RoundUp;


namespace {
thread_local const void* tls_io_thread_of = nullptr;
constexpr uint64_t kBatchBytesMax = 64ull << 20;
constexpr size_t kBatchRecordsMax = 256;
}  // namespace

struct DevStoreImpl::GetOp {
  IoRequest io;
  DevStoreImpl* store = nullptr;
  StoreRequest* req = nullptr;
  Rec rec;
  EncodedRange range;
  uint64_t device_offset = 0;
  uint64_t device_length = 0;
  AlignedBuffer buf;
};

struct DevStoreImpl::WriteBatch {
  struct Item {
    StoreRequest* req;
    Rec rec;
    IoRequest io;
    AlignedBuffer buf;
  };
  std::vector<std::unique_ptr<Item>> items;
  IoRequest flush;
  uint32_t writes_left = 0;
  bool flushing = false;
  bool done = false;
  Status status;
};

struct DevStoreImpl::Control {
  double live_fraction_max = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status result;
};

DevStoreImpl::DevStoreImpl(std::unique_ptr<BlockDevice> device, std::string url,
                           StoreOptions options, dev::Superblock sb, dev::SegmentTable table,
                           uint32_t table_slot)
    : device_(std::move(device)), url_(std::move(url)), options_(std::move(options)),
      sb_(std::move(sb)), table_(std::move(table)), table_slot_(table_slot) {
  raid_ = dynamic_cast<RaidDevice*>(device_.get());
  seg_live_.assign(sb_.segment_count, 0);
  seg_reads_.assign(sb_.segment_count, 0);
}

DevStoreImpl::~DevStoreImpl() { Close(); }

void DevStoreImpl::Start() {
  started_ = true;
  io_thread_ = std::thread([this] { IoLoop(); });
}

std::string DevStoreImpl::ObjectPath(const ObjectKey& key) const {
  return url_ + "#" + ObjectName(options_.prefix, key);
}

void DevStoreImpl::Submit(std::span<StoreRequest* const> batch) {
  const bool from_io = tls_io_thread_of == this;
  for (StoreRequest* req : batch) {
    req->submit_ns = MonotonicNowNs();
    stats_.RecordStart();
    Status valid = ValidateRequest(*req);
    if (valid.ok() && req->op == StoreOp::kPut &&
        dev::RecordBytes(dev::RecordType::kPut, req->key.bytes) > SegmentCapacity() - kUnitBytes) {
      valid = Status::InvalidArgument(fmt::format(
          "{}: does not fit a segment of {} bytes; format the store with larger segments",
          KeyText(req->key), SegmentCapacity()));
    }
    if (!valid.ok()) {
      CompleteRequest(&stats_, req, std::move(valid), MonotonicNowNs());
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (!from_io) {
      auto room = [&] { return closing_ || queued_or_running_ < options_.queue_depth_max; };
      WaitWithHint(cv_, lock, room);
    }
    if (closing_) {
      lock.unlock();
      CompleteRequest(&stats_, req, Status::IOError(url_ + ": store is closed"), MonotonicNowNs());
      continue;
    }
    ++queued_or_running_;
    queue_.push_back(req);
    cv_.notify_all();
  }
}

void DevStoreImpl::Close() {
  if (!started_) return;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return queued_or_running_ == 0 && controls_.empty(); });
    closing_ = true;
    cv_.notify_all();
  }
  if (io_thread_.joinable()) io_thread_.join();
  started_ = false;
}

Status DevStoreImpl::Clean(double live_fraction_max) {
  Control c;
  c.live_fraction_max = live_fraction_max;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_ || !started_) return Status::IOError(url_ + ": store is closed");
    controls_.push_back(&c);
    cv_.notify_all();
  }
  std::unique_lock<std::mutex> lock(c.mu);
  WaitWithHint(c.cv, lock, [&] { return c.done; });
  return c.result;
}

DevStoreStats DevStoreImpl::dev_stats() const {
  DevStoreStats s;
  s.segments = sb_.segment_count;
  s.segments_free = free_segments_.load();
  s.segment_bytes = sb_.segment_bytes;
  s.live_bytes = live_bytes_.load();
  s.objects = objects_.load();
  s.batches = batches_.load();
  s.segments_cleaned = segments_cleaned_.load();
  s.records_copied = records_copied_.load();
  s.heal_attempts = heal_attempts_.load();
  s.recovered_records = recovered_records_.load();
  s.dropped_records = dropped_records_.load();
  return s;
}

// ---- The loop --------------------------------------------------------------------------------

void DevStoreImpl::IoLoop() {
  tls_io_thread_of = this;
  while (true) {
    std::deque<StoreRequest*> work;
    Control* control = nullptr;
    bool control_waiting = false;  // a Clean() waits for the batch in flight: start no other
    {
      std::unique_lock<std::mutex> lock(mu_);
      bool busy = device_->InFlight() > 0 || batch_ != nullptr || !pending_writes_.empty();
      if (!busy) {
        cv_.wait(lock, [&] { return closing_ || !queue_.empty() || !controls_.empty(); });
        if (closing_ && queue_.empty() && controls_.empty()) break;
      }
      work.swap(queue_);
      if (!controls_.empty() && batch_ == nullptr) {
        control = controls_.front();
        controls_.pop_front();
      }
      control_waiting = !controls_.empty();
    }
    for (StoreRequest* req : work) Dispatch(req);
    if (control != nullptr) {
      Status result = Status::OK();
      // Each round frees one segment; the copies fill others, so bound the rounds.
      for (uint32_t round = 0; result.ok() && round < sb_.segment_count; ++round) {
        Result<bool> freed = CleanOne(control->live_fraction_max, /*need_bytes=*/0);
        if (!freed.ok()) result = freed.status();
        if (!freed.ok() || !*freed) break;
      }
      std::lock_guard<std::mutex> lock(control->mu);
      control->result = result;
      control->done = true;
      control->cv.notify_all();
    }
    if (batch_ == nullptr && !pending_writes_.empty() && !control_waiting) StartWriteBatch();
    if (device_->InFlight() > 0) {
      Result<size_t> polled = device_->Poll(1);
      if (!polled.ok()) {  // the device refuses to poll: its requests fail; do not spin
        StoreLog(options_.log, url_ + ": " + polled.status().ToString());
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    std::vector<IoRequest*> finished;
    finished.swap(finished_io_);
    for (IoRequest* io : finished) {
      if (batch_ != nullptr && io->ctx == batch_.get()) {
        if (io == &batch_->flush || --batch_->writes_left == 0) batch_->done = true;
        continue;
      }
      FinishGet(static_cast<GetOp*>(io->ctx));
    }
    if (batch_ != nullptr && batch_->done) FinishWriteBatch();
    RunCompletions();
  }
  tls_io_thread_of = nullptr;
}

void DevStoreImpl::IoDone(IoRequest* io) {
  // Runs inside the device's Poll, always on the I/O thread (the only thread that polls the
  // device once the store started): only record it.
  DevStoreImpl* self = static_cast<DevStoreImpl*>(const_cast<void*>(tls_io_thread_of));
  self->finished_io_.push_back(io);
}

void DevStoreImpl::Dispatch(StoreRequest* req) {
  switch (req->op) {
    case StoreOp::kGet: StartGet(req); return;
    case StoreOp::kList: DoList(req); return;
    case StoreOp::kPut:
    case StoreOp::kDelete: pending_writes_.push_back(req); return;
    // A put completes only after its batch's flush: every completed one is durable already.
    case StoreOp::kSync: CompleteLater(req, Status::OK()); return;
  }
}

void DevStoreImpl::CompleteLater(StoreRequest* req, Status status) {
  completions_.emplace_back(req, std::move(status));
}

void DevStoreImpl::RunCompletions() {
  if (completions_.empty()) return;
  std::vector<std::pair<StoreRequest*, Status>> done;
  done.swap(completions_);
  uint64_t now = MonotonicNowNs();
  for (auto& [req, status] : done) CompleteRequest(&stats_, req, std::move(status), now);
  std::lock_guard<std::mutex> lock(mu_);
  queued_or_running_ -= static_cast<uint32_t>(done.size());
  cv_.notify_all();
}

// ---- Gets and lists --------------------------------------------------------------------------

void DevStoreImpl::StartGet(StoreRequest* req) {
  auto it = index_.find(req->key);
  if (it == index_.end() || it->second.back().type != dev::RecordType::kPut) {
    CompleteLater(req, Status::NotFound(ObjectPath(req->key) + ": not in the store"));
    return;
  }
  auto* op = new GetOp;
  op->store = this;
  op->req = req;
  op->rec = it->second.back();
  op->range = EncodedRangeFor(req->key.bytes, req->offset, req->length);
  op->device_offset = SegmentOffset(op->rec.segment) + op->rec.position + kUnitBytes +
                      op->range.offset;
  op->device_length = RoundUp(op->range.length, kUnitBytes);
  op->buf = AllocUnits(op->device_length);
  op->io.Reset(IoOp::kRead, op->device_offset, op->device_length, op->buf.data());
  op->io.ctx = op;
  op->io.done = &DevStoreImpl::IoDone;
  ++seg_reads_[op->rec.segment];
  ++gets_in_flight_;
  IoRequest* io = &op->io;
  Status s = device_->Submit(std::span<IoRequest* const>(&io, 1));
  if (!s.ok()) {
    op->io.status = s;
    finished_io_.push_back(io);
  }
}

void DevStoreImpl::FinishGet(GetOp* op) {
  std::unique_ptr<GetOp> owned(op);
  --seg_reads_[op->rec.segment];
  --gets_in_flight_;
  StoreRequest* req = op->req;
  if (!op->io.status.ok()) {
    CompleteLater(req, op->io.status.WithContext(ObjectPath(req->key)));
    return;
  }
  stats_.RecordStoredRead(op->device_length);
  const uint32_t seed =
      ObjectSeed(req->key, dev::RecordSalt(op->rec.generation, op->rec.position));
  SectorMismatch mismatch;
  auto decode = [&] {
    return DecodeRange(seed, req->key.bytes, op->buf.data(), req->offset, req->length, req->buf,
                       &mismatch);
  };
  if (decode()) {
    CompleteLater(req, Status::OK());
    return;
  }
  stats_.RecordChecksumFailure();
  Status corruption = SectorCorruption(ObjectPath(req->key), mismatch);
  StoreLog(options_.log, corruption.message());
  SectorMismatch first = mismatch;
  if (TryHeal(op->device_offset, op->device_length, op->buf.data(), decode,
              ObjectPath(req->key))) {
    stats_.RecordHealed();
    CompleteLater(req, Status::OK());
    return;
  }
  CompleteLater(req, SectorCorruption(ObjectPath(req->key), first));
}

void DevStoreImpl::DoList(StoreRequest* req) {
  for (const auto& [key, recs] : index_) {
    if (key.kind != req->list_kind || recs.back().type != dev::RecordType::kPut) continue;
    req->list_out->push_back(ObjectInfo{key, RecBytes(key, recs.back())});
  }
  CompleteLater(req, Status::OK());
}

// ---- Write batches ---------------------------------------------------------------------------

void DevStoreImpl::StartWriteBatch() {
  auto batch = std::make_unique<WriteBatch>();
  uint64_t bytes = 0;
  while (!pending_writes_.empty() && batch->items.size() < kBatchRecordsMax &&
         bytes < kBatchBytesMax) {
    StoreRequest* req = pending_writes_.front();
    dev::RecordType type =
        req->op == StoreOp::kPut ? dev::RecordType::kPut : dev::RecordType::kDelete;
    if (type == dev::RecordType::kDelete) {
      auto it = index_.find(req->key);
      bool live = it != index_.end() && it->second.back().type == dev::RecordType::kPut;
      bool in_batch = false;
      for (const auto& item : batch->items) in_batch |= item->req->key == req->key;
      if (!live && !in_batch) {
        pending_writes_.pop_front();
        CompleteLater(req, Status::NotFound(ObjectPath(req->key) + ": not in the store"));
        continue;
      }
    }
    uint64_t record_bytes = dev::RecordBytes(type, req->key.bytes);
    bool fits = open_seg_ >= 0 && !seal_open_ && open_pos_ + record_bytes <= SegmentCapacity();
    if (!fits) {
      if (!batch->items.empty()) break;  // a batch stays in one segment
      Status room = EnsureRoom(record_bytes, /*for_cleaning=*/false);
      if (!room.ok()) {
        pending_writes_.pop_front();
        CompleteLater(req, room.WithContext(ObjectPath(req->key)));
        continue;
      }
    }
    pending_writes_.pop_front();
    auto item = std::make_unique<WriteBatch::Item>();
    item->req = req;
    item->rec = Rec{static_cast<uint32_t>(open_seg_), static_cast<uint32_t>(open_pos_),
                    table_.entries[open_seg_].generation, type};
    item->buf = AllocUnits(record_bytes);
    dev::EncodeRecordHeader(
        dev::RecordHeader{type, req->key, item->rec.generation, item->rec.position},
        store_seed_, item->buf.data());
    if (type == dev::RecordType::kPut) {
      EncodePut(ObjectSeed(req->key, dev::RecordSalt(item->rec.generation, item->rec.position)),
                *req, item->buf.data() + kUnitBytes);
    }
    item->io.Reset(IoOp::kWrite, SegmentOffset(item->rec.segment) + item->rec.position,
                   record_bytes, item->buf.data());
    item->io.ctx = batch.get();
    item->io.done = &DevStoreImpl::IoDone;
    open_pos_ += record_bytes;
    bytes += record_bytes;
    batch->items.push_back(std::move(item));
  }
  if (batch->items.empty()) return;
  std::vector<IoRequest*> ios;
  for (auto& item : batch->items) ios.push_back(&item->io);
  batch->writes_left = static_cast<uint32_t>(ios.size());
  batch_ = std::move(batch);
  stats_.RecordStoredWrite(bytes);
  Status s = device_->Submit(ios);
  if (!s.ok()) {
    batch_->status = s;
    batch_->done = true;
  }
}

// Called when the batch's writes completed (then again when its flush completed).
void DevStoreImpl::FinishWriteBatch() {
  WriteBatch* b = batch_.get();
  b->done = false;
  if (!b->flushing) {
    for (auto& item : b->items) {
      if (!item->io.status.ok() && b->status.ok()) b->status = item->io.status;
    }
    if (b->status.ok()) {
      b->flush.Reset(IoOp::kFlush, 0, 0, nullptr);
      b->flush.ctx = b;
      b->flush.done = &DevStoreImpl::IoDone;
      IoRequest* f = &b->flush;
      Status s = device_->Submit(std::span<IoRequest* const>(&f, 1));
      if (s.ok()) {
        b->flushing = true;
        return;
      }
      b->status = s;
    }
  } else if (!b->flush.status.ok()) {
    b->status = b->flush.status;
  }
  ++batches_;
  if (b->status.ok()) {
    for (auto& item : b->items) {
      AddRecord(item->req->key, item->rec);
      CompleteLater(item->req, Status::OK());
    }
  } else {
    // The records may or may not be on the device; none is in the index, and the open
    // segment takes no more records: it is sealed before them, so a record of this batch
    // (torn or not) is never walked at recovery.
    seal_open_ = true;
    open_pos_ = b->items.front()->rec.position;
    for (auto& item : b->items) {
      CompleteLater(item->req, b->status.WithContext(ObjectPath(item->req->key)));
    }
  }
  batch_.reset();
}

}  // namespace folio::store
