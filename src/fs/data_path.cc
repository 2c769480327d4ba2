// DataPath: the FileData table, closing, syncing, the flusher thread (see data_path.h).
// Deletion: deletion.cc. Compaction and pack rewriting: compaction.cc.
#include "fs/data_path.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/clock.h"
#include "base/may_block.h"
#include "fs/file_data.h"
#include "fs/pack_writer.h"
#include "fs/stats_counters.h"

namespace folio::fs {

namespace {

constexpr uint64_t kSliceBatch = 1024;
constexpr uint64_t kPackDelayMs = 100;

}  // namespace

DataPath::DataPath(const DataContext& ctx)
    : ctx_(ctx),
      packs_(std::make_unique<PackCommitter>(this, kPackDelayMs)),
      sole_writer_(!ctx.options.shared && !ctx.options.read_only) {}

DataPath::~DataPath() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  // Destroyed first, while every member is alive: its last packs may still be put, and a
  // pack put asks NewSliceId (ids_mu_) for its id.
  packs_.reset();
}

void DataPath::Start() {
  if (!ctx_.options.background) return;
  packs_->Start();
  flusher_ = std::thread([this] { FlusherLoop(); });
}

Result<meta::SliceId> DataPath::NewSliceId() {
  std::lock_guard<std::mutex> lock(ids_mu_);
  if (next_slice_ == slice_limit_) {
    FOLIO_ASSIGN_OR_RETURN(uint64_t first, ctx_.meta->AllocateIds(meta::Counter::kNextSlice, kSliceBatch));
    next_slice_ = first;
    slice_limit_ = first + kSliceBatch;
  }
  return meta::SliceId{next_slice_++};
}

Result<std::shared_ptr<FileData>> DataPath::Open(meta::Inode* seen, const FolioPolicy& policy,
                                                 bool* keep_cache,
                                                 const std::vector<uint32_t>* chunks) {
  const meta::Inode& inode = *seen;
  std::shared_ptr<FileData> data;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(Raw(inode.ino));
    if (it != files_.end()) {
      data = it->second;
      data->opens++;
      if (data->in_lru) {
        lru_.erase(data->lru_it);
        data->in_lru = false;
      }
    }
  }
  if (data) {
    if (Status r = RecordOpen(data); !r.ok()) {
      (void)Close(data);
      return r;
    }
    // Another mount wrote it since this one looked (close-to-open): the cached pages go.
    Result<bool> dropped = data->Revalidate(seen);
    if (!dropped.ok()) {
      (void)Close(data);
      return dropped.status();
    }
    *keep_cache = !*dropped;
    return data;
  }
  *keep_cache = sole_writer_.load(std::memory_order_acquire);
  auto fresh = std::make_shared<FileData>(this, inode, policy);
  FOLIO_RETURN_IF_ERROR(fresh->Init(chunks));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = files_.try_emplace(Raw(inode.ino), fresh);
    // Another thread opened it meanwhile: use that one (ours is dropped unused).
    data = it->second;
    data->opens++;
    if (data->in_lru) {
      lru_.erase(data->lru_it);
      data->in_lru = false;
    }
  }
  if (Status r = RecordOpen(data); !r.ok()) {
    (void)Close(data);
    if (r.IsNotFound() || r.ToErrno() == ENOENT) ForgetIfClosed(inode.ino);
    return r;
  }
  return data;
}

Status DataPath::RecordOpen(const std::shared_ptr<FileData>& data) {
  if (!ctx_.options.shared) return Status::OK();
  std::lock_guard<std::mutex> rec(data->record_mu);
  if (data->recorded) return Status::OK();
  const InodeId ino = data->ino();
  // In one transaction with the check that the inode is still there: an unlink of its last
  // link on another mount either comes after (and sees the record) or before (ENOENT here).
  FOLIO_RETURN_IF_ERROR(ctx_.meta->Transact("open_record", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(GetInodeOrEnoent(t, ino).status());
    return t.AddSustained(ctx_.session, ino);
  }));
  data->recorded = true;
  return Status::OK();
}

Status DataPath::RestoreOpenRecords() {
  if (!ctx_.options.shared) return Status::OK();
  std::vector<std::shared_ptr<FileData>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [ino, d] : files_) all.push_back(d);
  }
  Status first;
  for (const std::shared_ptr<FileData>& d : all) {
    std::lock_guard<std::mutex> rec(d->record_mu);
    if (!d->recorded) continue;
    Status s = ctx_.meta->Transact("open_record", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Inode> inode, t.GetInode(d->ino()));
      return inode ? t.AddSustained(ctx_.session, d->ino()) : Status::OK();
    });
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

