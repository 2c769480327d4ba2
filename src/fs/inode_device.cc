// InodeDevice: the write log, reads through the slice lists, flush and commit (see the header).
#include "fs/inode_device.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/clock.h"
#include "base/may_block.h"
#include "fs/data_path.h"
#include "fs/fs_internal.h"
#include "fs/slice_view.h"
#include "fs/store/sector_codec.h"
#include "fs/store_io.h"

namespace folio::fs {

namespace {

constexpr uint32_t kMaxObjectBytes = static_cast<uint32_t>(meta::kChunkBytes);
constexpr uint32_t kPutsPerDeviceMax = 8;
// The largest merged write: writeback's folios complete when their merged write has been
// copied into blocks, so larger merges only hold them in writeback longer (sequential RADOS
// writes merged up to a chunk ran at 434 MiB/s against 462, medians of 4 alternating runs;
// docs/fs.md, "One batch per window").
constexpr uint64_t kMergedWriteMaxBytes = 8ull << 20;

// A put's or a sync's outcome for one block: failed (its buffer stays: the next flush puts it
// again), or `done` (kStored gives the buffer up, to `spares` when there is one: the store
// holds the block durably).
void FinishBlock(LogObject::Block& blk, const Status& status, LogObject::BlockState done,
                 BlockBufferPool* spares) {
  if (!status.ok()) {
    blk.state = LogObject::BlockState::kFailed;
    blk.error = status;
    return;
  }
  blk.state = done;
  if (done != LogObject::BlockState::kStored) return;
  // Another reference is the store's, kept after a put of the buffer failed without an answer
  // (librados may still send it): it is never reused then.
  if (spares != nullptr && blk.data != nullptr && blk.data.use_count() == 1) {
    spares->Give(std::move(*blk.data));
  }
  blk.data.reset();
}

}  // namespace

// Where a read's bytes go: one buffer, or the folios of a merged request. Byte `at` of the
// read is in the piece that holds it.
class InodeDevice::ReadDst {
 public:
  explicit ReadDst(std::span<const iovec> iov) : iov_(iov) {}
  // Calls fn(p, n, done) for each contiguous piece of the read's bytes [at, at + len), in
  // order; `done` counts the bytes of the range before the piece.
  template <class Fn>
  void ForEach(uint64_t at, uint64_t len, Fn&& fn) const {
    size_t i = 0;
    uint64_t base = 0;
    while (base + iov_[i].iov_len <= at) base += iov_[i++].iov_len;
    for (uint64_t done = 0; done < len; base += iov_[i++].iov_len) {
      const uint64_t in = at + done - base;
      const uint64_t n = std::min<uint64_t>(len - done, iov_[i].iov_len - in);
      fn(static_cast<char*>(iov_[i].iov_base) + in, n, done);
      done += n;
    }
  }
  // How many pieces hold bytes [at, at + len).
  size_t Pieces(uint64_t at, uint64_t len) const {
    size_t n = 0;
    ForEach(at, len, [&](char*, uint64_t, uint64_t) { ++n; });
    return n;
  }

 private:
  std::span<const iovec> iov_;
};

namespace {

// A get of one object range whose bytes go to several small folios: read into one buffer
// (a block buffer of the pool), copied out once the batch is done.
struct BounceGet {
  uint64_t at = 0;  // bytes of the read before the range
  uint64_t len = 0;
  std::vector<char> buf;
};

}  // namespace

struct InodeDevice::PutCtx {
  InodeDevice* dev = nullptr;
  std::shared_ptr<LogObject> obj;
  uint32_t block = 0;
  store::StoreRequest req;
};

struct InodeDevice::SyncCtx {
  InodeDevice* dev = nullptr;
  std::vector<WrittenBlock> blocks;
  std::vector<store::ObjectKey> keys;  // the request's sync_keys
  uint64_t bytes = 0;
  store::StoreRequest req;
};

InodeDevice::InodeDevice(Owner* owner, const DataContext* ctx, InodeId ino,
                         uint64_t capacity_bytes)
    // Reads up to a chunk: a readahead window is then one merged read whose gets all go out
    // together (QueuedDevice executes a batch's merged requests one after another). Writes
    // up to kMergedWriteMaxBytes: writeback completes its folios in steps that size.
    // No histograms: one device per cached file, and none read them.
    : QueuedDevice(256, meta::kChunkBytes, /*histograms=*/false, kMergedWriteMaxBytes),
      owner_(owner),
      ctx_(ctx),
      ino_(ino),
      name_("folio-fs:" + std::to_string(Raw(ino))),
      block_bytes_(ctx->format.block_bytes),
      refresh_ns_(static_cast<uint64_t>(std::max<int64_t>(1000, ctx->format.deletion_grace_ms / 4)) * 1000000),
      defer_sync_(ctx->store->DefersSync()),
      sync_batch_bytes_(std::max<uint64_t>(1, ctx->options.store_sync_batch_bytes)),
      capacity_(capacity_bytes) {}

InodeDevice::~InodeDevice() { WaitIoIdle(); }

Status InodeDevice::Init(const std::vector<uint32_t>* known) {
  std::vector<uint32_t> chunks;
  if (known != nullptr) {
    chunks = *known;
  } else {
    FOLIO_RETURN_IF_ERROR(ctx_->meta->Transact("open", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(chunks, t.ListChunks(ino_));
      return Status::OK();
    }));
  }
  std::lock_guard<std::mutex> lock(mu_);
  known_.insert(chunks.begin(), chunks.end());
  return Status::OK();
}

