// FileSystem::Rename: rename(2) / renameat2(2) in one metadata transaction.
//
// Inside the transaction: both directories' permissions and sticky rules, the cycle check (a
// directory moved to another parent must not be an ancestor of that parent: the new parent's
// chain of `parent` links is walked to the root, every inode read in the transaction, so a
// concurrent rename elsewhere cannot make a cycle appear), RENAME_NOREPLACE, RENAME_EXCHANGE,
// and replacing an existing file or empty directory (its last link dropped as unlink does).
#include <string>

#include "fs/data_path.h"
#include "fs/file_system.h"
#include "fs/fs_internal.h"
#include "fs/perm.h"
#include "fs/stats_counters.h"

namespace folio::fs {

namespace {

constexpr int kMaxDepth = 1 << 20;  // a parent chain longer than this is corrupt

// EINVAL when `moved` is `start` or one of its ancestors.
Status CheckNotAncestor(meta::Txn& t, InodeId moved, InodeId start) {
  InodeId cur = start;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    if (cur == moved) return Errno(EINVAL, "rename of a directory into its own subtree");
    if (cur == kRootInode) return Status::OK();
    FOLIO_ASSIGN_OR_RETURN(meta::Inode inode, GetInodeOrEnoent(t, cur));
    cur = inode.parent;
  }
  return Status::Corruption("directory parent chain from " + InodeText(start) + " has no root");
}

struct RenameSide {
  meta::Inode* dir = nullptr;
  meta::Entry entry;
  meta::Inode inode;
};

}  // namespace

