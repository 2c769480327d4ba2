#include "fs/pack_writer.h"

#include <algorithm>
#include <string_view>

#include "base/may_block.h"
#include "fs/data_path.h"
#include "fs/fs_internal.h"
#include "fs/slice_refs.h"
#include "fs/slice_view.h"
#include "fs/stats_counters.h"

namespace folio::fs {

namespace {

store::PackWriterOptions WriterOptions(const DataPath* dp, uint64_t flush_after_ms) {
  store::PackWriterOptions o;
  o.pack_bytes_max = static_cast<uint32_t>(dp->ctx().format.block_bytes);
  o.flush_after_ms = flush_after_ms;
  return o;
}

// Chunk 0 of a packed file once its entry is committed, the metadata holding `old`. The entry
// is the file's whole content as this mount saw it: it replaces the list when the metadata still
// holds the list that content was read over (*whole). Otherwise another mount committed to the
// file since, and only the ranges this mount wrote (frozen.written) take their bytes from the
// entry, as records added over `old`; everything else keeps what the other mount committed.
std::vector<meta::Slice> PackedChunk(const std::vector<meta::Slice>& old,
                                     const meta::Slice& entry, const FrozenBase& frozen,
                                     bool* whole) {
  *whole = frozen.committed && SameSlices(old, *frozen.committed);
  if (*whole) return {entry};
  std::vector<meta::Slice> now = old;
  for (const auto& [pos, len] : frozen.written) {
    if (pos >= entry.len) break;
    meta::Slice part = entry;
    part.pos = pos;
    part.len = std::min(len, entry.len - pos);
    part.object_off = entry.object_off + pos;
    now.push_back(part);
  }
  return now;
}

}  // namespace

void PackTicket::Finish(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  status_ = s;
  cv_.notify_all();
}

Status PackTicket::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  WaitWithHint(cv_, lock, [&] { return done_; });
  return status_;
}

bool PackTicket::done() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

PackCommitter::PackCommitter(DataPath* dp, uint64_t flush_after_ms)
    : dp_(dp),
      writer_(dp->ctx().store, WriterOptions(dp, flush_after_ms), [dp]() -> Result<uint64_t> {
        FOLIO_ASSIGN_OR_RETURN(meta::SliceId id, dp->NewSliceId());
        return Raw(id);
      }) {}

PackCommitter::~PackCommitter() {
  Stop();
  // Packs still being put complete into done_ (their callbacks hold `this`): wait for them
  // here, while done_ and mu_ are alive. writer_'s own destructor would wait too, but only
  // after the members declared below it are destroyed (a crashed mount's last packs complete
  // with errors on a store thread then: the fs model test on a dev: store caught it).
  (void)writer_.Flush();
}

void PackCommitter::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void PackCommitter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<PackTicket> PackCommitter::Add(const std::shared_ptr<FileData>& file,
                                               const std::vector<char>& content) {
  auto e = std::make_shared<Entry>();
  e->file = file;
  e->ino = file->ino();
  e->attrs = file->pack_attrs();
  e->ticket = std::make_shared<PackTicket>();
  Submit(e, content);
  return e->ticket;
}

void PackCommitter::AddRewrite(InodeId ino, const meta::Slice& packed,
                               const std::vector<char>& content) {
  auto e = std::make_shared<Entry>();
  e->ino = ino;
  e->rewrite = true;
  e->expect = packed;
  e->ticket = std::make_shared<PackTicket>();
  Submit(e, content);
}

void PackCommitter::Submit(const std::shared_ptr<Entry>& e, const std::vector<char>& content) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    handed_++;
  }
  writer_.Add(std::string_view(content.data(), content.size()),
              [this, e](const Status& s, const store::PackedLocation& loc) {
                e->status = s;
                e->loc = loc;
                std::lock_guard<std::mutex> lock(mu_);
                done_.push_back(e);
                cv_.notify_all();
              });
}

Status PackCommitter::Flush() {
  Status put = writer_.Flush();
  // Every entry handed over before the flush is now in done_ (its pack completed).
  Status commit = CommitDone();
  return put.ok() ? commit : put;
}

Status PackCommitter::CommitDone() {
  std::lock_guard<std::mutex> commit_lock(commit_mu_);
  std::vector<std::shared_ptr<Entry>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.assign(done_.begin(), done_.end());
    done_.clear();
  }
  if (batch.empty()) return Status::OK();
  Status s = CommitBatch(batch);
  std::lock_guard<std::mutex> lock(mu_);
  finished_ += batch.size();
  cv_.notify_all();
  return s;
}