io_internal::DeviceGeometry InodeDevice::geometry() const {
  return io_internal::DeviceGeometry{name_, 4096, 0, size_bytes(), false};
}

Status InodeDevice::Execute(const io_internal::MergedRequest& m, const iovec* iov) {
  const std::span<const iovec> pieces(iov, m.iov_count);
  switch (m.op) {
    case IoOp::kRead: {
      // One ReadRange over the whole merged read: its slices are resolved once and every
      // stored segment's get is in flight together (a readahead window of four 2 MiB folios
      // is four gets at once, not one after another). Large folios are read in place; the
      // part of an object that goes to small folios is one get into a buffer, not one per
      // folio (ReadRangeOnce).
      return ReadRange(m.offset, m.length, ReadDst(pieces));
    }
    case IoOp::kWrite: {
      uint64_t pos = m.offset;
      for (const iovec& v : pieces) {
        FOLIO_RETURN_IF_ERROR(Write(pos, static_cast<const char*>(v.iov_base), v.iov_len));
        pos += v.iov_len;
      }
      return Status::OK();
    }
    case IoOp::kFlush: return FlushAndCommit();
    case IoOp::kTrim: return Trim(m.offset, m.length);
  }
  return Status::OK();
}

// ---- Committed lists -------------------------------------------------------------------

Status InodeDevice::EnsureLoaded(uint32_t chunk) {
  for (;;) {
    uint64_t version;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (known_.count(chunk) == 0) {
        ChunkCache& c = chunks_[chunk];
        if (!c.loaded) {
          c.loaded = true;  // a chunk the file never had: empty, nothing to load
          c.load_ns = MonotonicNowNs();
        }
        return Status::OK();
      }
      ChunkCache& c = chunks_[chunk];
      if (c.loaded && MonotonicNowNs() - c.load_ns < refresh_ns_) return Status::OK();
      version = c.version;
    }
    std::vector<meta::Slice> slices;
    FOLIO_RETURN_IF_ERROR(ctx_->meta->Transact("read_chunk", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(slices, t.GetChunk(ino_, chunk));
      return Status::OK();
    }));
    std::lock_guard<std::mutex> lock(mu_);
    ChunkCache& c = chunks_[chunk];
    if (c.version != version) continue;  // changed here meanwhile: load again
    c.slices = std::move(slices);
    c.loaded = true;
    c.load_ns = MonotonicNowNs();
    return Status::OK();
  }
}

Status InodeDevice::LockLoaded(uint32_t chunk, std::unique_lock<std::mutex>* lock) {
  for (;;) {
    FOLIO_RETURN_IF_ERROR(EnsureLoaded(chunk));
    std::unique_lock<std::mutex> l(mu_);
    if (chunks_[chunk].loaded) {
      *lock = std::move(l);
      return Status::OK();
    }
  }
}

void InodeDevice::InvalidateChunk(uint32_t chunk) {
  std::lock_guard<std::mutex> lock(mu_);
  ChunkCache& c = chunks_[chunk];
  c.loaded = false;
  c.version++;
  known_.insert(chunk);
}

Status InodeDevice::DropCommittedCache() {
  std::vector<uint32_t> chunks;
  FOLIO_RETURN_IF_ERROR(ctx_->meta->Transact("open", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(chunks, t.ListChunks(ino_));
    return Status::OK();
  }));
  std::lock_guard<std::mutex> lock(mu_);
  known_.insert(chunks.begin(), chunks.end());
  for (auto& [idx, c] : chunks_) {
    c.loaded = false;
    c.version++;
  }
  return Status::OK();
}

std::vector<uint32_t> InodeDevice::KnownChunks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<uint32_t>(known_.begin(), known_.end());
}

Result<std::vector<meta::Slice>> InodeDevice::CommittedChunk(uint32_t chunk) {
  std::unique_lock<std::mutex> lock;
  FOLIO_RETURN_IF_ERROR(LockLoaded(chunk, &lock));
  return chunks_[chunk].slices;
}

Result<std::vector<std::pair<uint32_t, uint32_t>>> InodeDevice::DataExtents(uint32_t chunk) {
  std::vector<meta::Slice> all;
  {
    std::unique_lock<std::mutex> lock;
    FOLIO_RETURN_IF_ERROR(LockLoaded(chunk, &lock));
    all = chunks_[chunk].slices;
    for (const PendingRecord& r : pending_) {
      if (r.chunk == chunk) all.push_back(r.slice);
    }
  }
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const Segment& seg : ResolveSlices(all, 0, static_cast<uint32_t>(meta::kChunkBytes))) {
    if (seg.src < 0 || all[seg.src].kind == meta::SliceKind::kZero) continue;
    if (!out.empty() && out.back().second == seg.pos) {
      out.back().second = seg.pos + seg.len;
    } else {
      out.emplace_back(seg.pos, seg.pos + seg.len);
    }
  }
  return out;
}

