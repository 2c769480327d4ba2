// FileSystem: getattr, setattr, access, statfs.
#include <sys/stat.h>

#include <shared_mutex>
#include <string>

#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/file_system.h"
#include "fs/fs_internal.h"
#include "fs/perm.h"

namespace folio::fs {

Result<Attr> FileSystem::GetAttr(InodeId ino) {
  meta::Inode out;
  Status s = meta_->Transact("getattr", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(out, GetInodeOrEnoent(t, ino));
    return Status::OK();
  });
  if (!s.ok()) return s;
  return AttrOf(out);
}

Result<Attr> FileSystem::SetAttr(const Cred& cred, InodeId ino, const SetAttrRequest& req) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  if (req.set_size) {
    FOLIO_ASSIGN_OR_RETURN(Attr now, GetAttr(ino));
    const meta::Inode& inode = now.inode;
    if (inode.type == FileType::kDirectory) return Errno(EISDIR, InodeText(ino));
    if (inode.type != FileType::kRegular) return Errno(EINVAL, InodeText(ino) + ": not a file");
    if (req.size_bytes > kMaxFileBytes) return Errno(EFBIG, "size " + std::to_string(req.size_bytes));
    if ((inode.flags & (meta::kInodeFlagImmutable | meta::kInodeFlagAppend)) != 0) {
      return Errno(EPERM, InodeText(ino) + " is immutable or append-only");
    }
    if (req.fh == 0) FOLIO_RETURN_IF_ERROR(CheckAccess(inode, cred, kMayWrite));
    FOLIO_RETURN_IF_ERROR(data_->Truncate(cred, inode, req.size_bytes));
  }
  const bool more = req.set_mode || req.set_uid || req.set_gid || req.atime != TimeSet::kOmit ||
                    req.mtime != TimeSet::kOmit;
  if (!more) return GetAttr(ino);

  // Changes of an open file's attributes exclude its writers while they commit, so a write's
  // mode or time change cannot slip between the overlay and the adoption below.
  std::shared_ptr<FileData> data = data_->Find(ino);
  std::unique_lock<std::shared_mutex> io;
  if (data) io = data->LockExclusive();
  SetAttrRequest rest = req;
  rest.set_size = false;
  const int64_t now = WallNs();
  meta::Inode out;
  bool elsewhere = false;
  Status s = meta_->Transact("setattr", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(out, GetInodeOrEnoent(t, ino));
    const uint64_t committed_size = out.size_bytes;
    if (data) {
      elsewhere = data->ChangedSinceBase(out);
      data->Overlay(&out);
      // This mount's uncommitted growth goes in, never below another mount's (CommitSize).
      out.size_bytes = CommitSize(committed_size, out.size_bytes, true, data->size_exact());
    }
    FOLIO_RETURN_IF_ERROR(ApplySetAttr(rest, cred, now, &out));
    // The overlay may commit a size this mount's writes reached: keep the usage counter.
    const int64_t delta = Round4k(out.size_bytes) - Round4k(committed_size);
    if (delta != 0) FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedBytes, delta));
    return t.PutInode(out);
  });
  if (!s.ok()) return s;
  if (data) {
    data->AdoptAttrs(out);
    if (elsewhere) data->MarkStale();
  }
  return AttrOf(out);
}

Status FileSystem::Access(const Cred& cred, InodeId ino, int mask) {
  FOLIO_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  if ((mask & kMayWrite) != 0 && options_.read_only) return Errno(EROFS, "read-only mount");
  return CheckAccess(a.inode, cred, mask);
}

Result<fs::StatFs> FileSystem::StatFs() {
  int64_t used_bytes = 0, used_inodes = 0;
  Status s = meta_->Transact("statfs", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(used_bytes, t.GetCounter(meta::Counter::kUsedBytes));
    FOLIO_ASSIGN_OR_RETURN(used_inodes, t.GetCounter(meta::Counter::kUsedInodes));
    return Status::OK();
  });
  if (!s.ok()) return s;
  // The stores have no fixed capacity to report: like JuiceFS without a quota, the volume
  // shows 1 PiB (or twice what is used) in total.
  fs::StatFs out;
  out.block_bytes = 4096;
  const uint64_t used_blocks = static_cast<uint64_t>(std::max<int64_t>(0, used_bytes)) / 4096;
  const uint64_t total_blocks = std::max<uint64_t>((1ull << 50) / 4096, used_blocks * 2);
  out.blocks = total_blocks;
  out.blocks_free = total_blocks - used_blocks;
  const uint64_t inodes = static_cast<uint64_t>(std::max<int64_t>(0, used_inodes));
  out.files = std::max<uint64_t>(1ull << 31, inodes * 2);
  out.files_free = out.files - inodes;
  out.name_max_bytes = kNameMaxBytes;
  return out;
}

}  // namespace folio::fs
