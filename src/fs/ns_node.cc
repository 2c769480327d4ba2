// FileSystem: lookup and the operations that make a node (mknod, mkdir, symlink, link), each
// one metadata transaction.
#include <sys/stat.h>

#include <string>

#include "fs/data_path.h"
#include "fs/file_system.h"
#include "fs/fs_internal.h"
#include "fs/perm.h"
#include "fs/slice_view.h"

namespace folio::fs {

namespace {

constexpr uint64_t kInodeBatch = 1024;
constexpr uint32_t kLinkMax = 0x7fffffff;

}  // namespace

Result<InodeId> FileSystem::NewInodeId() {
  std::lock_guard<std::mutex> lock(ids_mu_);
  if (next_inode_ == inode_limit_) {
    FOLIO_ASSIGN_OR_RETURN(uint64_t first, meta_->AllocateIds(meta::Counter::kNextInode, kInodeBatch));
    next_inode_ = first;
    inode_limit_ = first + kInodeBatch;
  }
  return InodeId{next_inode_++};
}

Status FileSystem::CheckWritable() const {
  if (options_.read_only) return Errno(EROFS, "read-only mount");
  return Status::OK();
}

Attr FileSystem::AttrOf(const meta::Inode& inode, bool overlay) const {
  Attr a;
  a.inode = inode;
  if (overlay && inode.type == FileType::kRegular) data_->Overlay(&a.inode);
  switch (a.inode.type) {
    case FileType::kRegular:
      a.blocks_512 = (a.inode.flags & meta::kInodeFlagSparse) != 0
                         ? SparseBlocks512(a.inode)
                         : (a.inode.size_bytes + kPageBytes - 1) / kPageBytes * 8;
      break;
    case FileType::kDirectory: a.blocks_512 = 8; break;
    default: a.blocks_512 = 0; break;
  }
  return a;
}

uint64_t FileSystem::SparseBlocks512(const meta::Inode& inode) const {
  const uint64_t size_pages = (inode.size_bytes + kPageBytes - 1) / kPageBytes;
  cache::PageRangeSet pages;
  Status s = meta_->Transact("blocks", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    pages.clear();
    FOLIO_ASSIGN_OR_RETURN(std::vector<uint32_t> chunks, t.ListChunks(inode.ino));
    for (uint32_t idx : chunks) {
      const uint64_t base = static_cast<uint64_t>(idx) * meta::kChunkBytes;
      if (base >= inode.size_bytes) continue;
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Slice> slices, t.GetChunk(inode.ino, idx));
      for (const Segment& seg : ResolveSlices(slices, 0, meta::kChunkBytes)) {
        if (seg.src < 0 || slices[seg.src].kind == meta::SliceKind::kZero) continue;
        pages.Add((base + seg.pos) / kPageBytes, (base + seg.pos + seg.len + kPageBytes - 1) / kPageBytes);
      }
    }
    return Status::OK();
  });
  // st_blocks is advisory: if the metadata cannot be read now, report the size in pages (the
  // data path reports the error to whoever reads the file).
  if (!s.ok()) return size_pages * 8;
  data_->AddWrittenPages(inode.ino, &pages);
  pages.Remove(size_pages, UINT64_MAX);
  return pages.total_pages() * 8;
}

Result<Attr> FileSystem::Lookup(const Cred& cred, InodeId parent, std::string_view name) {
  FOLIO_RETURN_IF_ERROR(CheckName(name));
  meta::Inode out;
  Status s = meta_->Transact("lookup", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    if (name != "." && name != "..") {
      const meta::RecordKey ahead[] = {meta::RecordKey::OfInode(parent),
                                       meta::RecordKey::OfEntry(parent, name)};
      FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
    }
    FOLIO_ASSIGN_OR_RETURN(meta::Inode dir, GetLiveDir(t, parent));
    FOLIO_RETURN_IF_ERROR(CheckAccess(dir, cred, kMayExec));
    if (name == ".") {
      out = dir;
      return Status::OK();
    }
    if (name == "..") {
      FOLIO_ASSIGN_OR_RETURN(out, GetInodeOrEnoent(t, dir.parent));
      return Status::OK();
    }
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Entry> e, t.GetEntry(parent, name));
    if (!e) return Errno(ENOENT, std::string(name));
    FOLIO_ASSIGN_OR_RETURN(out, GetInodeOrEnoent(t, e->ino));
    return Status::OK();
  });
  if (!s.ok()) return s;
  return AttrOf(out);
}