Status DataPath::ReleaseOpenRecord(const std::shared_ptr<FileData>& data) {
  if (!ctx_.options.shared) return Status::OK();
  std::unique_lock<std::mutex> rec(data->record_mu);
  if (!data->recorded) return Status::OK();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (data->opens > 0) return Status::OK();  // reopened: the record stays
  }
  const InodeId ino = data->ino();
  uint64_t key = 0;
  FOLIO_RETURN_IF_ERROR(ctx_.meta->Transact("release_record", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.RemoveSustained(ctx_.session, ino));
    // Unlinked by another mount while open here, and held by no other session: it goes now,
    // queued in this transaction so that a crash before the free leaves it queued.
    FOLIO_ASSIGN_OR_RETURN(key, QueueInodeIfFree(t, ino));
    return Status::OK();
  }));
  data->recorded = false;
  rec.unlock();  // FreeInode forgets the FileData, which takes record_mu again
  return key == 0 ? Status::OK() : FreeInode(ino, key);
}

std::shared_ptr<FileData> DataPath::Find(InodeId ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(Raw(ino));
  return it == files_.end() ? nullptr : it->second;
}

bool DataPath::HasHandles(const FileData& data) const {
  std::lock_guard<std::mutex> lock(mu_);
  return data.opens > 0;
}

bool DataPath::IdleOrAbsent(InodeId ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(Raw(ino));
  return it == files_.end() || (it->second->opens == 0 && !it->second->Dirty());
}

bool DataPath::MarkSustainedIfOpen(InodeId ino, SustainMarks& marks) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(Raw(ino));
  if (it == files_.end() || it->second->opens == 0) return false;
  it->second->pending_marks++;
  marks.Add(it->second);
  return true;
}

void DataPath::SettleSustainMarks(const std::vector<std::shared_ptr<FileData>>& kept,
                                  const std::vector<std::shared_ptr<FileData>>& undone) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::shared_ptr<FileData>& f : kept) {
      f->pending_marks--;
      f->sustain_marks++;
    }
    for (const std::shared_ptr<FileData>& f : undone) f->pending_marks--;
  }
  marks_cv_.notify_all();
}

Status SustainMarks::Transact(meta::MetaEngine* meta, DataPath* data, std::string_view op,
                              const std::function<Status(meta::Txn&, SustainMarks&)>& fn) {
  SustainMarks marks;
  Status s = meta->Transact(op, meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    marks.NewAttempt();
    return fn(t, marks);
  });
  // OK: fn's last run is what committed; its marks stay.
  if (!s.ok()) marks.NewAttempt();
  if (!marks.current_.empty() || !marks.undo_.empty()) {
    data->SettleSustainMarks(marks.current_, marks.undo_);
  }
  return s;
}

void DataPath::Overlay(meta::Inode* inode) const {
  if (std::shared_ptr<FileData> data = Find(inode->ino)) data->Overlay(inode);
}

void DataPath::OverlayAll(std::span<meta::Inode> inodes) const {
  std::vector<std::pair<meta::Inode*, std::shared_ptr<FileData>>> found;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (files_.empty()) return;
    found.reserve(std::min(inodes.size(), files_.size()));
    for (meta::Inode& inode : inodes) {
      if (inode.type != FileType::kRegular) continue;
      auto it = files_.find(Raw(inode.ino));
      if (it != files_.end()) found.emplace_back(&inode, it->second);
    }
  }
  for (auto& [inode, data] : found) data->Overlay(inode);
}

void DataPath::AddWrittenPages(InodeId ino, cache::PageRangeSet* pages) const {
  if (std::shared_ptr<FileData> data = Find(ino)) data->AddWrittenPages(pages);
}

void DataPath::ForgetIfClosed(InodeId ino) {
  std::shared_ptr<FileData> drop;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(Raw(ino));
    if (it == files_.end() || it->second->opens > 0) return;
    drop = it->second;
    if (drop->in_lru) lru_.erase(drop->lru_it);
    drop->in_lru = false;
    files_.erase(it);
    atimes_.erase(Raw(ino));
  }
  drop->Discard();
  // A closed file not settled yet still holds its record (shared mounts): the unlink that
  // called this saw it as held, so the record's release frees the inode. A failure leaves the
  // record to the session's end (unmount, or the cleanup of a dead session).
  (void)ReleaseOpenRecord(drop);
}

Status DataPath::Close(const std::shared_ptr<FileData>& data) {
  bool sustained;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (--data->opens > 0) return Status::OK();
    // An unlink or rename that marked the file has not returned: whether the file is still
    // linked is known when it does (never called from inside such a transaction).
    WaitWithHint(marks_cv_, lock, [&] { return data->pending_marks == 0; });
    if (data->opens > 0) return Status::OK();  // opened again meanwhile: its close decides
    sustained = data->sustain_marks > 0;
    if (!sustained) {
      closing_.push_back(data);
      cv_.notify_all();
      return Status::OK();
    }
  }
  return ReleaseSustained(data);
}

