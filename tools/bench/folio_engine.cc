// The folio:* engines: the job through Folio's page cache (one AddressSpace over an O_DIRECT
// file device, or over the --device) or, with direct=1, straight to the BlockDevice with
// iodepth requests in flight.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "base/check.h"
#include "base/clock.h"
#include "base/units.h"
#include "bench/engine.h"
#include "folio/arena.h"

namespace folio::bench {

namespace {

void FillPseudoRandom(char* buf, uint64_t bytes, uint64_t seed) {
  for (uint64_t i = 0; i + 8 <= bytes; i += 8) {
    uint64_t v = SplitMix64(&seed);
    std::memcpy(buf + i, &v, 8);
  }
}

FolioPolicy PolicyFor(const EngineSpec& e) {
  FolioPolicy p;
  switch (e.kind) {
    case EngineSpec::Kind::kFolio4k:
      p.kind = FolioPolicy::Kind::k4k;
      break;
    case EngineSpec::Kind::kFolioFixed:
      p.kind = FolioPolicy::Kind::kFixed;
      p.fixed_order = Log2(e.fixed_bytes / kPageBytes);
      break;
    case EngineSpec::Kind::kFolioDynamic:
    case EngineSpec::Kind::kKernel:
    case EngineSpec::Kind::kKernel4k:
    case EngineSpec::Kind::kLimit:
    case EngineSpec::Kind::kFio:
      p.kind = FolioPolicy::Kind::kDynamic;
      break;
  }
  return p;
}

Result<std::unique_ptr<BlockDevice>> OpenDataFile(const EngineContext& ctx, uint32_t depth) {
  FileDeviceOptions o;
  o.direct = true;
  o.queue_depth = std::clamp<uint32_t>(depth, 64, 4096);
  return OpenFileDevice(ctx.path, o);
}

// ---- Through the page cache ------------------------------------------------------------

class CachedWorker : public WorkerIo {
 public:
  CachedWorker(AddressSpace* as, uint64_t block_bytes, uint64_t seed)
      : as_(as),
        block_bytes_(block_bytes),
        buf_(std::make_unique_for_overwrite<char[]>(block_bytes)) {
    FillPseudoRandom(buf_.get(), block_bytes, seed);
  }
  uint32_t depth() const override { return 1; }

  Status Start(const Op& op) override {
    pending_ = true;
    if (op.write) {
      FOLIO_ASSIGN_OR_RETURN(size_t n, as_->Write(op.pos, {buf_.get(), block_bytes_}));
      if (n != block_bytes_) return Short("write", op.pos, n);
    } else {
      FOLIO_ASSIGN_OR_RETURN(size_t n, as_->Read(op.pos, {buf_.get(), block_bytes_}));
      if (n != block_bytes_) return Short("read", op.pos, n);
    }
    return Status::OK();
  }

  Status Reap(std::vector<uint32_t>* done) override {
    if (pending_) done->push_back(0);
    pending_ = false;
    return Status::OK();
  }

  // The page cache has one durability call (writeback + device flush) for both kinds.
  Status Sync(bool) override { return as_->Fsync(); }

 private:
  Status Short(const char* what, uint64_t pos, size_t n) const {
    return Status::IOError(as_->name() + ": " + what + " of " + std::to_string(block_bytes_) +
                           " bytes at " + std::to_string(pos) + " moved only " +
                           std::to_string(n));
  }
  AddressSpace* const as_;
  const uint64_t block_bytes_;
  std::unique_ptr<char[]> buf_;
  bool pending_ = false;
};

class FolioCachedEngine : public Engine {
 public:
  explicit FolioCachedEngine(const EngineContext& ctx) : ctx_(ctx) {}

  Status Prepare() override {
    const uint64_t t0_ns = MonotonicNowNs();
    PageCacheOptions o = ctx_.cache_options;
    o.memory_bytes = ctx_.cache_bytes;
    o.policy = PolicyFor(ctx_.engine);
    FOLIO_ASSIGN_OR_RETURN(cache_, PageCache::Create(o));
    if (ctx_.device != nullptr) {
      device_ = ctx_.device;
    } else {
      FOLIO_ASSIGN_OR_RETURN(owned_device_, OpenDataFile(ctx_, 64));
      device_ = owned_device_.get();
    }
    AddressSpaceOptions ao;
    ao.name = ctx_.job.name;
    ao.size_bytes = ctx_.file_bytes;
    FOLIO_ASSIGN_OR_RETURN(as_, cache_->Open(device_, ao));
    if (ctx_.job.pre_read) FOLIO_RETURN_IF_ERROR(PreRead());
    before_ = cache_->Stats();
    device_->ResetStats();
    stats_.setup_s = SecondsSince(t0_ns);
    return Status::OK();
  }