// ---- Reads -----------------------------------------------------------------------------

Status InodeDevice::ReadRange(uint64_t pos, uint64_t len, char* dst) {
  const iovec one{dst, len};
  return ReadRange(pos, len, ReadDst({&one, 1}));
}

Status InodeDevice::ReadRange(uint64_t pos, uint64_t len, const ReadDst& dst) {
  if (len == 0) return Status::OK();
  Status s;
  for (int attempt = 0; attempt < kReadReloadsMax; ++attempt) {
    s = ReadRangeOnce(pos, len, dst);
    if (!s.IsNotFound()) return s;
    // An object of a cached committed list is gone: another mount rewrote the chunk
    // (compaction, truncate, a pack) and its grace period ended before this list was reloaded
    // (deletion_grace_ms shorter than a quarter of it, or 0). The metadata no longer names it:
    // load the lists again and read what they name now.
    for (uint64_t c = pos / meta::kChunkBytes; c <= (pos + len - 1) / meta::kChunkBytes; ++c) {
      InvalidateChunk(static_cast<uint32_t>(c));
    }
  }
  return s;
}

Status InodeDevice::ReadRangeOnce(uint64_t pos, uint64_t len, const ReadDst& dst) {
  StoreBatch batch(ctx_->store);
  // Bytes [at, at + n) of the read are bytes [off, off + n) of the object `key`: one get in
  // place when they go to one folio or to large ones, else one get into a buffer (a window of
  // small folios, as at the start of a sequential read, is a get per block, not per folio).
  std::vector<BounceGet> bounces;
  BlockBufferPool* const spares = ctx_->block_buffers.get();
  auto get = [&](const store::ObjectKey& key, uint64_t off, uint64_t n, uint64_t at) {
    const size_t pieces = dst.Pieces(at, n);
    if (pieces == 1 || n / pieces >= kInPlaceReadMinBytes) {
      dst.ForEach(at, n, [&](char* p, uint64_t m, uint64_t done) {
        batch.Get(key, off + done, m, p);
      });
      return;
    }
    BounceGet& b = bounces.emplace_back();
    b.at = at;
    b.len = n;
    // A spare is a whole block's encoding, longer than any get into it: it stays that long
    // (b.len is the get's), so it goes back to the spares as it came.
    if (spares != nullptr) b.buf = spares->Take();
    if (b.buf.size() < n) b.buf.resize(n);
    batch.Get(key, off, n, b.buf.data());
  };
  uint64_t at = 0;  // bytes of the read before `pos`
  while (len > 0) {
    const uint32_t chunk = static_cast<uint32_t>(pos / meta::kChunkBytes);
    const uint32_t from = static_cast<uint32_t>(pos % meta::kChunkBytes);
    const uint32_t to = static_cast<uint32_t>(std::min<uint64_t>(meta::kChunkBytes, from + len));
    std::unique_lock<std::mutex> lock;
    FOLIO_RETURN_IF_ERROR(LockLoaded(chunk, &lock));
    const ChunkCache& c = chunks_[chunk];
    std::vector<meta::Slice> all = c.slices;
    const size_t committed = all.size();
    std::vector<const PendingRecord*> recs;
    for (const PendingRecord& r : pending_) {
      if (r.chunk != chunk) continue;
      all.push_back(r.slice);
      recs.push_back(&r);
    }
    for (const Segment& seg : ResolveSlices(all, from, to)) {
      const uint64_t seg_at = at + (seg.pos - from);
      if (seg.src < 0 || all[seg.src].kind == meta::SliceKind::kZero) {
        dst.ForEach(seg_at, seg.len, [](char* p, uint64_t n, uint64_t) { std::memset(p, 0, n); });
        continue;
      }
      const meta::Slice& s = all[seg.src];
      const uint64_t obj_off = s.object_off + (seg.pos - s.pos);
      if (static_cast<size_t>(seg.src) < committed) {
        ForEachObjectRange(s, obj_off, seg.len, block_bytes_,
                           [&](const store::ObjectKey& key, uint64_t off, uint64_t n,
                               uint64_t done) { get(key, off, n, seg_at + done); });
        continue;
      }
      const LogObject& obj = *recs[seg.src - committed]->obj;
      for (uint64_t done = 0; done < seg.len;) {
        const uint64_t o = obj_off + done;
        const uint32_t b = static_cast<uint32_t>(o / block_bytes_);
        const uint64_t in_block = o % block_bytes_;
        const uint64_t n = std::min<uint64_t>(seg.len - done, block_bytes_ - in_block);
        const LogObject::Block& blk = obj.blocks[b];
        if (blk.state != LogObject::BlockState::kStored) {
          FOLIO_CHECK(blk.data != nullptr &&
                      store::EncodedBytes(in_block + n) <= blk.data->size());
          dst.ForEach(seg_at + done, n, [&](char* p, uint64_t m, uint64_t d) {
            store::CopyOutOfSectors(blk.data->data(), in_block + d, p, m);
          });
        } else {
          const uint64_t size =
              obj.sealed ? obj.bytes : (static_cast<uint64_t>(b) + 1) * block_bytes_;
          get(BlockKey(Raw(obj.id), b, size, block_bytes_), in_block, n, seg_at + done);
        }
        done += n;
      }
    }
    at += to - from;
    pos += to - from;
    len -= to - from;
  }
  Status s = batch.Run();
  if (s.ok()) {
    for (const BounceGet& b : bounces) {
      dst.ForEach(b.at, b.len, [&](char* p, uint64_t m, uint64_t done) {
        std::memcpy(p, b.buf.data() + done, m);
      });
    }
  }
  if (spares != nullptr) {
    for (BounceGet& b : bounces) spares->Give(std::move(b.buf));
  }
  if (!s.ok()) return s.WithContext(InodeText(ino_) + ": read");
  return Status::OK();
}