Result<Attr> FileSystem::CreateNode(const Cred& cred, InodeId parent, std::string_view name,
                                    meta::Inode proto, std::string_view symlink_target,
                                    bool exclusive, bool* existed,
                                    std::optional<std::string>* policy) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  FOLIO_RETURN_IF_ERROR(CheckName(name));
  if (name == "." || name == "..") return Errno(EEXIST, std::string(name));
  if ((proto.type == FileType::kCharDevice || proto.type == FileType::kBlockDevice) &&
      !cred.IsRoot()) {
    return Errno(EPERM, "mknod of a device by uid " + std::to_string(cred.uid));
  }
  FOLIO_ASSIGN_OR_RETURN(InodeId id, NewInodeId());
  const int64_t now = WallNs();
  const char* op = proto.type == FileType::kDirectory ? "mkdir"
                   : proto.type == FileType::kSymlink ? "symlink"
                   : proto.type == FileType::kRegular ? "create"
                                                      : "mknod";
  meta::Inode out;
  if (existed != nullptr) *existed = false;
  // Regular files and directories inherit their parent's folio policy (below).
  const bool inherits = proto.type == FileType::kRegular || proto.type == FileType::kDirectory;
  Status s = meta_->Transact(op, meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    if (existed != nullptr) *existed = false;
    const meta::RecordKey ahead[] = {meta::RecordKey::OfInode(parent),
                                     meta::RecordKey::OfEntry(parent, name),
                                     meta::RecordKey::OfXattr(parent, kPolicyXattr)};
    FOLIO_RETURN_IF_ERROR(t.Prefetch(std::span(ahead, inherits ? 3 : 2)));
    FOLIO_ASSIGN_OR_RETURN(meta::Inode dir, GetLiveDir(t, parent));
    FOLIO_RETURN_IF_ERROR(CheckAccess(dir, cred, kMayExec));
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Entry> e, t.GetEntry(parent, name));
    if (e) {
      if (exclusive || existed == nullptr) return Errno(EEXIST, std::string(name));
      FOLIO_ASSIGN_OR_RETURN(out, GetInodeOrEnoent(t, e->ino));
      *existed = true;
      return Status::OK();
    }
    FOLIO_RETURN_IF_ERROR(CheckAccess(dir, cred, kMayWrite));
    if (proto.type == FileType::kDirectory && dir.nlink >= kLinkMax) {
      return Errno(EMLINK, InodeText(parent));
    }
    // A directory's folio policy is inherited by everything made below it. Read before the
    // writes: an engine that sends writes with the next read (PostgreSQL) then sends them all
    // with the commit.
    std::optional<std::string> inherited;
    if (inherits) {
      FOLIO_ASSIGN_OR_RETURN(inherited, t.GetXattr(parent, kPolicyXattr));
    }
    meta::Inode inode = proto;
    inode.ino = id;
    InitOwner(dir, cred, &inode);
    inode.atime_ns = inode.mtime_ns = inode.ctime_ns = now;
    inode.nlink = proto.type == FileType::kDirectory ? 2 : 1;
    inode.parent = proto.type == FileType::kDirectory ? parent : InodeId{0};
    inode.size_bytes = proto.type == FileType::kSymlink ? symlink_target.size() : 0;
    FOLIO_RETURN_IF_ERROR(t.PutInode(inode));
    FOLIO_RETURN_IF_ERROR(t.PutEntry(meta::Entry{parent, std::string(name), id, inode.type}));
    if (proto.type == FileType::kSymlink) FOLIO_RETURN_IF_ERROR(t.PutSymlink(id, symlink_target));
    if (inherited) FOLIO_RETURN_IF_ERROR(t.PutXattr(id, kPolicyXattr, *inherited));
    if (policy != nullptr) *policy = std::move(inherited);
    dir.mtime_ns = dir.ctime_ns = now;
    dir.size_bytes += 1;
    if (proto.type == FileType::kDirectory) dir.nlink += 1;
    FOLIO_RETURN_IF_ERROR(t.PutInode(dir));
    FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedInodes, 1));
    out = inode;
    return Status::OK();
  });
  if (!s.ok()) return s;
  return AttrOf(out);
}