Status PackCommitter::CommitBatch(const std::vector<std::shared_ptr<Entry>>& batch) {
  const DataContext& ctx = dp_->ctx();
  const int64_t delete_after = WallNs() + ctx.format.deletion_grace_ms * 1000000;
  std::vector<std::shared_ptr<Entry>> ok;
  for (const std::shared_ptr<Entry>& e : batch) {
    if (e->status.ok()) {
      ok.push_back(e);
      continue;
    }
    if (std::shared_ptr<FileData> f = e->file.lock(); f && !e->rewrite) f->PackFailed(e->status);
    e->ticket->Finish(e->status);
  }
  if (ok.empty()) return batch.front()->status;
  auto slice_of = [](const Entry& e) {
    meta::Slice s;
    s.pos = 0;
    s.len = e.loc.len;
    s.id = meta::SliceId{e.loc.pack_id};
    s.object_bytes = e.loc.pack_bytes;
    s.object_off = e.loc.object_off;
    s.kind = meta::SliceKind::kPacked;
    return s;
  };
  std::map<uint64_t, PackTally> tally;  // tally_ with this batch's entries
  Status s = ctx.meta->Transact("pack_commit", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    tally = tally_;
    for (const std::shared_ptr<Entry>& e : ok) {
      tally[e->loc.pack_id].seen++;
      FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Inode> inode, t.GetInode(e->ino));
      e->freed = !inode.has_value();
      if (e->freed) continue;  // freed meanwhile: its bytes are dead space in the pack
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Slice> old, t.GetChunk(e->ino, 0));
      if (e->rewrite && (old.size() != 1 || meta::EncodeSlice(old[0]) != meta::EncodeSlice(e->expect))) {
        continue;  // the file changed since the rewrite read it: the copy is dead space
      }
      tally[e->loc.pack_id].committed++;
      bool whole = true;
      const std::vector<meta::Slice> now =
          e->rewrite ? std::vector<meta::Slice>{slice_of(*e)}
                     : PackedChunk(old, slice_of(*e), e->attrs.frozen, &whole);
      // Shared mounts: another mount changed the chunk or the inode since this mount looked;
      // the file's cached data may be older than what the metadata now holds.
      e->elsewhere = !e->rewrite && ctx.options.shared &&
                     (!whole || InodeChangedSince(*inode, e->attrs.base));
      FOLIO_RETURN_IF_ERROR(t.PutChunk(e->ino, 0, now));
      FOLIO_RETURN_IF_ERROR(ApplyRefDelta(t, old, now, delete_after));
      if (e->rewrite) continue;  // the content moved; the attributes did not change
      const uint64_t size = CommitSize(inode->size_bytes, e->attrs.size, e->attrs.size_dirty,
                                       e->attrs.size_exact);
      const int64_t delta = Round4k(size) - Round4k(inode->size_bytes);
      if (delta != 0) FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedBytes, delta));
      inode->size_bytes = size;
      // A field the metadata no longer holds the snapshot's base value of was set after the
      // close (chmod, utimensat): it stays.
      if (inode->mtime_ns == e->attrs.base_mtime_ns) inode->mtime_ns = e->attrs.mtime_ns;
      if (inode->atime_ns == e->attrs.base_atime_ns) inode->atime_ns = e->attrs.atime_ns;
      if (inode->mode == e->attrs.base_mode) inode->mode = e->attrs.mode;
      inode->ctime_ns = CommitCtime(inode->ctime_ns, e->attrs.ctime_ns);
      e->committed = *inode;
      FOLIO_RETURN_IF_ERROR(t.PutInode(*inode));
    }
    for (const std::shared_ptr<Entry>& e : ok) {
      auto it = tally.find(e->loc.pack_id);
      if (it == tally.end() || it->second.seen < e->loc.pack_entries) continue;
      if (it->second.committed == 0) {
        meta::Deletion del;
        del.kind = meta::DeletionKind::kSlice;
        del.id = e->loc.pack_id;
        del.slice_kind = meta::SliceKind::kPacked;
        del.bytes = e->loc.pack_bytes;
        del.not_before_ns = delete_after;
        FOLIO_RETURN_IF_ERROR(t.QueueDeletion(del).status());
      }
      tally.erase(it);  // complete: nothing more to count
    }
    return Status::OK();
  });
  if (s.ok()) {
    tally_ = std::move(tally);
  } else {
    // The entries fail and go into new packs: theirs never completes (its object is left to gc).
    for (const std::shared_ptr<Entry>& e : ok) tally_.erase(e->loc.pack_id);
  }
  for (const std::shared_ptr<Entry>& e : ok) {
    std::shared_ptr<FileData> f = e->rewrite ? dp_->Find(e->ino) : e->file.lock();
    if (s.ok() && e->rewrite) {
      FsCounters::Add(ctx.counters->packs_rewritten);
      if (f) f->device()->InvalidateChunk(0);
    } else if (s.ok()) {
      if (f) f->PackCommitted(e->attrs, e->freed ? nullptr : &e->committed, e->elsewhere);
      if (!e->freed) {
        FsCounters::Add(ctx.counters->packed_files);
        FsCounters::Add(ctx.counters->pack_bytes, e->loc.len);
      }
    } else if (f && !e->rewrite) {
      f->PackFailed(s);
    }
    e->ticket->Finish(s);
  }
  return s;
}

void PackCommitter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait(lock, [&] { return stop_ || !done_.empty(); });
    if (done_.empty()) continue;
    lock.unlock();
    (void)CommitDone();  // failures reached each entry's file and ticket
    lock.lock();
  }
}

}  // namespace folio::fs