// ---- Writes ----------------------------------------------------------------------------

Status InodeDevice::Write(uint64_t pos, const char* src, uint64_t len) {
  std::optional<meta::SliceId> id;
  while (len > 0) {
    // At most a block at a time: a merged write (up to kMergedWriteMaxBytes) puts each block
    // as soon as it is full, and waits for room before it fills the next, instead of copying
    // all of it first and then sending all its puts at once.
    const uint64_t step = std::min(len, block_bytes_);
    PutList puts;
    uint64_t took;
    {
      std::lock_guard<std::mutex> lock(mu_);
      took = AppendLocked(pos, src, step, &id, &puts);
    }
    SubmitPuts(puts);
    pos += took;
    src += took;
    len -= took;
    if (took < step) {
      // A new object's id may take a metadata transaction (a batch of ids), which must not
      // run under mu_: transactions take locks that are held around mu_ (see the header).
      Result<meta::SliceId> fresh = owner_->NewSliceId();
      if (!fresh.ok()) return fresh.status();
      id = *fresh;
      continue;
    }
    // At most kPutsPerDeviceMax puts in flight, and the buffers of blocks not durable yet
    // bounded: a background sync of one batch runs while the next one fills.
    std::unique_lock<std::mutex> lock(mu_);
    auto room = [&] {
      return puts_in_flight_ < kPutsPerDeviceMax &&
             written_bytes_ + syncing_bytes_ < 2 * sync_batch_bytes_;
    };
    WaitWithHint(puts_cv_, lock, room);
  }
  return Status::OK();
}

uint64_t InodeDevice::AppendLocked(uint64_t pos, const char* src, uint64_t len,
                                   std::optional<meta::SliceId>* id, PutList* puts) {
  const uint64_t want = len;
  while (len > 0) {
    if (!current_ || current_->bytes == kMaxObjectBytes) {
      if (!id->has_value()) return want - len;
      if (current_) SealLocked(puts);
      current_ = std::make_shared<LogObject>();
      current_->id = **id;
      id->reset();
    }
    LogObject& obj = *current_;
    const uint32_t chunk = static_cast<uint32_t>(pos / meta::kChunkBytes);
    const uint32_t cpos = static_cast<uint32_t>(pos % meta::kChunkBytes);
    uint64_t take = std::min<uint64_t>({len, meta::kChunkBytes - cpos, kMaxObjectBytes - obj.bytes});
    // Never past a block's end in one step, so a full block can be put at once.
    take = std::min<uint64_t>(take, block_bytes_ - obj.bytes % block_bytes_);
    const uint32_t b = static_cast<uint32_t>(obj.bytes / block_bytes_);
    if (b >= obj.blocks.size()) obj.blocks.resize(b + 1);
    LogObject::Block& blk = obj.blocks[b];
    if (blk.data == nullptr) blk.data = std::make_shared<std::vector<char>>();
    std::vector<char>& buf = *blk.data;
    const uint64_t in_block = obj.bytes % block_bytes_;
    // A large write (sequential writeback comes in merged requests of up to 8 MiB) will fill
    // the block: a spare (or a new buffer) of a whole block's encoding is taken once, instead
    // of growing its way up with a copy each.
    if (buf.empty() && take >= (64u << 10)) {
      if (BlockBufferPool* spares = ctx_->block_buffers.get()) {
        buf = spares->Take();
      } else {
        buf.resize(store::EncodedBytes(block_bytes_));
      }
    }
    const uint64_t need = store::EncodedBytes(in_block + take);
    if (buf.size() < need) buf.resize(need);
    store::CopyIntoSectors(buf.data(), in_block, src, take);
    const uint32_t o = obj.bytes;
    obj.bytes += static_cast<uint32_t>(take);
    if (in_block + take == block_bytes_) {
      blk.state = LogObject::BlockState::kPutting;
      puts->push_back(MakePut(current_, b));
    }
    PendingRecord* last = pending_.empty() ? nullptr : &pending_.back();
    if (last != nullptr && last->obj == current_ && last->chunk == chunk &&
        last->slice.pos + last->slice.len == cpos && last->slice.object_off + last->slice.len == o) {
      last->slice.len += static_cast<uint32_t>(take);
    } else {
      PendingRecord r;
      r.seq = next_seq_++;
      r.chunk = chunk;
      r.slice.pos = cpos;
      r.slice.len = static_cast<uint32_t>(take);
      r.slice.id = obj.id;
      r.slice.object_off = o;
      r.slice.kind = meta::SliceKind::kBlocks;
      r.obj = current_;
      pending_.push_back(std::move(r));
      // A chunk the device did not know of has no committed data (EnsureLoaded's rule): its
      // committed list is loaded, empty, now, or the flush that packs or commits this record
      // would read it from the engine just because the write made the chunk known.
      if (known_.insert(chunk).second) {
        ChunkCache& c = chunks_[chunk];
        if (!c.loaded) {
          c.loaded = true;
          c.load_ns = MonotonicNowNs();
        }
      }
    }
    pos += take;
    src += take;
    len -= take;
  }
  return want;
}