  Result<std::unique_ptr<WorkerIo>> NewWorker(uint32_t index) override {
    return std::unique_ptr<WorkerIo>(
        std::make_unique<CachedWorker>(as_.get(), ctx_.job.block_bytes, index + 1));
  }

  Status Finish() override {
    if (RwModeWrites(ctx_.job.rw)) {
      const uint64_t t0_ns = MonotonicNowNs();
      FOLIO_RETURN_IF_ERROR(as_->Fsync());
      stats_.sync_s = SecondsSince(t0_ns);
    }
    stats_.cache_used = true;
    stats_.cache = DiffCacheStats(cache_->Stats(), before_);
    stats_.device = device_->stats();
    stats_.backing = cache_->arena()->backing_report();
    // The address space goes before the cache, the device last (a --device stays open).
    as_.reset();
    cache_.reset();
    owned_device_.reset();
    device_ = nullptr;
    return Status::OK();
  }

  void OnMeasureStart() override { reads_at_start_ = device_->stats().read_bytes; }
  int64_t device_read_bytes() const override {
    return static_cast<int64_t>(stats_.device.read_bytes - reads_at_start_);
  }
  MemoryReport memory() const override {
    MemoryReport m;
    m.kind = "cache";
    m.limit_bytes = ctx_.cache_bytes;
    return m;
  }
  const FolioRunStats* folio_stats() const override { return &stats_; }
  std::vector<std::string> notes() const override { return notes_; }

 private:
  // Sequential 1 MiB reads through the cache, so readahead builds large folios where the
  // policy allows them (dynamic) and 4 KiB ones where it does not.
  Status PreRead() {
    auto buf = std::make_unique_for_overwrite<char[]>(1 << 20);
    const uint64_t end = ctx_.region_offset + ctx_.region_bytes;
    for (uint64_t pos = ctx_.region_offset; pos < end && !ctx_.stop->load(); pos += 1 << 20) {
      const uint64_t len = std::min<uint64_t>(1 << 20, end - pos);
      FOLIO_ASSIGN_OR_RETURN(size_t n, as_->Read(pos, {buf.get(), len}));
      if (n != len) return Status::IOError(device_->name() + ": pre_read stopped short at " +
                                           std::to_string(pos + n));
    }
    notes_.push_back(ctx_.engine.Name() + ": " + (ctx_.device != nullptr ? "device" : "file") +
                     " read once through the cache before the run (1M sequential reads)");
    return Status::OK();
  }

  const EngineContext ctx_;
  // Declaration order is destruction order reversed: the address space dies first.
  std::unique_ptr<BlockDevice> owned_device_;  // null with --device
  BlockDevice* device_ = nullptr;              // owned_device_ or ctx_.device
  std::unique_ptr<PageCache> cache_;
  std::unique_ptr<AddressSpace> as_;
  PageCacheStats before_;
  uint64_t reads_at_start_ = 0;  // device read bytes when the timed region started
  FolioRunStats stats_;
  std::vector<std::string> notes_;
};

// ---- Straight to the device (direct=1) --------------------------------------------------

class DirectWorker : public WorkerIo {
 public:
  DirectWorker(BlockDevice* device, FolioArena* arena, const JobSpec& job)
      : device_(device), arena_(arena), job_(job), depth_(job.iodepth),
        reqs_(new IoRequest[job.iodepth]) {
    batch_.reserve(depth_);
  }

  // Takes iodepth buffers from the arena and fills them (the data written by write ops).
  Status Init(uint64_t seed) {
    const int order = OrderFor(job_.block_bytes);
    for (uint32_t i = 0; i < depth_; ++i) {
      FOLIO_ASSIGN_OR_RETURN(Folio * f, arena_->Alloc(order));
      bufs_.push_back(f);
      FillPseudoRandom(arena_->Data(f), job_.block_bytes, seed * 1000003 + i);
      reqs_[i].done = &DirectWorker::OnDone;
      reqs_[i].ctx = this;
    }
    return Status::OK();
  }
  ~DirectWorker() override {
    for (Folio* f : bufs_) arena_->Free(f);
  }

  static int OrderFor(uint64_t bytes) {
    const uint64_t pages = (bytes + kPageBytes - 1) / kPageBytes;
    return pages <= 1 ? 0 : Log2(pages - 1) + 1;
  }

  uint32_t depth() const override { return depth_; }