void DataPath::SettleClosed(const std::shared_ptr<FileData>& data) {
  if (ctx_.options.shared) {
    // Reopened meanwhile: a shared mount commits a file's data at its closes (and fsync and the
    // periodic sync), not while it is open; its next last close settles it.
    std::lock_guard<std::mutex> lock(mu_);
    if (data->opens > 0) return;
  }
  if (!ctx_.options.shared && data->AtimeOnly()) {
    // Reading a file moved its atime (relatime: the first read after a write): one write
    // transaction per file read would cost more than the read. It goes with others in the
    // next CommitAtimes; meanwhile this mount shows it (Overlay), and the file stays out of
    // the LRU (never evicted with its atime).
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(Raw(data->ino()));
    if (it != files_.end() && it->second == data) atimes_.emplace(Raw(data->ino()), data);
    return;
  }
  Status s = data->Sync(SyncMode::kBackground);
  // Shared mounts: a clean closed file is no longer held here (committed first, so that
  // another mount's unlink cannot free the inode under its commit).
  if (s.ok() && !data->Dirty()) s = ReleaseOpenRecord(data);
  std::vector<std::shared_ptr<FileData>> evicted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!s.ok() || data->opens > 0 || data->in_lru || data->Dirty()) return;
    auto it = files_.find(Raw(data->ino()));
    if (it == files_.end() || it->second != data) return;
    data->lru_it = lru_.insert(lru_.end(), Raw(data->ino()));
    data->in_lru = true;
    EvictLocked(&evicted);
  }
  // Destroyed outside the lock (dropping an address space frees its folios).
  evicted.clear();
}

void DataPath::EvictLocked(std::vector<std::shared_ptr<FileData>>* out) {
  while (lru_.size() > ctx_.options.closed_files_cached) {
    const uint64_t ino = lru_.front();
    lru_.pop_front();
    auto it = files_.find(ino);
    if (it == files_.end()) continue;
    it->second->in_lru = false;
    out->push_back(std::move(it->second));
    files_.erase(it);
  }
}

void DataPath::FlusherLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait(lock, [&] { return stop_ || !closing_.empty(); });
    while (!closing_.empty()) {
      std::shared_ptr<FileData> data = std::move(closing_.front());
      closing_.pop_front();
      lock.unlock();
      SettleClosed(data);
      lock.lock();
    }
  }
}

Status DataPath::Truncate(const Cred& cred, const meta::Inode& inode, uint64_t size) {
  std::shared_ptr<FileData> data = Find(inode.ino);
  const FolioPolicy policy = data ? data->policy() : ctx_.options.policy;
  bool keep_cache;
  meta::Inode seen = inode;
  FOLIO_ASSIGN_OR_RETURN(data, Open(&seen, policy, &keep_cache));
  Status s = data->Truncate(size, cred);
  Status c = Close(data);
  return s.ok() ? c : s;
}

Status DataPath::CommitAtimes() {
  std::vector<std::shared_ptr<FileData>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting.reserve(atimes_.size());
    for (auto& [ino, d] : atimes_) waiting.push_back(std::move(d));
    atimes_.clear();
  }
  Status first;
  for (size_t at = 0; at < waiting.size(); at += kAtimeBatch) {
    const size_t end = std::min(waiting.size(), at + kAtimeBatch);
    std::vector<std::pair<FileData*, FileData::AtimeUpdate>> batch;
    for (size_t i = at; i < end; ++i) {
      if (std::optional<FileData::AtimeUpdate> u = waiting[i]->AtimeOnly()) {
        batch.emplace_back(waiting[i].get(), *u);
      }
    }
    std::vector<int64_t> committed(batch.size());
    Status s;
    if (!batch.empty()) {
      s = ctx_.meta->Transact("atime", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
        for (size_t i = 0; i < batch.size(); ++i) {
          const auto& [data, u] = batch[i];
          FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Inode> inode, t.GetInode(data->ino()));
          committed[i] = inode ? inode->atime_ns : u.atime_ns;
          // Freed since (unlinked after the close), or its atime set since (a utimensat after
          // the read): nothing of the read's to commit, as FileData::CommitRecords decides.
          if (!inode || inode->atime_ns != u.base_atime_ns) continue;
          inode->atime_ns = u.atime_ns;
          committed[i] = u.atime_ns;
          FOLIO_RETURN_IF_ERROR(t.PutInode(*inode));
        }
        return Status::OK();
      });
    }
    if (s.ok()) {
      for (size_t i = 0; i < batch.size(); ++i) {
        batch[i].first->AtimeCommitted(batch[i].second, committed[i]);
      }
      if (!batch.empty()) {
        FsCounters::Add(ctx_.counters->atime_files, batch.size());
        FsCounters::Add(ctx_.counters->atime_commits);
      }
    } else if (first.ok()) {
      first = s;
    }
    // Settled as after a close: clean ones go to the LRU; a failed batch's files (still
    // atime-dirty) wait for the next pass.
    for (size_t i = at; i < end; ++i) SettleClosed(waiting[i]);
  }
  return first;
}