void InodeDevice::SealLocked(PutList* puts) {
  if (!current_) return;
  LogObject& obj = *current_;
  obj.sealed = true;
  if (obj.bytes % block_bytes_ != 0) {
    const uint32_t b = static_cast<uint32_t>(obj.bytes / block_bytes_);
    obj.blocks[b].state = LogObject::BlockState::kPutting;
    puts->push_back(MakePut(current_, b));
  }
  for (PendingRecord& r : pending_) {
    if (r.obj == current_) r.slice.object_bytes = obj.bytes;
  }
  current_.reset();
}

InodeDevice::PutItem InodeDevice::MakePut(const std::shared_ptr<LogObject>& obj, uint32_t b) const {
  PutItem p;
  p.obj = obj;
  p.block = b;
  const uint64_t size = obj->sealed ? obj->bytes : (static_cast<uint64_t>(b) + 1) * block_bytes_;
  p.key = BlockKey(Raw(obj->id), b, size, block_bytes_);
  // The block is full or sealed: its data no longer changes while the put reads it (the store
  // writes only the CRC slots, which readers of the block never copy).
  p.owner = obj->blocks[b].data;
  p.encoding = p.owner->data();
  return p;
}

void InodeDevice::SubmitPuts(const PutList& puts) {
  if (puts.empty()) return;
  std::vector<store::StoreRequest*> reqs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    puts_in_flight_ += static_cast<uint32_t>(puts.size());
  }
  for (const PutItem& p : puts) {
    auto* ctx = new PutCtx;
    ctx->dev = this;
    ctx->obj = p.obj;
    ctx->block = p.block;
    ctx->req.ResetPutEncoding(p.key, p.encoding, p.owner);
    if (defer_sync_) ctx->req.put_sync = store::PutSync::kDeferred;
    ctx->req.done = &InodeDevice::OnPutDone;
    ctx->req.ctx = ctx;
    reqs.push_back(&ctx->req);
  }
  ctx_->store->Submit(reqs);
}

void InodeDevice::OnPutDone(store::StoreRequest* req) {
  std::unique_ptr<PutCtx> ctx(static_cast<PutCtx*>(req->ctx));
  InodeDevice* dev = ctx->dev;
  std::unique_ptr<SyncCtx> sync;
  req->data_owner.reset();  // before FinishBlock counts the buffer's references
  {
    std::lock_guard<std::mutex> lock(dev->mu_);
    FinishBlock(ctx->obj->blocks[ctx->block], req->status,
                dev->defer_sync_ ? LogObject::BlockState::kWritten : LogObject::BlockState::kStored,
                dev->ctx_->block_buffers.get());
    if (req->status.ok() && dev->defer_sync_) {
      dev->written_.push_back(WrittenBlock{ctx->obj, ctx->block, req->key});
      dev->written_bytes_ += req->key.bytes;
      sync = dev->MaybeBackgroundSyncLocked();
    }
    // A sync taken above is in flight already (syncs_in_flight_): the device outlives it.
    dev->puts_in_flight_--;
    dev->puts_cv_.notify_all();
  }
  if (sync) dev->SubmitSync(std::move(sync));
}

void InodeDevice::WaitPutsBelow(uint32_t limit) {
  std::unique_lock<std::mutex> lock(mu_);
  WaitWithHint(puts_cv_, lock, [&] { return puts_in_flight_ < limit; });
}

void InodeDevice::WaitIoIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  WaitWithHint(puts_cv_, lock, [&] { return puts_in_flight_ == 0 && syncs_in_flight_ == 0; });
}

