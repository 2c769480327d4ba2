#include <time.h>

#include <string>

#include "base/timespec.h"
#include "fs/fs_internal.h"

namespace folio::fs {

std::string InodeText(InodeId ino) { return "inode " + std::to_string(Raw(ino)); }

int64_t WallNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return TimespecToNs(ts);
}

Result<meta::Inode> GetInodeOrEnoent(meta::Txn& txn, InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Inode> inode, txn.GetInode(ino));
  if (!inode) return Errno(ENOENT, InodeText(ino));
  return *inode;
}

Result<meta::Inode> GetLiveDir(meta::Txn& txn, InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(meta::Inode dir, GetInodeOrEnoent(txn, ino));
  if (dir.type != FileType::kDirectory) return Errno(ENOTDIR, InodeText(ino));
  if (dir.nlink == 0) return Errno(ENOENT, InodeText(ino) + " (removed directory)");
  return dir;
}

Result<uint64_t> QueueInodeDeletion(meta::Txn& txn, InodeId ino) {
  meta::Deletion d;
  d.kind = meta::DeletionKind::kInode;
  d.id = Raw(ino);
  d.not_before_ns = WallNs();
  return txn.QueueDeletion(d);
}

Result<uint64_t> QueueInodeIfFree(meta::Txn& txn, InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Inode> inode, txn.GetInode(ino));
  if (!inode || inode->nlink > 0) return uint64_t{0};
  FOLIO_ASSIGN_OR_RETURN(bool held, txn.IsSustained(ino));
  if (held) return uint64_t{0};
  return QueueInodeDeletion(txn, ino);
}

Status DeleteXattrs(meta::Txn& txn, InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Xattr> xattrs, txn.ListXattrs(ino));
  for (const meta::Xattr& x : xattrs) FOLIO_RETURN_IF_ERROR(txn.DeleteXattr(ino, x.name));
  return Status::OK();
}

}  // namespace folio::fs
