// FileSystem: mounting, unmounting, maintenance, statistics. Namespace operations live in
// ns_*.cc, file operations in file_ops.cc, locks in lock_ops.cc.
#include "fs/file_system.h"

#include <algorithm>

#include <chrono>

#include "base/clock.h"
#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/fs_internal.h"
#include "fs/pack_writer.h"
#include "fs/store/sector_codec.h"
#include "fs/session.h"
#include "fs/stats_counters.h"
#include "fs/store/block_store.h"

namespace folio::fs {

struct FileSystem::Background {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;  // GUARDED_BY(mu)
  std::thread thread;
  uint64_t last_heartbeat_ns = 0;
  uint64_t last_meta_sync_ns = 0;
  uint64_t passes = 0;
};

FileSystem::FileSystem(std::unique_ptr<meta::CachedEngine> cached, meta::MetaEngine* meta,
                       store::BlockStore* store, PageCache* cache, const FsOptions& options,
                       meta::FormatRecord format)
    : cached_meta_(std::move(cached)),
      meta_(cached_meta_ ? static_cast<meta::MetaEngine*>(cached_meta_.get()) : meta),
      store_(store), cache_(cache), options_(options), format_(std::move(format)),
      counters_(std::make_unique<FsCounters>()), bg_(std::make_unique<Background>()) {
  bg_->last_meta_sync_ns = MonotonicNowNs();
}

size_t ClosedFilesFor(uint64_t cache_bytes) {
  return std::max<size_t>(4096, cache_bytes / 4 / kClosedFileHeapBytes);
}

Result<std::unique_ptr<FileSystem>> FileSystem::Mount(meta::MetaEngine* meta,
                                                      store::BlockStore* store, PageCache* cache,
                                                      const FsOptions& given) {
  FsOptions options = given;
  if (options.closed_files_cached == 0) {
    options.closed_files_cached = ClosedFilesFor(cache->options().memory_bytes);
  }
  std::optional<meta::FormatRecord> format;
  FOLIO_RETURN_IF_ERROR(meta->Transact("mount", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(format, t.GetFormat());
    return Status::OK();
  }));
  if (!format) {
    return Status::InvalidArgument(meta->url() +
                                   ": not a formatted Folio volume; create one with 'folio fs "
                                   "format " + meta->url() + " NAME --storage dir:PATH'");
  }
  // Only the volume's one writer may cache records: the session registered below refuses this
  // mount while another has the volume read-write, and every later mount while this one has.
  std::unique_ptr<meta::CachedEngine> cached;
  if (options.meta_cache && !options.shared && !options.read_only) {
    cached = std::make_unique<meta::CachedEngine>(meta);
  }
  std::unique_ptr<FileSystem> fs(
      new FileSystem(std::move(cached), meta, store, cache, options, *format));
  meta = fs->meta_;
  FOLIO_ASSIGN_OR_RETURN(fs->session_, SessionKeeper::Register(meta, *format, options));
  fs->last_beat_ns_.store(MonotonicNowNs());  // registering wrote a fresh heartbeat
  Result<int> cleaned = fs->session_->CleanDead();
  if (!cleaned.ok()) return cleaned.status();
  DataContext ctx;
  ctx.meta = meta;
  ctx.store = store;
  ctx.cache = cache;
  ctx.format = *format;
  ctx.session = fs->session_->id();
  ctx.options = options;
  ctx.counters = fs->counters_.get();
  // Enough spares for the blocks of one device's puts in flight (8) to be refilled from them,
  // and at most 32 MiB of them (two 16 MiB blocks). A buffer holds a block's sector encoding.
  ctx.block_buffers = std::make_shared<BlockBufferPool>(
      store::EncodedBytes(format->block_bytes),
      std::clamp<size_t>((size_t{32} << 20) / std::max<uint64_t>(format->block_bytes, 1), 1, 8));
  fs->data_ = std::make_unique<DataPath>(ctx);
  fs->data_->Start();
  if (options.background) {
    FileSystem* self = fs.get();
    fs->bg_->thread = std::thread([self] { self->BackgroundLoop(); });
  }
  return fs;
}

FileSystem::~FileSystem() { (void)Unmount(); }

meta::SessionId FileSystem::session() const { return session_->id(); }

size_t FileSystem::BlockBufferSparesForTesting() const {
  const std::shared_ptr<BlockBufferPool>& pool = data_->ctx().block_buffers;
  return pool ? pool->spares() : 0;
}

