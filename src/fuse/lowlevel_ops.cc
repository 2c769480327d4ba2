#define FUSE_USE_VERSION 312
#include "fuse/lowlevel_ops.h"

#include <fuse3/fuse_lowlevel.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "base/clock.h"

namespace folio::fuse {

// ---- LookupCounts ----------------------------------------------------------------------

void LookupCounts::Add(InodeId ino) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[static_cast<uint64_t>(ino)];
}

uint64_t LookupCounts::Forget(InodeId ino, uint64_t nlookup) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(static_cast<uint64_t>(ino));
  const uint64_t have = it == counts_.end() ? 0 : it->second;
  FOLIO_CHECK_MSG(nlookup <= have, "FUSE forget of more lookups than were replied");
  if (nlookup == have) {
    if (it != counts_.end()) counts_.erase(it);
    return 0;
  }
  it->second -= nlookup;
  return it->second;
}

uint64_t LookupCounts::Get(InodeId ino) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(static_cast<uint64_t>(ino));
  return it == counts_.end() ? 0 : it->second;
}

namespace {

AdapterContext* Ctx(fuse_req_t req) { return static_cast<AdapterContext*>(fuse_req_userdata(req)); }

int ErrnoOf(const Status& s) {
  const int err = s.ToErrno();
  return err > 0 ? err : EIO;
}

// Runs body(ctx) for a request: a body replies itself and returns OK, or returns an error and
// the guard replies with its errno. Nothing thrown crosses into libfuse's C frames.
template <typename Body>
void Serve(fuse_req_t req, FuseOp op, Body&& body) {
  AdapterContext* ctx = Ctx(req);
  ctx->stats.RecordRequest(op);
  Status s;
  try {
    s = body(ctx);
  } catch (const std::bad_alloc&) {
    s = Status::FromErrno(ENOMEM, "out of memory");
  } catch (...) {
    s = Status::IOError("internal error: exception in a FUSE handler");
  }
  if (!s.ok()) {
    ctx->stats.RecordError(op);
    fuse_reply_err(req, ErrnoOf(s));
  }
}

struct stat ToStat(const NodeAttr& a) {
  struct stat st;
  std::memset(&st, 0, sizeof(st));
  st.st_ino = static_cast<ino_t>(a.ino);
  st.st_mode = a.mode;
  st.st_nlink = a.nlink;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_size = static_cast<off_t>(a.size_bytes);
  st.st_blksize = a.blksize_bytes;
  st.st_blocks = static_cast<blkcnt_t>(a.blocks_512);
  st.st_atim = a.atime;
  st.st_mtim = a.mtime;
  st.st_ctim = a.ctime;
  return st;
}

// A per-worker-thread buffer for read replies, 4 KiB aligned, grown to the largest request
// (max_write / max_pages bound it at 1 MiB) and reused: no allocation per read.
char* ReadBuffer(size_t bytes) {
  thread_local AlignedBuffer buf;
  if (bytes > buf.size()) {
    Result<AlignedBuffer> grown = AlignedBuffer::TryAllocate(std::max<size_t>(bytes, 128 << 10));
    if (!grown.ok()) throw std::bad_alloc();
    buf = std::move(grown).value();
  }
  return buf.data();
}

// ---- Callbacks -------------------------------------------------------------------------

void OpInit(void* userdata, fuse_conn_info* conn) {
  AdapterContext* ctx = static_cast<AdapterContext*>(userdata);
  ctx->stats.RecordRequest(FuseOp::kInit);
  // Data moves through our buffers: no splice (it costs a pipe per request for no gain here).
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  const unsigned wanted = FUSE_CAP_ASYNC_READ | FUSE_CAP_ASYNC_DIO | FUSE_CAP_ATOMIC_O_TRUNC;
  conn->want |= conn->capable & wanted;
  // libfuse clamps max_write to its buffer (256 pages) and asks the kernel for max_pages to
  // match, so reads and writes travel in requests of up to 1 MiB.
  conn->max_write = ctx->options.max_write_bytes;
  conn->max_readahead = std::min(conn->max_readahead, ctx->options.max_readahead_bytes);
  conn->max_background = ctx->options.max_background;
  conn->congestion_threshold = ctx->options.max_background * 3 / 4;
  ConnectionInfo info;
  info.protocol_major = conn->proto_major;
  info.protocol_minor = conn->proto_minor;
  info.max_write_bytes = conn->max_write;
  info.max_readahead_bytes = conn->max_readahead;
  info.max_background = conn->max_background;
  try {
    ctx->fs->Init(info);
  } catch (...) {
    // Init has no reply of ours to carry an error; the file system logs its own failures.
  }
}

void ForgetOne(AdapterContext* ctx, fuse_ino_t ino, uint64_t nlookup) {
  const uint64_t left = ctx->lookups.Forget(InodeId{ino}, nlookup);
  ctx->fs->Forget(InodeId{ino}, nlookup, left);
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Serve(req, FuseOp::kLookup, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(EntryReply e, ctx->fs->Lookup(InodeId{parent}, name));
    fuse_entry_param p;
    std::memset(&p, 0, sizeof(p));
    p.ino = static_cast<fuse_ino_t>(e.attr.ino);
    p.attr = ToStat(e.attr);
    p.attr_timeout = e.attr_timeout_s;
    p.entry_timeout = e.entry_timeout_s;
    ReplyWithReference(ctx, e.attr.ino, [&] { return fuse_reply_entry(req, &p); });
    return Status::OK();
  });
}