Status DataPath::SyncAll() {
  Status atimes = CommitAtimes();
  std::vector<std::shared_ptr<FileData>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.reserve(files_.size());
    for (auto& [ino, d] : files_) all.push_back(d);
  }
  Status first;
  for (const std::shared_ptr<FileData>& d : all) {
    Status s = d->Sync(SyncMode::kBackground);
    if (first.ok() && !s.ok()) first = s;
  }
  Status p = packs_->Flush();
  if (first.ok()) first = p;
  // Entries waiting for the pack just written are committed now; settle closed files.
  std::deque<std::shared_ptr<FileData>> closing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing.swap(closing_);
  }
  for (const std::shared_ptr<FileData>& d : closing) SettleClosed(d);
  // A file closed after the list above was taken (or unlinked since: no longer in files_) is
  // settled here, and a small one goes into a new pack: that pack is put and committed before
  // SyncAll returns too, not left to the pack writer's timer and the next flush.
  if (!closing.empty()) {
    p = packs_->Flush();
    if (first.ok()) first = p;
  }
  // What SettleClosed left for a batch (the files closed above), and the first error.
  Status late = CommitAtimes();
  if (first.ok()) first = atimes;
  if (first.ok()) first = late;
  return first;
}

Status DataPath::Shutdown() {
  Status s = SyncAll();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  packs_->Stop();
  std::unordered_map<uint64_t, std::shared_ptr<FileData>> files;
  {
    std::lock_guard<std::mutex> lock(mu_);
    files.swap(files_);
    lru_.clear();
  }
  return s;
}

Status DataPath::Maintenance() {
  const uint64_t now = MonotonicNowNs();
  const uint64_t interval_ns = ctx_.options.sync_interval_ms * 1000000;
  // Each due file with whether it was closed then (opens is read under mu_ only; a file
  // opened or closed since is settled or synced all the same, SettleClosed checks again).
  std::vector<std::pair<std::shared_ptr<FileData>, bool>> due;
  std::deque<std::shared_ptr<FileData>> closing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [ino, d] : files_) {
      const uint64_t since = d->dirty_since_ns();
      if ((since != 0 && now - since >= interval_ns) || (d->opens == 0 && !d->in_lru)) {
        due.emplace_back(d, d->opens == 0);
      }
    }
    if (!ctx_.options.background) closing.swap(closing_);
  }
  Status first;
  for (const std::shared_ptr<FileData>& d : closing) SettleClosed(d);
  for (const auto& [d, closed] : due) {
    if (closed) {
      SettleClosed(d);
      continue;
    }
    Status s = d->Sync(SyncMode::kBackground);
    if (first.ok() && !s.ok()) first = s;
  }
  auto keep = [&](Status s) {
    if (first.ok() && !s.ok()) first = s;
  };
  keep(CommitAtimes());
  // Without the committer thread, packs of the files settled above are committed here.
  if (!ctx_.options.background) keep(packs_->Flush());
  keep(RunDeletions(WallNs()));
  keep(CompactNoted());
  if (++passes_ % 60 == 0) keep(RewritePacks());
  return first;
}

uint64_t DataPath::open_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [ino, d] : files_) n += d->opens > 0 ? 1 : 0;
  return n;
}

uint64_t DataPath::unsettled_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [ino, d] : files_) n += d->opens == 0 && !d->in_lru ? 1 : 0;
  return n;
}

uint64_t DataPath::cached_inodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_.size();
}

void DataPath::NoteSlices(InodeId ino, uint32_t chunk, const Appended& added) {
  std::lock_guard<std::mutex> lock(mu_);
  Appended& a = appended_[{Raw(ino), chunk}];
  a.records += added.records;
  a.small_bytes += added.small_bytes;
  a.large_bytes += added.large_bytes;
  a.need_small = std::max(a.need_small, added.need_small);
  a.need_large = std::max(a.need_large, added.need_large);
  a.last_append_ns = std::max(a.last_append_ns, added.last_append_ns);
  const FsOptions& o = ctx_.options;
  if (a.records >= o.compact_slices &&
      (a.small_bytes >= a.need_small || a.large_bytes >= a.need_large ||
       a.records >= o.compact_slices_max)) {
    compact_.insert({Raw(ino), chunk});
  }
}

}  // namespace folio::fs