void FileSystem::BackgroundLoop() {
  const auto interval = std::chrono::milliseconds(std::max<uint64_t>(1, options_.maintenance_interval_ms));
  std::unique_lock<std::mutex> lock(bg_->mu);
  while (!bg_->stop) {
    bg_->cv.wait_for(lock, interval, [&] { return bg_->stop; });
    if (bg_->stop) break;
    lock.unlock();
    (void)RunMaintenance();  // failures are retried at the next pass
    lock.lock();
  }
}

Status FileSystem::RunMaintenance() {
  if (unmounted_.load()) return Status::OK();
  Status first;
  const uint64_t now = MonotonicNowNs();
  const uint64_t beat_ns = static_cast<uint64_t>(std::min<int64_t>(10000, format_.session_timeout_ms / 4)) * 1000000;
  if (now - bg_->last_heartbeat_ns >= beat_ns) {
    first = BeatSession();
    bg_->last_heartbeat_ns = now;
  }
  if (bg_->passes++ % 10 == 0) {
    Result<int> cleaned = session_->CleanDead();
    if (first.ok() && !cleaned.ok()) first = cleaned.status();
  }
  Status d = data_->Maintenance();
  if (first.ok()) first = d;
  if (now - bg_->last_meta_sync_ns >= options_.meta_sync_interval_ms * 1000000) {
    Status m = meta_->Sync();
    if (first.ok()) first = m;
    bg_->last_meta_sync_ns = now;
  }
  return first;
}

Status FileSystem::BeatSession() {
  std::lock_guard<std::mutex> lock(beat_mu_);
  Status s = session_->Heartbeat();
  if (s.ok() || s.code() == StatusCode::kDataLoss) last_beat_ns_.store(MonotonicNowNs());
  if (s.code() != StatusCode::kDataLoss) return s;
  // Another mount cleaned this session as dead, so it may have mounted the volume and written
  // since: no cached record can be trusted from now on.
  if (cached_meta_) cached_meta_->Disable();
  data_->LoseSoleWriter();
  (void)data_->RestoreOpenRecords();
  std::lock_guard<std::mutex> handles(handles_mu_);
  for (auto& [fh, f] : files_) {
    if (f->held_locks.load(std::memory_order_acquire)) f->locks_lost.store(true);
  }
  return s;
}

Status FileSystem::SyncAll() {
  Status first = data_->SyncAll();
  Status m = meta_->Sync();
  return first.ok() ? m : first;
}

Status FileSystem::SyncMetadata() { return meta_->Sync(); }

Status FileSystem::Unmount() {
  if (unmounted_.exchange(true)) return Status::OK();
  if (!data_) {
    // Mount failed before the data path existed: only a registered session is left to close.
    return session_ ? session_->Close() : Status::OK();
  }
  {
    std::lock_guard<std::mutex> lock(bg_->mu);
    bg_->stop = true;
  }
  bg_->cv.notify_all();
  if (bg_->thread.joinable()) bg_->thread.join();
  std::vector<std::shared_ptr<OpenFile>> still_open;
  {
    std::lock_guard<std::mutex> lock(handles_mu_);
    for (auto& [fh, f] : files_) still_open.push_back(f);
    files_.clear();
    dirs_.clear();
  }
  Status first;
  for (const std::shared_ptr<OpenFile>& f : still_open) {
    Status s = data_->Close(f->data);
    if (first.ok() && !s.ok()) first = s;
  }
  Status d = data_->Shutdown();
  if (first.ok()) first = d;
  // Deletions whose time has come go now; the rest wait for the next mount.
  (void)data_->RunDeletions(WallNs());
  Status c = session_->Close();
  if (first.ok()) first = c;
  Status m = meta_->Sync();
  return first.ok() ? m : first;
}

void FileSystem::CrashForTesting() {
  if (unmounted_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(bg_->mu);
    bg_->stop = true;
  }
  bg_->cv.notify_all();
  if (bg_->thread.joinable()) bg_->thread.join();
  {
    std::lock_guard<std::mutex> lock(handles_mu_);
    files_.clear();
    dirs_.clear();
  }
  data_.reset();
}

FsStats FileSystem::Stats() const {
  FsStats s;
  counters_->SnapshotInto(&s);
  s.open_files = data_->open_files();
  s.cached_inodes = data_->cached_inodes();
  s.unsettled_files = data_->unsettled_files();
  const store::StoreStatsSnapshot st = store_->stats();
  s.checksum_failures = st.checksum_failures;
  s.store_get_requests = st.get.requests;
  s.store_get_bytes = st.get.bytes;
  s.store_put_requests = st.put.requests;
  s.store_put_bytes = st.put.bytes;
  s.store_delete_requests = st.del.requests;
  const store::PackWriterStats ps = data_->packs()->stats();
  s.packs_written = ps.packs;
  return s;
}

}  // namespace folio::fs
