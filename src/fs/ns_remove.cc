// FileSystem: unlink, rmdir, and what dropping the last link of an inode does.
//
// The last link of a regular file: if a handle is open on this mount the inode is kept
// (nlink 0) and recorded as sustained by this session; if another session sustains it, it is
// kept too; otherwise, when it has no chunk (no data committed: nothing to drop references
// of), it is freed in the same transaction, and else a kInode item goes on the deletion queue
// (the data path frees its chunks there, which queues their slices with the grace period).
// Other node types are freed in the same transaction (they have no data).
#include <string>

#include "base/check.h"
#include "fs/data_path.h"
#include "fs/stats_counters.h"
#include "fs/file_system.h"
#include "fs/fs_internal.h"
#include "fs/perm.h"
#include "fs/session.h"

namespace folio::fs {

Status FileSystem::DropLink(meta::Txn& t, meta::Inode* victim, int64_t now_ns,
                            bool* freed_file, SustainMarks* marks) {
  if (freed_file != nullptr) *freed_file = false;
  victim->ctime_ns = now_ns;
  if (victim->type == FileType::kDirectory) {
    victim->nlink = 0;
  } else if (victim->nlink > 0) {
    victim->nlink -= 1;
  }
  if (victim->nlink > 0) return t.PutInode(*victim);
  if (victim->type == FileType::kRegular) {
    // The inode (nlink 0) is written only where it stays: a file freed here is deleted.
    FOLIO_CHECK_MSG(marks != nullptr, "DropLink of a regular file without SustainMarks");
    if (data_->MarkSustainedIfOpen(victim->ino, *marks)) {
      FOLIO_RETURN_IF_ERROR(t.PutInode(*victim));
      return t.AddSustained(session_->id(), victim->ino);
    }
    FOLIO_ASSIGN_OR_RETURN(bool held, t.IsSustained(victim->ino));
    if (held) return t.PutInode(*victim);
    FOLIO_ASSIGN_OR_RETURN(std::vector<uint32_t> chunks, t.ListChunks(victim->ino));
    if (chunks.empty()) {
      // What DataPath::FreeInode does, without the chunks: here rather than as one more write
      // transaction per unlink in the background (mdtest's unlink of empty files).
      FOLIO_RETURN_IF_ERROR(DeleteXattrs(t, victim->ino));
      FOLIO_RETURN_IF_ERROR(t.DeleteInode(victim->ino));
      FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedInodes, -1));
      const int64_t bytes = Round4k(victim->size_bytes);
      if (bytes != 0) FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedBytes, -bytes));
      if (freed_file != nullptr) *freed_file = true;
      return Status::OK();
    }
    FOLIO_RETURN_IF_ERROR(t.PutInode(*victim));
    meta::Deletion d;
    d.kind = meta::DeletionKind::kInode;
    d.id = Raw(victim->ino);
    d.not_before_ns = now_ns;
    FOLIO_ASSIGN_OR_RETURN(uint64_t key, t.QueueDeletion(d));
    (void)key;
    return Status::OK();
  }
  if (victim->type == FileType::kSymlink) FOLIO_RETURN_IF_ERROR(t.DeleteSymlink(victim->ino));
  FOLIO_RETURN_IF_ERROR(DeleteXattrs(t, victim->ino));
  FOLIO_RETURN_IF_ERROR(t.DeleteInode(victim->ino));
  return t.AddToCounter(meta::Counter::kUsedInodes, -1);
}

Status FileSystem::Unlink(const Cred& cred, InodeId parent, std::string_view name) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  FOLIO_RETURN_IF_ERROR(CheckName(name));
  if (name == "." || name == "..") return Errno(EISDIR, std::string(name));
  const int64_t now = WallNs();
  InodeId gone{0};
  bool freed = false;
  Status s = SustainMarks::Transact(meta_, data_.get(), "unlink",
                                    [&](meta::Txn& t, SustainMarks& marks) -> Status {
    gone = InodeId{0};
    const meta::RecordKey ahead[] = {meta::RecordKey::OfInode(parent),
                                     meta::RecordKey::OfEntry(parent, name)};
    FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
    FOLIO_ASSIGN_OR_RETURN(meta::Inode dir, GetLiveDir(t, parent));
    FOLIO_RETURN_IF_ERROR(CheckAccess(dir, cred, kMayExec));
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Entry> e, t.GetEntry(parent, name));
    if (!e) return Errno(ENOENT, std::string(name));
    if (e->type == FileType::kDirectory) return Errno(EISDIR, std::string(name));
    FOLIO_ASSIGN_OR_RETURN(meta::Inode victim, GetInodeOrEnoent(t, e->ino));
    FOLIO_RETURN_IF_ERROR(CheckDelete(dir, victim, cred));
    FOLIO_RETURN_IF_ERROR(t.DeleteEntry(parent, name));
    dir.mtime_ns = dir.ctime_ns = now;
    if (dir.size_bytes > 0) dir.size_bytes -= 1;
    FOLIO_RETURN_IF_ERROR(t.PutInode(dir));
    FOLIO_RETURN_IF_ERROR(DropLink(t, &victim, now, &freed, &marks));
    if (victim.nlink == 0) gone = victim.ino;
    return Status::OK();
  });
  if (s.ok() && gone != InodeId{0}) data_->ForgetIfClosed(gone);
  if (s.ok() && freed) FsCounters::Add(counters_->inodes_freed);
  return s;
}

Status FileSystem::Rmdir(const Cred& cred, InodeId parent, std::string_view name) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  FOLIO_RETURN_IF_ERROR(CheckName(name));
  if (name == ".") return Errno(EINVAL, "rmdir .");
  if (name == "..") return Errno(ENOTEMPTY, "rmdir ..");
  const int64_t now = WallNs();
  return meta_->Transact("rmdir", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    const meta::RecordKey ahead[] = {meta::RecordKey::OfInode(parent),
                                     meta::RecordKey::OfEntry(parent, name)};
    FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
    FOLIO_ASSIGN_OR_RETURN(meta::Inode dir, GetLiveDir(t, parent));
    FOLIO_RETURN_IF_ERROR(CheckAccess(dir, cred, kMayExec));
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Entry> e, t.GetEntry(parent, name));
    if (!e) return Errno(ENOENT, std::string(name));
    if (e->type != FileType::kDirectory) return Errno(ENOTDIR, std::string(name));
    FOLIO_ASSIGN_OR_RETURN(meta::Inode victim, GetInodeOrEnoent(t, e->ino));
    FOLIO_RETURN_IF_ERROR(CheckDelete(dir, victim, cred));
    FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Entry> inside, t.ListEntries(victim.ino, "", 1));
    if (!inside.empty()) return Errno(ENOTEMPTY, std::string(name));
    FOLIO_RETURN_IF_ERROR(t.DeleteEntry(parent, name));
    dir.mtime_ns = dir.ctime_ns = now;
    if (dir.size_bytes > 0) dir.size_bytes -= 1;
    if (dir.nlink > 2) dir.nlink -= 1;
    FOLIO_RETURN_IF_ERROR(t.PutInode(dir));
    return DropLink(t, &victim, now);
  });
}

}  // namespace folio::fs