Status FileSystem::Rename(const Cred& cred, InodeId parent, std::string_view name,
                          InodeId new_parent, std::string_view new_name, unsigned flags) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  if ((flags & ~(kRenameNoReplace | kRenameExchange)) != 0 ||
      (flags == (kRenameNoReplace | kRenameExchange))) {
    return Errno(EINVAL, "rename flags " + std::to_string(flags));
  }
  FOLIO_RETURN_IF_ERROR(CheckName(name));
  FOLIO_RETURN_IF_ERROR(CheckName(new_name));
  if (name == "." || name == ".." || new_name == "." || new_name == "..") {
    return Errno(EBUSY, "rename of . or ..");
  }
  const bool exchange = (flags & kRenameExchange) != 0;
  const int64_t now = WallNs();
  InodeId replaced{0};
  bool freed = false;
  Status s = SustainMarks::Transact(meta_, data_.get(), "rename",
                                    [&](meta::Txn& t, SustainMarks& marks) -> Status {
    replaced = InodeId{0};
    freed = false;
    const meta::RecordKey ahead[] = {meta::RecordKey::OfInode(parent),
                                     meta::RecordKey::OfEntry(parent, name),
                                     meta::RecordKey::OfEntry(new_parent, new_name),
                                     meta::RecordKey::OfInode(new_parent)};
    FOLIO_RETURN_IF_ERROR(t.Prefetch(std::span(ahead, parent == new_parent ? 3 : 4)));
    FOLIO_ASSIGN_OR_RETURN(meta::Inode d1, GetLiveDir(t, parent));
    meta::Inode d2_store;
    const bool same_dir = parent == new_parent;
    if (!same_dir) {
      FOLIO_ASSIGN_OR_RETURN(d2_store, GetLiveDir(t, new_parent));
    }
    meta::Inode& d2 = same_dir ? d1 : d2_store;
    FOLIO_RETURN_IF_ERROR(CheckAccess(d1, cred, kMayWrite | kMayExec));
    if (!same_dir) FOLIO_RETURN_IF_ERROR(CheckAccess(d2, cred, kMayWrite | kMayExec));

    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Entry> e1, t.GetEntry(parent, name));
    if (!e1) return Errno(ENOENT, std::string(name));
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Entry> e2, t.GetEntry(new_parent, new_name));
    if (exchange && !e2) return Errno(ENOENT, std::string(new_name));
    if ((flags & kRenameNoReplace) != 0 && e2) return Errno(EEXIST, std::string(new_name));
    if (e2 && e2->ino == e1->ino) return Status::OK();  // the same file: nothing to do

    FOLIO_ASSIGN_OR_RETURN(meta::Inode src, GetInodeOrEnoent(t, e1->ino));
    FOLIO_RETURN_IF_ERROR(CheckDelete(d1, src, cred));
    const bool src_dir = src.type == FileType::kDirectory;
    meta::Inode dst;
    if (e2) {
      FOLIO_ASSIGN_OR_RETURN(dst, GetInodeOrEnoent(t, e2->ino));
      FOLIO_RETURN_IF_ERROR(CheckDelete(d2, dst, cred));
    }
    const bool dst_dir = e2 && dst.type == FileType::kDirectory;
    if (!same_dir) {
      // Moving a directory rewrites its "..": it needs write permission on it too.
      if (src_dir) {
        FOLIO_RETURN_IF_ERROR(CheckNotAncestor(t, src.ino, new_parent));
        FOLIO_RETURN_IF_ERROR(CheckAccess(src, cred, kMayWrite));
      }
      if (exchange && dst_dir) {
        FOLIO_RETURN_IF_ERROR(CheckNotAncestor(t, dst.ino, parent));
        FOLIO_RETURN_IF_ERROR(CheckAccess(dst, cred, kMayWrite));
      }
    }

    if (exchange) {
      FOLIO_RETURN_IF_ERROR(
          t.PutEntry(meta::Entry{parent, std::string(name), dst.ino, dst.type}));
      FOLIO_RETURN_IF_ERROR(
          t.PutEntry(meta::Entry{new_parent, std::string(new_name), src.ino, src.type}));
      if (!same_dir) {
        if (src_dir) {
          src.parent = new_parent;
          d1.nlink -= 1;
          d2.nlink += 1;
        }
        if (dst_dir) {
          dst.parent = parent;
          d2.nlink -= 1;
          d1.nlink += 1;
        }
      }
      src.ctime_ns = dst.ctime_ns = now;
      FOLIO_RETURN_IF_ERROR(t.PutInode(src));
      FOLIO_RETURN_IF_ERROR(t.PutInode(dst));
    } else {
      if (e2) {
        if (src_dir && !dst_dir) return Errno(ENOTDIR, std::string(new_name));
        if (!src_dir && dst_dir) return Errno(EISDIR, std::string(new_name));
        if (dst_dir) {
          FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Entry> inside, t.ListEntries(dst.ino, "", 1));
          if (!inside.empty()) return Errno(ENOTEMPTY, std::string(new_name));
        }
      }
      FOLIO_RETURN_IF_ERROR(t.DeleteEntry(parent, name));
      FOLIO_RETURN_IF_ERROR(
          t.PutEntry(meta::Entry{new_parent, std::string(new_name), src.ino, src.type}));
      if (d1.size_bytes > 0) d1.size_bytes -= 1;
      d2.size_bytes += 1;
      if (e2) {
        if (d2.size_bytes > 0) d2.size_bytes -= 1;
        if (dst_dir && d2.nlink > 2) d2.nlink -= 1;
        FOLIO_RETURN_IF_ERROR(DropLink(t, &dst, now, &freed, &marks));
        if (dst.nlink == 0) replaced = dst.ino;
      }
      if (src_dir && !same_dir) {
        src.parent = new_parent;
        d1.nlink -= 1;
        d2.nlink += 1;
      }
      src.ctime_ns = now;
      FOLIO_RETURN_IF_ERROR(t.PutInode(src));
    }
    d1.mtime_ns = d1.ctime_ns = now;
    d2.mtime_ns = d2.ctime_ns = now;
    FOLIO_RETURN_IF_ERROR(t.PutInode(d1));
    if (!same_dir) FOLIO_RETURN_IF_ERROR(t.PutInode(d2));
    return Status::OK();
  });
  if (s.ok() && replaced != InodeId{0}) data_->ForgetIfClosed(replaced);
  if (s.ok() && freed) FsCounters::Add(counters_->inodes_freed);
  return s;
}

}  // namespace folio::fs