  Status Start(const Op& op) override {
    IoRequest* r = &reqs_[op.slot];
    r->Reset(op.write ? IoOp::kWrite : IoOp::kRead, op.pos, job_.block_bytes,
             arena_->Data(bufs_[op.slot]));
    batch_.push_back(r);
    return batch_.size() >= job_.SubmitBatch() ? SubmitQueued() : Status::OK();
  }

  Status Reap(std::vector<uint32_t>* done) override {
    FOLIO_RETURN_IF_ERROR(SubmitQueued());
    const size_t before = done->size();
    done_ = done;
    error_ = Status::OK();
    Result<size_t> n = device_->Poll(1);
    done_ = nullptr;
    if (!n.ok()) return n.status();
    if (done->size() == before && device_->InFlight() == 0) {
      // The worker has requests outstanding that the device no longer knows: fail the run
      // rather than wait forever.
      return Status::IOError(device_->name() + ": Poll completed nothing while requests of "
                             "this thread were outstanding");
    }
    return error_;
  }

  // A device flush (REQUIRES, as WorkerIo says: nothing of this worker in flight).
  Status Sync(bool) override { return device_->Flush(); }

 private:
  // Submits what Start queued: every SubmitBatch() ops (fio's iodepth_batch_submit, 1 by
  // default: each op as it is queued), and the rest before Reap waits.
  Status SubmitQueued() {
    if (batch_.empty()) return Status::OK();
    Status s = device_->Submit(batch_);
    batch_.clear();
    return s;
  }

  static void OnDone(IoRequest* r) {
    auto* self = static_cast<DirectWorker*>(r->ctx);
    if (!r->status.ok() && self->error_.ok()) self->error_ = r->status;
    self->done_->push_back(static_cast<uint32_t>(r - self->reqs_.get()));
  }

  BlockDevice* const device_;
  FolioArena* const arena_;
  const JobSpec job_;
  const uint32_t depth_;
  std::unique_ptr<IoRequest[]> reqs_;
  std::vector<Folio*> bufs_;
  std::vector<IoRequest*> batch_;
  std::vector<uint32_t>* done_ = nullptr;
  Status error_;
};

class FolioDirectEngine : public Engine {
 public:
  explicit FolioDirectEngine(const EngineContext& ctx) : ctx_(ctx) {}

  Status Prepare() override {
    const uint64_t t0_ns = MonotonicNowNs();
    const JobSpec& j = ctx_.job;
    if (j.block_bytes > kMaxFolioBytes) {
      return Status::InvalidArgument("job '" + j.name + "': bs=" + FormatSize(j.block_bytes) +
                                     " is over 2M, the largest direct buffer; lower bs");
    }
    const uint64_t need = DirectBufferBytes(j);
    if (need > kDirectBuffersMaxBytes) {
      return Status::InvalidArgument("job '" + j.name + "': numjobs * iodepth * bs needs " +
                                     FormatSize(need) + " of buffers (over " +
                                     FormatSize(kDirectBuffersMaxBytes) +
                                     "); lower iodepth or numjobs");
    }
    if (ctx_.device != nullptr) {
      device_ = ctx_.device;
    } else {
      FOLIO_ASSIGN_OR_RETURN(owned_device_, OpenDataFile(ctx_, j.iodepth));
      device_ = owned_device_.get();
    }
    if (j.block_bytes % device_->logical_block_bytes() != 0) {
      return Status::InvalidArgument("job '" + j.name + "': bs=" + FormatSize(j.block_bytes) +
                                     " is not a multiple of the device's block size " +
                                     std::to_string(device_->logical_block_bytes()) +
                                     " required by direct=1");
    }
    if (ctx_.direct_arena != nullptr && ctx_.direct_arena->capacity_bytes() >=
                                            need + kDirectArenaHeadroomBytes) {
      // --device: the bench's arena, registered with the shared device once (a device keeps
      // every arena it was given, so one per engine run would pile up freed ones).
      arena_ = ctx_.direct_arena;
    } else {
      ArenaOptions ao;
      // Headroom beyond the buffers themselves for the allocator's per-thread caches.
      ao.capacity_bytes = need + kDirectArenaHeadroomBytes;
      FOLIO_ASSIGN_OR_RETURN(owned_arena_, FolioArena::Create(ao));
      arena_ = owned_arena_.get();
      // Only a device this engine opened (and closes before the arena goes) may register it.
      if (owned_device_ != nullptr) FOLIO_RETURN_IF_ERROR(device_->RegisterArena(arena_));
    }
    device_->ResetStats();
    stats_.setup_s = SecondsSince(t0_ns);
    return Status::OK();
  }