std::unique_ptr<InodeDevice::SyncCtx> InodeDevice::TakeWrittenLocked() {
  if (written_.empty()) return nullptr;
  auto sync = std::make_unique<SyncCtx>();
  sync->dev = this;
  sync->blocks.swap(written_);
  sync->keys.reserve(sync->blocks.size());
  for (const WrittenBlock& w : sync->blocks) {
    LogObject::Block& blk = w.obj->blocks[w.block];
    FOLIO_CHECK(blk.state == LogObject::BlockState::kWritten);
    blk.state = LogObject::BlockState::kSyncing;
    sync->keys.push_back(w.key);
  }
  sync->bytes = written_bytes_;
  syncing_bytes_ += written_bytes_;
  written_bytes_ = 0;
  syncs_in_flight_++;
  return sync;
}

std::unique_ptr<InodeDevice::SyncCtx> InodeDevice::MaybeBackgroundSyncLocked() {
  if (syncs_in_flight_ > 0 || written_bytes_ < sync_batch_bytes_) return nullptr;
  return TakeWrittenLocked();
}

void InodeDevice::SubmitSync(std::unique_ptr<SyncCtx> sync) {
  SyncCtx* raw = sync.release();  // OnSyncDone owns it (it may run inside Submit)
  raw->req.ResetSync(raw->keys);
  raw->req.done = &InodeDevice::OnSyncDone;
  raw->req.ctx = raw;
  ctx_->store->Submit(&raw->req);
}

void InodeDevice::OnSyncDone(store::StoreRequest* req) {
  std::unique_ptr<SyncCtx> ctx(static_cast<SyncCtx*>(req->ctx));
  InodeDevice* dev = ctx->dev;
  std::unique_ptr<SyncCtx> next;
  {
    std::lock_guard<std::mutex> lock(dev->mu_);
    for (const WrittenBlock& w : ctx->blocks) {
      FinishBlock(w.obj->blocks[w.block], req->status, LogObject::BlockState::kStored,
                  dev->ctx_->block_buffers.get());
    }
    dev->syncing_bytes_ -= ctx->bytes;
    dev->syncs_in_flight_--;
    next = dev->MaybeBackgroundSyncLocked();
    dev->puts_cv_.notify_all();
  }
  if (next) dev->SubmitSync(std::move(next));
}

// ---- Trims and zero records ------------------------------------------------------------

bool InodeDevice::OverlapsDataLocked(uint32_t chunk, uint32_t from, uint32_t to) const {
  auto it = chunks_.find(chunk);
  if (it != chunks_.end()) {
    for (const meta::Slice& s : it->second.slices) {
      if (s.kind != meta::SliceKind::kZero && s.pos < to && from < s.pos + s.len) return true;
    }
  }
  for (const PendingRecord& r : pending_) {
    if (r.chunk == chunk && r.slice.kind != meta::SliceKind::kZero && r.slice.pos < to &&
        from < r.slice.pos + r.slice.len) {
      return true;
    }
  }
  return false;
}

Status InodeDevice::Trim(uint64_t pos, uint64_t len) {
  const uint64_t end = pos + len;
  for (uint32_t chunk : KnownChunks()) {
    const uint64_t base = static_cast<uint64_t>(chunk) * meta::kChunkBytes;
    if (base + meta::kChunkBytes <= pos || base >= end) continue;
    const uint32_t from = static_cast<uint32_t>(std::max(pos, base) - base);
    const uint32_t to = static_cast<uint32_t>(std::min(end, base + meta::kChunkBytes) - base);
    std::unique_lock<std::mutex> lock;
    FOLIO_RETURN_IF_ERROR(LockLoaded(chunk, &lock));
    if (!OverlapsDataLocked(chunk, from, to)) continue;
    PendingRecord r;
    r.seq = next_seq_++;
    r.chunk = chunk;
    r.slice.pos = from;
    r.slice.len = to - from;
    r.slice.kind = meta::SliceKind::kZero;
    pending_.push_back(std::move(r));
  }
  return Status::OK();
}

void InodeDevice::AddZero(uint64_t pos, uint64_t len) {
  const uint64_t end = pos + len;
  std::lock_guard<std::mutex> lock(mu_);
  while (pos < end) {
    const uint32_t chunk = static_cast<uint32_t>(pos / meta::kChunkBytes);
    const uint32_t from = static_cast<uint32_t>(pos % meta::kChunkBytes);
    const uint32_t to = static_cast<uint32_t>(std::min<uint64_t>(meta::kChunkBytes, from + (end - pos)));
    PendingRecord r;
    r.seq = next_seq_++;
    r.chunk = chunk;
    r.slice.pos = from;
    r.slice.len = to - from;
    r.slice.kind = meta::SliceKind::kZero;
    pending_.push_back(std::move(r));
    pos += to - from;
  }
}

// ---- Flush -----------------------------------------------------------------------------

