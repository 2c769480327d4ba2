// The low-level ops past namespace and data: xattrs, access, flock, POSIX locks (getlk /
// setlk / setlkw), lseek (SEEK_DATA / SEEK_HOLE), copy_file_range. Each body makes one
// Filesystem call and sends exactly one reply (lowlevel_util.h's Serve).
#define FUSE_USE_VERSION 312
#include <fcntl.h>
#include <fuse3/fuse_lowlevel.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "fuse/lowlevel_util.h"

namespace folio::fuse::internal {

namespace {

// getxattr / listxattr: size 0 asks for the length; a buffer too small is ERANGE.
void ReplyXattrValue(fuse_req_t req, size_t size, const std::string& value) {
  if (size == 0) {
    fuse_reply_xattr(req, value.size());
  } else if (size < value.size()) {
    fuse_reply_err(req, ERANGE);
  } else {
    fuse_reply_buf(req, value.data(), value.size());
  }
}

void OpGetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  Serve(req, FuseOp::kXattr, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::string value, ctx->fs->GetXattr(InodeId{ino}, name));
    ReplyXattrValue(req, size, value);
    return Status::OK();
  });
}

void OpListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Serve(req, FuseOp::kXattr, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::vector<std::string> names, ctx->fs->ListXattr(InodeId{ino}));
    std::string list;  // NUL-terminated names back to back
    for (const std::string& n : names) {
      list += n;
      list.push_back('\0');
    }
    ReplyXattrValue(req, size, list);
    return Status::OK();
  });
}

void OpSetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value,
                size_t size, int flags) {
  Serve(req, FuseOp::kXattr, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->SetXattr(InodeId{ino}, name, {value, size}, flags));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpRemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  Serve(req, FuseOp::kXattr, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->RemoveXattr(InodeId{ino}, name));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpAccess(fuse_req_t req, fuse_ino_t ino, int mask) {
  Serve(req, FuseOp::kAccess, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->Access(InodeId{ino}, mask));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpFlock(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, int op) {
  Serve(req, FuseOp::kLock, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->Flock(InodeId{ino}, fi->fh, op));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

FileLock ToFileLock(const struct flock* lock) {
  FileLock l;
  l.type = lock->l_type;
  l.start = static_cast<uint64_t>(lock->l_start);
  // The kernel hands the range as [l_start, l_start + l_len - 1], l_len 0 meaning to the end.
  l.end = lock->l_len == 0 ? UINT64_MAX
                           : static_cast<uint64_t>(lock->l_start) +
                                 static_cast<uint64_t>(lock->l_len) - 1;
  l.pid = static_cast<uint32_t>(lock->l_pid);
  return l;
}

void OpGetLk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock) {
  Serve(req, FuseOp::kLock, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(FileLock got, ctx->fs->GetLk(InodeId{ino}, fi->fh, ToFileLock(lock)));
    struct flock out;
    std::memset(&out, 0, sizeof(out));
    out.l_type = got.type;
    out.l_whence = SEEK_SET;
    out.l_start = static_cast<off_t>(got.start);
    out.l_len = got.end == UINT64_MAX ? 0 : static_cast<off_t>(got.end - got.start + 1);
    out.l_pid = static_cast<pid_t>(got.pid);
    fuse_reply_lock(req, &out);
    return Status::OK();
  });
}

void OpSetLk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock,
             int sleep) {
  Serve(req, FuseOp::kLock, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->SetLk(InodeId{ino}, fi->fh, ToFileLock(lock), sleep != 0));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpLseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi) {
  Serve(req, FuseOp::kLseek, fi, [&](AdapterContext* ctx) -> Status {
    if (off < 0) return Status::FromErrno(EINVAL, "lseek to a negative offset");
    FOLIO_ASSIGN_OR_RETURN(uint64_t pos,
                           ctx->fs->Lseek(InodeId{ino}, fi->fh, static_cast<uint64_t>(off), whence));
    fuse_reply_lseek(req, static_cast<off_t>(pos));
    return Status::OK();
  });
}

void OpCopyFileRange(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, fuse_file_info* fi_in,
                     fuse_ino_t ino_out, off_t off_out, fuse_file_info* fi_out, size_t len,
                     int flags) {
  Serve(req, FuseOp::kCopyFileRange, fi_out, [&](AdapterContext* ctx) -> Status {
    if (flags != 0) return Status::FromErrno(EINVAL, "copy_file_range flags");
    if (off_in < 0 || off_out < 0) return Status::FromErrno(EINVAL, "copy_file_range offset");
    FOLIO_ASSIGN_OR_RETURN(
        uint64_t n, ctx->fs->CopyFileRange(InodeId{ino_in}, fi_in->fh,
                                           static_cast<uint64_t>(off_in), InodeId{ino_out},
                                           fi_out->fh, static_cast<uint64_t>(off_out), len));
    fuse_reply_write(req, n);
    return Status::OK();
  });
}

}  // namespace

void AddExtraOps(fuse_lowlevel_ops* ops) {
  ops->getxattr = OpGetXattr;
  ops->listxattr = OpListXattr;
  ops->setxattr = OpSetXattr;
  ops->removexattr = OpRemoveXattr;
  ops->access = OpAccess;
  ops->flock = OpFlock;
  ops->getlk = OpGetLk;
  ops->setlk = OpSetLk;
  ops->lseek = OpLseek;
  ops->copy_file_range = OpCopyFileRange;
}

}  // namespace folio::fuse::internal