  Result<std::unique_ptr<WorkerIo>> NewWorker(uint32_t index) override {
    auto worker = std::make_unique<DirectWorker>(device_, arena_, ctx_.job);
    FOLIO_RETURN_IF_ERROR(worker->Init(index + 1));
    return std::unique_ptr<WorkerIo>(std::move(worker));
  }

  Status Finish() override {
    if (RwModeWrites(ctx_.job.rw)) {
      const uint64_t t0_ns = MonotonicNowNs();
      FOLIO_RETURN_IF_ERROR(device_->Flush());
      stats_.sync_s = SecondsSince(t0_ns);
    }
    stats_.cache_used = false;
    stats_.device = device_->stats();
    stats_.backing = arena_->backing_report();
    owned_device_.reset();
    owned_arena_.reset();
    device_ = nullptr;
    arena_ = nullptr;
    return Status::OK();
  }

  MemoryReport memory() const override { return {}; }
  const FolioRunStats* folio_stats() const override { return &stats_; }
  std::vector<std::string> notes() const override {
    return {ctx_.engine.Name() + ": direct=1 bypasses the page cache; " +
            std::to_string(ctx_.job.iodepth) + " requests in flight per thread through the "
            "io layer"};
  }

 private:
  const EngineContext ctx_;
  std::unique_ptr<FolioArena> owned_arena_;  // outlives the device that registered it
  std::unique_ptr<BlockDevice> owned_device_;  // null with --device
  FolioArena* arena_ = nullptr;                // owned_arena_ or ctx_.direct_arena
  BlockDevice* device_ = nullptr;              // owned_device_ or ctx_.device
  FolioRunStats stats_;
};

}  // namespace

uint64_t DirectBufferBytes(const JobSpec& job) {
  return uint64_t{job.numjobs} * job.iodepth * OrderBytes(DirectWorker::OrderFor(job.block_bytes));
}

std::unique_ptr<Engine> NewFolioCachedEngine(const EngineContext& ctx) {
  return std::make_unique<FolioCachedEngine>(ctx);
}

std::unique_ptr<Engine> NewFolioDirectEngine(const EngineContext& ctx) {
  return std::make_unique<FolioDirectEngine>(ctx);
}

PageCacheStats DiffCacheStats(const PageCacheStats& after, const PageCacheStats& before) {
  PageCacheStats d = after;
  for (int o = 0; o < kNumOrders; ++o) {
    CacheOrderStats& x = d.orders[o];
    const CacheOrderStats& b = before.orders[o];
    x.requests -= b.requests;
    x.allocs -= b.allocs;
    x.fallbacks -= b.fallbacks;
    x.compacted -= b.compacted;
    x.splits -= b.splits;
    x.collapses -= b.collapses;
    x.hits -= b.hits;
    x.misses -= b.misses;
    x.evictions -= b.evictions;
  }
  d.readahead_windows -= before.readahead_windows;
  d.readahead_async -= before.readahead_async;
  d.readahead_hit_pages -= before.readahead_hit_pages;
  d.evictions -= before.evictions;
  d.evicted_dirty -= before.evicted_dirty;
  d.sparse_evictions -= before.sparse_evictions;
  d.writeback_requests -= before.writeback_requests;
  d.writeback_bytes -= before.writeback_bytes;
  d.throttled_writes -= before.throttled_writes;
  d.throttled_ns -= before.throttled_ns;
  d.writeback_waits -= before.writeback_waits;
  d.write_stream_folios -= before.write_stream_folios;
  d.writeback_expired_passes -= before.writeback_expired_passes;
  d.writeback_background_chunks -= before.writeback_background_chunks;
  d.fill_read_requests -= before.fill_read_requests;
  d.compact_attempts -= before.compact_attempts;
  d.compact_successes -= before.compact_successes;
  d.compact_blocks_scanned -= before.compact_blocks_scanned;
  d.compact_migrated_folios -= before.compact_migrated_folios;
  d.compact_migrated_bytes -= before.compact_migrated_bytes;
  d.compact_evicted_folios -= before.compact_evicted_folios;
  d.compact_evicted_bytes -= before.compact_evicted_bytes;
  d.compact_background_attempts -= before.compact_background_attempts;
  d.compact_background_blocks -= before.compact_background_blocks;
  d.compact_background_reclaimed_bytes -= before.compact_background_reclaimed_bytes;
  HistogramSnapshot& h = d.writeback_request_bytes;
  for (int i = 0; i < HistogramSnapshot::kBuckets; ++i) {
    h.counts[i] -= before.writeback_request_bytes.counts[i];
  }
  h.count -= before.writeback_request_bytes.count;
  h.sum -= before.writeback_request_bytes.sum;
  return d;
}

}  // namespace folio::bench