Status InodeDevice::FlushAndCommit() {
  bool frozen = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const PendingRecord& r : pending_) frozen |= r.frozen;
  }
  // A packed file's content must be committed before anything written after it.
  if (frozen) FOLIO_RETURN_IF_ERROR(owner_->WaitPacked());

  std::lock_guard<std::mutex> flush_lock(flush_mu_);
  bool data = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const PendingRecord& r : pending_) data |= r.obj != nullptr && !r.frozen;
  }
  if (const uint64_t pack_size = data ? owner_->PackSize() : 0; pack_size > 0) {
    // A small file: its whole content becomes one entry of a shared pack, not a slice.
    std::vector<char> content(pack_size);
    uint64_t boundary;
    {
      std::lock_guard<std::mutex> lock(mu_);
      boundary = next_seq_;
    }
    // The committed list of chunk 0 the content is read over: the same before and after the
    // read, or unknown (a reload or a commit landed meanwhile).
    FrozenBase base;
    FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Slice> before, CommittedChunk(0));
    FOLIO_RETURN_IF_ERROR(ReadRange(0, pack_size, content.data()));
    FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Slice> after, CommittedChunk(0));
    if (SameSlices(before, after)) base.committed = std::move(after);
    std::vector<std::shared_ptr<LogObject>> orphans;
    base.written = FreezeLocked(content, boundary, &orphans);
    WaitIoIdle();
    DeleteOrphans(orphans);
    return owner_->PackContent(content, std::move(base));
  }
  std::vector<PendingRecord> commit;
  PutList puts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    SealLocked(&puts);
    for (const PendingRecord& r : pending_) {
      if (r.frozen) break;  // packed meanwhile again: stop before it (ordering)
      commit.push_back(r);
      if (!r.obj) continue;
      for (uint32_t b = 0; b < r.obj->blocks.size(); ++b) {
        LogObject::Block& blk = r.obj->blocks[b];
        // Failed puts are retried; a sealed object's block never put is a pack that failed.
        if (blk.state == LogObject::BlockState::kFailed ||
            (r.obj->sealed && blk.state == LogObject::BlockState::kFilling)) {
          blk.state = LogObject::BlockState::kPutting;
          puts.push_back(MakePut(r.obj, b));
        }
      }
    }
  }
  SubmitPuts(puts);
  WaitPutsBelow(1);
  if (defer_sync_) {
    // Every block is put: the written ones (and any a background sync has) become durable
    // in one sync before the records naming them are committed.
    std::unique_ptr<SyncCtx> sync;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sync = TakeWrittenLocked();
    }
    if (sync) SubmitSync(std::move(sync));
    std::unique_lock<std::mutex> lock(mu_);
    WaitWithHint(puts_cv_, lock, [&] { return syncs_in_flight_ == 0; });
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const PendingRecord& r : commit) {
      if (!r.obj) continue;
      for (const LogObject::Block& blk : r.obj->blocks) {
        if (blk.state == LogObject::BlockState::kFailed) {
          return blk.error.WithContext(InodeText(ino_) + ": writing a block of slice " +
                                       std::to_string(Raw(r.obj->id)));
        }
        // Invariant 5: nothing is committed that a power cut could take away.
        FOLIO_CHECK(blk.state == LogObject::BlockState::kStored);
      }
    }
  }
  FOLIO_ASSIGN_OR_RETURN(const Owner::CommitOutcome outcome, owner_->CommitRecords(commit));
  if (commit.empty()) return Status::OK();
  const bool freed = outcome == Owner::CommitOutcome::kInodeFreed;
  std::vector<std::shared_ptr<LogObject>> dead;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t last_seq = commit.back().seq;
    size_t n = 0;
    while (n < pending_.size() && pending_[n].seq <= last_seq) ++n;
    for (size_t i = 0; i < n; ++i) {
      const PendingRecord& r = pending_[i];
      if (freed) {
        if (r.obj) dead.push_back(r.obj);
        continue;
      }
      ChunkCache& c = chunks_[r.chunk];
      if (c.loaded) c.slices.push_back(r.slice);
      c.version++;
      known_.insert(r.chunk);
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<long>(n));
  }
  if (!dead.empty()) {
    // The file is gone: the blocks its records named were never committed, so nothing refers
    // to them; they go now rather than wait for a gc.
    WaitIoIdle();
    DeleteOrphans(dead);
  }
  return Status::OK();
}

bool InodeDevice::HasPending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !pending_.empty();
}

// ---- Truncation, discarding, packing ---------------------------------------------------

void InodeDevice::DeleteOrphans(const std::vector<std::shared_ptr<LogObject>>& candidates) {
  // REQUIRES: no put or sync in flight (WaitIoIdle), so no block is kPutting or kSyncing.
  StoreBatch batch(ctx_->store);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::shared_ptr<LogObject>& obj : candidates) {
      bool named = false;
      for (const PendingRecord& r : pending_) named |= r.obj == obj;
      if (named || obj == current_) continue;
      // Its written blocks wait for no sync any more: they are deleted.
      std::erase_if(written_, [&](const WrittenBlock& w) {
        if (w.obj != obj) return false;
        written_bytes_ -= w.key.bytes;
        return true;
      });
      for (uint32_t b = 0; b < obj->blocks.size(); ++b) {
        const LogObject::BlockState state = obj->blocks[b].state;
        if (state != LogObject::BlockState::kStored && state != LogObject::BlockState::kWritten) {
          continue;
        }
        const uint64_t size = obj->sealed ? obj->bytes : (static_cast<uint64_t>(b) + 1) * block_bytes_;
        batch.Delete(BlockKey(Raw(obj->id), b, size, block_bytes_));
      }
    }
  }
  (void)batch.Run();  // a failed delete leaves garbage for gc, never a dangling reference
}