Result<Attr> FileSystem::Mknod(const Cred& cred, InodeId parent, std::string_view name,
                               FileType type, uint32_t mode, uint64_t rdev) {
  if (type == FileType::kDirectory || type == FileType::kSymlink) {
    return Errno(EINVAL, "mknod of a directory or symlink");
  }
  meta::Inode proto;
  proto.type = type;
  proto.mode = mode & 07777;
  proto.rdev = (type == FileType::kCharDevice || type == FileType::kBlockDevice) ? rdev : 0;
  return CreateNode(cred, parent, name, proto, {}, /*exclusive=*/true, nullptr);
}

Result<Attr> FileSystem::Mkdir(const Cred& cred, InodeId parent, std::string_view name,
                               uint32_t mode) {
  meta::Inode proto;
  proto.type = FileType::kDirectory;
  proto.mode = mode & 07777;
  return CreateNode(cred, parent, name, proto, {}, /*exclusive=*/true, nullptr);
}

Result<Attr> FileSystem::Symlink(const Cred& cred, InodeId parent, std::string_view name,
                                 std::string_view target) {
  if (target.empty()) return Errno(ENOENT, "empty symlink target");
  if (target.size() > kSymlinkMaxBytes) {
    return Errno(ENAMETOOLONG, "symlink target of " + std::to_string(target.size()) + " bytes");
  }
  meta::Inode proto;
  proto.type = FileType::kSymlink;
  proto.mode = 0777;
  return CreateNode(cred, parent, name, proto, target, /*exclusive=*/true, nullptr);
}

Result<Attr> FileSystem::Link(const Cred& cred, InodeId ino, InodeId new_parent,
                              std::string_view new_name) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  FOLIO_RETURN_IF_ERROR(CheckName(new_name));
  if (new_name == "." || new_name == "..") return Errno(EEXIST, std::string(new_name));
  const int64_t now = WallNs();
  meta::Inode out;
  Status s = meta_->Transact("link", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    const meta::RecordKey ahead[] = {meta::RecordKey::OfInode(ino),
                                     meta::RecordKey::OfInode(new_parent),
                                     meta::RecordKey::OfEntry(new_parent, new_name)};
    FOLIO_RETURN_IF_ERROR(t.Prefetch(ahead));
    FOLIO_ASSIGN_OR_RETURN(meta::Inode inode, GetInodeOrEnoent(t, ino));
    if (inode.type == FileType::kDirectory) return Errno(EPERM, "hard link to a directory");
    if (inode.nlink == 0) return Errno(ENOENT, InodeText(ino) + " (unlinked)");
    if (inode.nlink >= kLinkMax) return Errno(EMLINK, InodeText(ino));
    if ((inode.flags & (meta::kInodeFlagImmutable | meta::kInodeFlagAppend)) != 0) {
      return Errno(EPERM, InodeText(ino) + " is immutable");
    }
    FOLIO_ASSIGN_OR_RETURN(meta::Inode dir, GetLiveDir(t, new_parent));
    FOLIO_RETURN_IF_ERROR(CheckAccess(dir, cred, kMayWrite | kMayExec));
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Entry> e, t.GetEntry(new_parent, new_name));
    if (e) return Errno(EEXIST, std::string(new_name));
    FOLIO_RETURN_IF_ERROR(
        t.PutEntry(meta::Entry{new_parent, std::string(new_name), ino, inode.type}));
    inode.nlink += 1;
    inode.ctime_ns = now;
    FOLIO_RETURN_IF_ERROR(t.PutInode(inode));
    dir.mtime_ns = dir.ctime_ns = now;
    dir.size_bytes += 1;
    FOLIO_RETURN_IF_ERROR(t.PutInode(dir));
    out = inode;
    return Status::OK();
  });
  if (!s.ok()) return s;
  return AttrOf(out);
}

Result<std::string> FileSystem::ReadLink(InodeId ino) {
  std::string target;
  Status s = meta_->Transact("readlink", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(meta::Inode inode, GetInodeOrEnoent(t, ino));
    if (inode.type != FileType::kSymlink) return Errno(EINVAL, InodeText(ino) + " is no symlink");
    FOLIO_ASSIGN_OR_RETURN(std::optional<std::string> got, t.GetSymlink(ino));
    if (!got) return Status::Corruption(InodeText(ino) + ": symlink without a target");
    target = std::move(*got);
    return Status::OK();
  });
  if (!s.ok()) return s;
  return target;
}

}  // namespace folio::fs
