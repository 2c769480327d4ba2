// The low-level ops of namespace changes and directories: mknod, mkdir, unlink, rmdir,
// symlink, readlink, rename, link, create, opendir, readdir, readdirplus, releasedir, fsyncdir.
// Each body makes one Filesystem call and sends exactly one reply (lowlevel_util.h's Serve).
#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "fuse/lowlevel_util.h"

namespace folio::fuse::internal {

namespace {

void OpMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  Serve(req, FuseOp::kMknod, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(EntryReply e, ctx->fs->Mknod(InodeId{parent}, name, mode, rdev));
    ReplyEntry(ctx, req, e);
    return Status::OK();
  });
}

void OpMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  Serve(req, FuseOp::kMkdir, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(EntryReply e, ctx->fs->Mkdir(InodeId{parent}, name, mode));
    ReplyEntry(ctx, req, e);
    return Status::OK();
  });
}

void OpUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Serve(req, FuseOp::kUnlink, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->Unlink(InodeId{parent}, name));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Serve(req, FuseOp::kRmdir, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->Rmdir(InodeId{parent}, name));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpSymlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  Serve(req, FuseOp::kSymlink, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(EntryReply e, ctx->fs->Symlink(target, InodeId{parent}, name));
    ReplyEntry(ctx, req, e);
    return Status::OK();
  });
}

void OpReadLink(fuse_req_t req, fuse_ino_t ino) {
  Serve(req, FuseOp::kReadLink, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::string target, ctx->fs->ReadLink(InodeId{ino}));
    fuse_reply_readlink(req, target.c_str());
    return Status::OK();
  });
}

void OpRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
              const char* new_name, unsigned int flags) {
  Serve(req, FuseOp::kRename, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(
        ctx->fs->Rename(InodeId{parent}, name, InodeId{new_parent}, new_name, flags));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char* new_name) {
  Serve(req, FuseOp::kLink, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(EntryReply e, ctx->fs->Link(InodeId{ino}, InodeId{new_parent}, new_name));
    ReplyEntry(ctx, req, e);
    return Status::OK();
  });
}

void OpCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
              fuse_file_info* fi) {
  Serve(req, FuseOp::kCreate, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(Filesystem::CreateReply c,
                           ctx->fs->Create(InodeId{parent}, name, mode, fi->flags));
    FillOpen(c.open, fi);
    const fuse_entry_param p = ToEntry(c.entry);
    const int r = ReplyWithReference(ctx, c.entry.attr.ino,
                                     [&] { return fuse_reply_create(req, &p, fi); });
    if (r != 0) {
      // Interrupted: the kernel never got the handle, so it will never release it.
      Status ignored = ctx->fs->Release(c.entry.attr.ino, c.open.fh);
      (void)ignored;
    }
    return Status::OK();
  });
}

void OpOpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Serve(req, FuseOp::kOpenDir, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(uint64_t fh, ctx->fs->OpenDir(InodeId{ino}, fi->flags));
    fi->fh = fh;
    if (fuse_reply_open(req, fi) != 0) {
      Status ignored = ctx->fs->ReleaseDir(InodeId{ino}, fh);
      (void)ignored;
    }
    return Status::OK();
  });
}

// One readdir / readdirplus page: entries are added while they fit in `size` bytes; an entry
// that does not fit is left for the next request (its offset is where that one resumes).
void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
                   bool plus) {
  Serve(req, FuseOp::kReadDir, fi, [&](AdapterContext* ctx) -> Status {
    // An entry takes at least 24 (readdir) or 152 (readdirplus) bytes: ask for no more
    // entries than could fit, so a page of a huge directory costs bounded memory.
    const size_t per_entry = plus ? 152 : 24;
    const size_t max_entries = std::max<size_t>(1, size / per_entry);
    FOLIO_ASSIGN_OR_RETURN(
        std::vector<DirPageEntry> page,
        ctx->fs->ReadDirPage(InodeId{ino}, fi->fh, off < 0 ? 0 : static_cast<uint64_t>(off),
                             max_entries, plus));
    std::vector<char> buf(size);
    size_t used = 0;
    std::vector<InodeId> referenced;  // readdirplus entries that hand the kernel a reference
    for (const DirPageEntry& e : page) {
      size_t need = 0;
      if (plus) {
        const bool dot = e.name == "." || e.name == "..";
        fuse_entry_param p;
        if (dot) {
          // The kernel takes no reference for "." and "..": an entry of inode 0 says so.
          std::memset(&p, 0, sizeof(p));
          p.attr.st_ino = static_cast<ino_t>(e.ino);
          p.attr.st_mode = e.mode;
        } else {
          p = ToEntry(e.entry);
        }
        need = fuse_add_direntry_plus(req, buf.data() + used, size - used, e.name.c_str(), &p,
                                      static_cast<off_t>(e.offset));
        if (need > size - used) break;
        if (!dot) {
          ctx->lookups.Add(e.entry.attr.ino);
          referenced.push_back(e.entry.attr.ino);
        }
      } else {
        struct stat st;
        std::memset(&st, 0, sizeof(st));
        st.st_ino = static_cast<ino_t>(e.ino);
        st.st_mode = e.mode;
        need = fuse_add_direntry(req, buf.data() + used, size - used, e.name.c_str(), &st,
                                 static_cast<off_t>(e.offset));
        if (need > size - used) break;
      }
      used += need;
    }
    if (fuse_reply_buf(req, buf.data(), used) != 0) {
      // The page never reached the kernel: it holds none of the references counted for it.
      for (InodeId r : referenced) ForgetReferences(ctx, r, 1);
    }
    return Status::OK();
  });
}

void OpReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReadDirCommon(req, ino, size, off, fi, /*plus=*/false);
}

void OpReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReadDirCommon(req, ino, size, off, fi, /*plus=*/true);
}

void OpReleaseDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Serve(req, FuseOp::kReleaseDir, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->ReleaseDir(InodeId{ino}, fi->fh));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpFsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  Serve(req, FuseOp::kFsync, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->FsyncDir(
        InodeId{ino}, fi->fh, datasync ? SyncKind::kData : SyncKind::kDataAndMetadata));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

}  // namespace

void AddNamespaceOps(fuse_lowlevel_ops* ops) {
  ops->mknod = OpMknod;
  ops->mkdir = OpMkdir;
  ops->unlink = OpUnlink;
  ops->rmdir = OpRmdir;
  ops->symlink = OpSymlink;
  ops->readlink = OpReadLink;
  ops->rename = OpRename;
  ops->link = OpLink;
  ops->create = OpCreate;
  ops->opendir = OpOpenDir;
  ops->readdir = OpReadDir;
  ops->readdirplus = OpReadDirPlus;
  ops->releasedir = OpReleaseDir;
  ops->fsyncdir = OpFsyncDir;
}

}  // namespace folio::fuse::internal