void InodeDevice::CutPending(uint64_t size, const std::function<void()>& then) {
  std::lock_guard<std::mutex> flush_lock(flush_mu_);
  // A pack entry a flush handed over before this lock would commit the whole old content and
  // size after the cut: let it land (or fail, which unfreezes its record for the cut) first.
  // No flush packs anything new while flush_mu_ is held.
  (void)owner_->WaitPacked();
  std::vector<std::shared_ptr<LogObject>> touched;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<PendingRecord> kept;
    for (PendingRecord& r : pending_) {
      const uint64_t start = static_cast<uint64_t>(r.chunk) * meta::kChunkBytes + r.slice.pos;
      if (r.obj) touched.push_back(r.obj);
      if (start >= size) continue;
      if (start + r.slice.len > size) r.slice.len = static_cast<uint32_t>(size - start);
      kept.push_back(std::move(r));
    }
    pending_.swap(kept);
  }
  WaitIoIdle();
  DeleteOrphans(touched);
  if (then) then();
}

void InodeDevice::DiscardPending() {
  std::lock_guard<std::mutex> flush_lock(flush_mu_);
  std::vector<std::shared_ptr<LogObject>> touched;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const PendingRecord& r : pending_) {
      if (r.obj) touched.push_back(r.obj);
    }
    if (current_) touched.push_back(current_);
    pending_.clear();
    current_.reset();
  }
  WaitIoIdle();
  DeleteOrphans(touched);
}

std::vector<std::pair<uint32_t, uint32_t>> InodeDevice::FreezeLocked(
    const std::vector<char>& content, uint64_t boundary,
    std::vector<std::shared_ptr<LogObject>>* orphans) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PendingRecord> newer;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // (start, end) in chunk 0
  bool current_named = false;
  for (PendingRecord& r : pending_) {
    if (r.seq >= boundary) {
      current_named |= r.obj != nullptr && r.obj == current_;
      newer.push_back(std::move(r));
      continue;
    }
    if (r.chunk == 0) ranges.emplace_back(r.slice.pos, r.slice.pos + r.slice.len);
    if (r.obj) orphans->push_back(r.obj);  // DeleteOrphans keeps what a newer record still names
  }
  pending_.clear();
  if (current_ && !current_named) {
    orphans->push_back(current_);
    current_.reset();
  }
  auto obj = std::make_shared<LogObject>();
  obj->bytes = static_cast<uint32_t>(content.size());
  obj->sealed = true;
  obj->blocks.resize(1);
  obj->blocks[0].data =
      std::make_shared<std::vector<char>>(store::EncodedBytes(content.size()));
  store::CopyIntoSectors(obj->blocks[0].data->data(), 0, content.data(), content.size());
  PendingRecord r;
  // Below every newer record: the seqs below the boundary are those of the records it
  // replaces (the flush packs only when there is a record, so boundary >= 1).
  r.seq = boundary - 1;
  r.chunk = 0;
  r.slice.pos = 0;
  r.slice.len = obj->bytes;
  r.slice.object_bytes = obj->bytes;
  r.slice.kind = meta::SliceKind::kBlocks;
  r.obj = std::move(obj);
  r.frozen = true;
  pending_.push_back(std::move(r));
  for (PendingRecord& n : newer) pending_.push_back(std::move(n));
  known_.insert(0);
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> written;  // (pos, len), merged
  for (const auto& [start, end] : ranges) {
    if (!written.empty() && start <= written.back().first + written.back().second) {
      const uint32_t last_end = std::max(written.back().first + written.back().second, end);
      written.back().second = last_end - written.back().first;
    } else {
      written.emplace_back(start, end - start);
    }
  }
  return written;
}

void InodeDevice::Packed() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (!pending_[i].frozen) continue;
    pending_.erase(pending_.begin() + static_cast<long>(i));
    break;
  }
  ChunkCache& c = chunks_[0];
  c.loaded = false;
  c.version++;
  known_.insert(0);
}

Status InodeDevice::UnfreezeAfterFailedPack() {
  for (;;) {
    // The id is taken before mu_ (it may take a metadata transaction); the last one is unused.
    FOLIO_ASSIGN_OR_RETURN(meta::SliceId id, owner_->NewSliceId());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(pending_.begin(), pending_.end(),
                           [](const PendingRecord& r) { return r.frozen; });
    if (it == pending_.end()) return Status::OK();
    // It stays where it is in the write order; the next flush puts its block (an unstored
    // block of a sealed object) and commits it like any record.
    it->obj->id = id;
    it->slice.id = id;
    it->frozen = false;
  }
}

}  // namespace folio::fs
