// DataPath: freeing inodes and the deletion queue (see data_path.h).
//
// Rules that keep a block from being deleted under a reader (JuiceFS #6000, #6479):
//   1. An inode is freed only when it has no link, no handle on this mount (checked under
//      the table lock inside the freeing transaction) and no session sustains it.
//   2. Freeing an inode, truncating, compacting or rewriting never deletes an object: it
//      drops references, and an object at 0 goes on the queue with not_before = now + grace.
//   3. The store delete runs only after not_before, and not at all for an object that has a
//      reference again; the queue item is removed after it.
#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/fs_internal.h"
#include "fs/slice_refs.h"
#include "fs/stats_counters.h"
#include "fs/store_io.h"

namespace folio::fs {

namespace {

constexpr size_t kDeletionBatch = 256;

}  // namespace

Status DataPath::FreeInode(InodeId ino, uint64_t key) {
  const int64_t now = WallNs();
  const int64_t delete_after = now + ctx_.format.deletion_grace_ms * 1000000;
  bool freed = false;
  Status s = SustainMarks::Transact(ctx_.meta, this, "free_inode",
                                    [&](meta::Txn& t, SustainMarks& marks) -> Status {
    freed = false;
    if (key != 0) FOLIO_RETURN_IF_ERROR(t.RemoveDeletion(key));
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Inode> inode, t.GetInode(ino));
    if (!inode || inode->nlink > 0) return Status::OK();
    if (MarkSustainedIfOpen(ino, marks)) return t.AddSustained(ctx_.session, ino);
    FOLIO_ASSIGN_OR_RETURN(bool held, t.IsSustained(ino));
    if (held) return Status::OK();
    FOLIO_ASSIGN_OR_RETURN(std::vector<uint32_t> chunks, t.ListChunks(ino));
    for (uint32_t idx : chunks) {
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Slice> old, t.GetChunk(ino, idx));
      FOLIO_RETURN_IF_ERROR(t.PutChunk(ino, idx, {}));
      FOLIO_RETURN_IF_ERROR(ApplyRefDelta(t, old, {}, delete_after));
    }
    FOLIO_RETURN_IF_ERROR(DeleteXattrs(t, ino));
    FOLIO_RETURN_IF_ERROR(t.DeleteInode(ino));
    FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedInodes, -1));
    const int64_t bytes = Round4k(inode->size_bytes);
    if (bytes != 0) FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedBytes, -bytes));
    freed = true;
    return Status::OK();
  });
  if (!s.ok()) return s;
  if (freed) {
    FsCounters::Add(ctx_.counters->inodes_freed);
    ForgetIfClosed(ino);
  }
  return Status::OK();
}

Status DataPath::ReleaseSustained(const std::shared_ptr<FileData>& data) {
  const InodeId ino = data->ino();
  data->Discard();
  // The inode goes on the deletion queue in the same transaction: a crash before FreeInode
  // below leaves it queued (the next mount frees it), never unlinked with nothing holding it.
  uint64_t key = 0;
  std::unique_lock<std::mutex> rec(data->record_mu);
  Status s = ctx_.meta->Transact("release", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(t.RemoveSustained(ctx_.session, ino));
    FOLIO_ASSIGN_OR_RETURN(key, QueueInodeDeletion(t, ino));
    return Status::OK();
  });
  if (s.ok()) data->recorded = false;
  rec.unlock();
  {
    std::lock_guard<std::mutex> lock(mu_);
    data->sustain_marks = 0;
    auto it = files_.find(Raw(ino));
    if (it != files_.end() && it->second == data && data->opens == 0) files_.erase(it);
  }
  if (!s.ok()) return s;
  return FreeInode(ino, key);
}

Status DataPath::RunDeletions(int64_t now_ns) {
  std::vector<std::pair<uint64_t, meta::Deletion>> due;
  FOLIO_RETURN_IF_ERROR(ctx_.meta->Transact("deletions", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(due, t.ListDeletions(now_ns, kDeletionBatch));
    return Status::OK();
  }));
  Status first;
  // An object goes only once the transaction that dropped its last reference is durable:
  // a power cut must not bring back a reference to a deleted object (the engine may commit
  // without syncing, see MetaEngine::Sync).
  if (!due.empty()) FOLIO_RETURN_IF_ERROR(ctx_.meta->Sync());
  for (const auto& entry : due) {
    // Named, not a structured binding: the lambdas below capture them (clang 14, the fuzz
    // build's compiler, cannot capture structured bindings).
    const auto& key = entry.first;
    const auto& item = entry.second;
    Status s;
    if (item.kind == meta::DeletionKind::kInode) {
      s = FreeInode(InodeId{item.id}, key);
    } else {
      // An object that has a reference again (a gc queued it while a write was in flight)
      // is not deleted: only the item goes.
      bool live = false;
      s = ctx_.meta->Transact("deletion", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
        FOLIO_ASSIGN_OR_RETURN(std::optional<meta::SliceRef> ref, t.GetSliceRef(meta::SliceId{item.id}));
        live = ref.has_value();
        return Status::OK();
      });
      StoreBatch batch(ctx_.store);
      if (s.ok() && !live) {
        AddObjectDeletes(&batch, item.slice_kind, item.id, item.bytes, ctx_.format.block_bytes);
        s = batch.Run();
      }
      if (s.ok()) {
        s = ctx_.meta->Transact("deletion_done", meta::TxnMode::kWrite,
                                [&](meta::Txn& t) -> Status { return t.RemoveDeletion(key); });
      }
      if (s.ok()) FsCounters::Add(ctx_.counters->deletions_done);
    }
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

}  // namespace folio::fs