void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  AdapterContext* ctx = Ctx(req);
  ctx->stats.RecordRequest(FuseOp::kForget);
  ForgetOne(ctx, ino, nlookup);
  fuse_reply_none(req);
}

void OpForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  AdapterContext* ctx = Ctx(req);
  ctx->stats.RecordRequest(FuseOp::kForget);
  for (size_t i = 0; i < count; ++i) ForgetOne(ctx, forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void OpGetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* /*fi*/) {
  Serve(req, FuseOp::kGetAttr, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(NodeAttr a, ctx->fs->GetAttr(InodeId{ino}));
    struct stat st = ToStat(a);
    fuse_reply_attr(req, &st, 1.0);
    return Status::OK();
  });
}

void OpSetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
               fuse_file_info* /*fi*/) {
  Serve(req, FuseOp::kSetAttr, [&](AdapterContext* ctx) -> Status {
    SetAttrRequest r;
    r.has_size = (to_set & FUSE_SET_ATTR_SIZE) != 0;
    r.size_bytes = static_cast<uint64_t>(attr->st_size);
    r.has_mode = (to_set & FUSE_SET_ATTR_MODE) != 0;
    r.mode = attr->st_mode;
    r.has_owner = (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) != 0;
    r.has_times = (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
                             FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME)) != 0;
    FOLIO_ASSIGN_OR_RETURN(NodeAttr a, ctx->fs->SetAttr(InodeId{ino}, r));
    struct stat st = ToStat(a);
    fuse_reply_attr(req, &st, 1.0);
    return Status::OK();
  });
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Serve(req, FuseOp::kOpen, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(OpenReply o, ctx->fs->Open(InodeId{ino}, fi->flags));
    fi->fh = o.fh;
    fi->direct_io = o.direct_io ? 1 : 0;
    fi->keep_cache = o.keep_cache ? 1 : 0;
    fi->nonseekable = o.nonseekable ? 1 : 0;
    if (fuse_reply_open(req, fi) != 0) {
      // The open was interrupted: the kernel will never release this handle, so we do.
      Status ignored = ctx->fs->Release(InodeId{ino}, o.fh);
      (void)ignored;
    }
    return Status::OK();
  });
}

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Serve(req, FuseOp::kRead, [&](AdapterContext* ctx) -> Status {
    const uint64_t t0 = MonotonicNowNs();
    char* buf = ReadBuffer(size);
    FOLIO_ASSIGN_OR_RETURN(size_t n, ctx->fs->Read(InodeId{ino}, fi->fh,
                                                   static_cast<uint64_t>(off), {buf, size}));
    ctx->stats.RecordRead(size, n, MonotonicNowNs() - t0);
    fuse_reply_buf(req, buf, n);
    return Status::OK();
  });
}

void OpWrite(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
             fuse_file_info* fi) {
  Serve(req, FuseOp::kWrite, [&](AdapterContext* ctx) -> Status {
    const uint64_t t0 = MonotonicNowNs();
    FOLIO_ASSIGN_OR_RETURN(size_t n, ctx->fs->Write(InodeId{ino}, fi->fh,
                                                    static_cast<uint64_t>(off), {buf, size}));
    ctx->stats.RecordWrite(size, n, MonotonicNowNs() - t0);
    fuse_reply_write(req, n);
    return Status::OK();
  });
}

void OpFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Serve(req, FuseOp::kFlush, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->Flush(InodeId{ino}, fi->fh));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Serve(req, FuseOp::kRelease, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->Release(InodeId{ino}, fi->fh));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpFsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  Serve(req, FuseOp::kFsync, [&](AdapterContext* ctx) -> Status {
    const uint64_t t0 = MonotonicNowNs();
    FOLIO_RETURN_IF_ERROR(ctx->fs->Fsync(InodeId{ino}, fi->fh,
                                         datasync ? SyncKind::kData : SyncKind::kDataAndMetadata));
    ctx->stats.RecordFsync(MonotonicNowNs() - t0);
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t length,
                 fuse_file_info* fi) {
  Serve(req, FuseOp::kFallocate, [&](AdapterContext* ctx) -> Status {
    if (off < 0 || length <= 0) return Status::FromErrno(EINVAL, "fallocate range");
    FOLIO_RETURN_IF_ERROR(ctx->fs->Fallocate(InodeId{ino}, fi->fh, mode,
                                             static_cast<uint64_t>(off),
                                             static_cast<uint64_t>(length)));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* /*fi*/) {
  Serve(req, FuseOp::kReadDir, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, ctx->fs->ReadDir(InodeId{ino}));
    std::vector<char> buf(size);
    size_t used = 0;
    for (size_t i = off < 0 ? 0 : static_cast<size_t>(off); i < entries.size(); ++i) {
      struct stat st;
      std::memset(&st, 0, sizeof(st));
      st.st_ino = static_cast<ino_t>(entries[i].ino);
      st.st_mode = entries[i].mode;
      // The offset of an entry is where the next readdir resumes: the next index.
      const size_t need = fuse_add_direntry(req, buf.data() + used, size - used,
                                            entries[i].name.c_str(), &st,
                                            static_cast<off_t>(i + 1));
      if (need > size - used) break;
      used += need;
    }
    fuse_reply_buf(req, buf.data(), used);
    return Status::OK();
  });
}

void OpStatFs(fuse_req_t req, fuse_ino_t /*ino*/) {
  Serve(req, FuseOp::kStatFs, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(FsStatfs f, ctx->fs->StatFs());
    struct statvfs sv;
    std::memset(&sv, 0, sizeof(sv));
    sv.f_bsize = f.block_bytes;
    sv.f_frsize = f.block_bytes;
    sv.f_blocks = f.blocks;
    sv.f_bfree = f.blocks_free;
    sv.f_bavail = f.blocks_free;
    sv.f_files = f.files;
    sv.f_ffree = f.files_free;
    sv.f_favail = f.files_free;
    sv.f_namemax = f.name_max_bytes;
    fuse_reply_statfs(req, &sv);
    return Status::OK();
  });
}

// The namespace is the file system's to change; this adapter's file systems have a fixed one.
void OpCreate(fuse_req_t req, fuse_ino_t /*parent*/, const char* name, mode_t /*mode*/,
              fuse_file_info* /*fi*/) {
  Serve(req, FuseOp::kCreate, [&](AdapterContext*) -> Status {
    return Status::FromErrno(EPERM, std::string("create ") + name);
  });
}

void OpMknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) {
  Serve(req, FuseOp::kOther, [](AdapterContext*) { return Status::FromErrno(EPERM, "mknod"); });
}
void OpMkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) {
  Serve(req, FuseOp::kOther, [](AdapterContext*) { return Status::FromErrno(EPERM, "mkdir"); });
}
void OpUnlink(fuse_req_t req, fuse_ino_t, const char*) {
  Serve(req, FuseOp::kOther, [](AdapterContext*) { return Status::FromErrno(EPERM, "unlink"); });
}
void OpRmdir(fuse_req_t req, fuse_ino_t, const char*) {
  Serve(req, FuseOp::kOther, [](AdapterContext*) { return Status::FromErrno(EPERM, "rmdir"); });
}
void OpRename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned int) {
  Serve(req, FuseOp::kOther, [](AdapterContext*) { return Status::FromErrno(EPERM, "rename"); });
}

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = OpGetAttr;
  ops.setattr = OpSetAttr;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.write = OpWrite;
  ops.flush = OpFlush;
  ops.release = OpRelease;
  ops.fsync = OpFsync;
  ops.fallocate = OpFallocate;
  ops.readdir = OpReadDir;
  ops.statfs = OpStatFs;
  ops.create = OpCreate;
  ops.mknod = OpMknod;
  ops.mkdir = OpMkdir;
  ops.unlink = OpUnlink;
  ops.rmdir = OpRmdir;
  ops.rename = OpRename;
  return ops;
}

}  // namespace

int ReplyWithReference(AdapterContext* ctx, InodeId ino, const std::function<int()>& reply) {
  ctx->lookups.Add(ino);
  const int r = reply();
  if (r != 0) ForgetOne(ctx, static_cast<fuse_ino_t>(ino), 1);
  return r;
}

const fuse_lowlevel_ops& LowLevelOps() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace folio::fuse
