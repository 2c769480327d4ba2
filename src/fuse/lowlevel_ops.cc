// The low-level ops table: init, lookup / forget, attributes, open files, statfs; the caller
// context; lookup counting. Namespace and directory operations: lowlevel_ns_ops.cc; xattrs,
// locks, lseek, copy_file_range: lowlevel_extra_ops.cc.
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
#include "fuse/lowlevel_util.h"

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

// ---- The caller context ----------------------------------------------------------------

namespace {

thread_local const RequestContext* tl_caller = nullptr;

}  // namespace

const RequestContext& CallerContext() {
  static const RequestContext root;
  return tl_caller != nullptr ? *tl_caller : root;
}

std::vector<uint32_t> RequestContext::Groups() const {
  std::vector<uint32_t> out;
  if (request == nullptr) return out;
  gid_t list[64];
  const int n = fuse_req_getgroups(static_cast<fuse_req_t>(request), 64, list);
  for (int i = 0; i < std::min(n, 64); ++i) out.push_back(list[i]);
  return out;
}

bool RequestContext::Interrupted() const {
  return request != nullptr && fuse_req_interrupted(static_cast<fuse_req_t>(request)) != 0;
}

namespace internal {

ScopedCaller::ScopedCaller(const RequestContext* ctx) : saved_(tl_caller) { tl_caller = ctx; }
ScopedCaller::~ScopedCaller() { tl_caller = saved_; }

RequestContext ContextOf(fuse_req_t req, const fuse_file_info* fi) {
  RequestContext c;
  const fuse_ctx* f = fuse_req_ctx(req);
  c.uid = f->uid;
  c.gid = f->gid;
  c.pid = static_cast<uint32_t>(f->pid);
  c.umask = f->umask;
  if (fi != nullptr) {
    c.lock_owner = fi->lock_owner;
    c.flock_release = fi->flock_release != 0;
    c.writepage = fi->writepage != 0;
  }
  c.request = req;
  return c;
}

}  // namespace internal

using internal::Ctx;
using internal::FillOpen;
using internal::ReplyEntry;
using internal::Serve;
using internal::ToStat;

namespace {

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
  const MountOptions& o = ctx->options;
  // Data moves through our buffers: no splice (it costs a pipe per request for no gain here).
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS |
                  FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
  unsigned wanted = FUSE_CAP_ASYNC_READ | FUSE_CAP_ASYNC_DIO | FUSE_CAP_ATOMIC_O_TRUNC;
  if (o.locks) wanted |= FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS;
  if (o.readdirplus) wanted |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
  if (o.writeback_cache) wanted |= FUSE_CAP_WRITEBACK_CACHE;
  if (o.parallel_dirops) wanted |= FUSE_CAP_PARALLEL_DIROPS;
  conn->want |= conn->capable & wanted;
  // libfuse clamps max_write to its buffer (256 pages) and asks the kernel for max_pages to
  // match, so reads and writes travel in requests of up to 1 MiB.
  conn->max_write = o.max_write_bytes;
  conn->max_readahead = std::min(conn->max_readahead, o.max_readahead_bytes);
  conn->max_background = o.max_background;
  conn->congestion_threshold = o.max_background * 3 / 4;
  // The file system does not apply the umask itself: the kernel does (FUSE_CAP_DONT_MASK off).
  conn->want &= ~FUSE_CAP_DONT_MASK;
  ConnectionInfo info;
  info.protocol_major = conn->proto_major;
  info.protocol_minor = conn->proto_minor;
  info.max_write_bytes = conn->max_write;
  info.max_readahead_bytes = conn->max_readahead;
  info.max_background = conn->max_background;
  info.writeback_cache = (conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0;
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
  Serve(req, FuseOp::kLookup, nullptr, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(EntryReply e, ctx->fs->Lookup(InodeId{parent}, name));
    ReplyEntry(ctx, req, e);
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

void OpGetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Serve(req, FuseOp::kGetAttr, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(NodeAttr a, ctx->fs->GetAttr(InodeId{ino}));
    struct stat st = ToStat(a);
    fuse_reply_attr(req, &st, ctx->options.attr_timeout_s);
    return Status::OK();
  });
}

SetAttrRequest ToSetAttr(const struct stat* attr, int to_set, const fuse_file_info* fi) {
  SetAttrRequest r;
  r.has_size = (to_set & FUSE_SET_ATTR_SIZE) != 0;
  r.size_bytes = static_cast<uint64_t>(attr->st_size);
  r.has_mode = (to_set & FUSE_SET_ATTR_MODE) != 0;
  r.mode = attr->st_mode;
  r.has_uid = (to_set & FUSE_SET_ATTR_UID) != 0;
  r.uid = attr->st_uid;
  r.has_gid = (to_set & FUSE_SET_ATTR_GID) != 0;
  r.gid = attr->st_gid;
  r.has_owner = r.has_uid || r.has_gid;
  r.has_atime = (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW)) != 0;
  r.atime_now = (to_set & FUSE_SET_ATTR_ATIME_NOW) != 0;
  r.atime = attr->st_atim;
  r.has_mtime = (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) != 0;
  r.mtime_now = (to_set & FUSE_SET_ATTR_MTIME_NOW) != 0;
  r.mtime = attr->st_mtim;
  r.has_times = r.has_atime || r.has_mtime || (to_set & FUSE_SET_ATTR_CTIME) != 0;
  if (fi != nullptr) {
    r.has_fh = true;
    r.fh = fi->fh;
  }
  return r;
}

void OpSetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
               fuse_file_info* fi) {
  Serve(req, FuseOp::kSetAttr, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(NodeAttr a, ctx->fs->SetAttr(InodeId{ino}, ToSetAttr(attr, to_set, fi)));
    struct stat st = ToStat(a);
    fuse_reply_attr(req, &st, ctx->options.attr_timeout_s);
    return Status::OK();
  });
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Serve(req, FuseOp::kOpen, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_ASSIGN_OR_RETURN(OpenReply o, ctx->fs->Open(InodeId{ino}, fi->flags));
    FillOpen(o, fi);
    if (fuse_reply_open(req, fi) != 0) {
      // The open was interrupted: the kernel will never release this handle, so we do.
      Status ignored = ctx->fs->Release(InodeId{ino}, o.fh);
      (void)ignored;
    }
    return Status::OK();
  });
}

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Serve(req, FuseOp::kRead, fi, [&](AdapterContext* ctx) -> Status {
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
  Serve(req, FuseOp::kWrite, fi, [&](AdapterContext* ctx) -> Status {
    const uint64_t t0 = MonotonicNowNs();
    FOLIO_ASSIGN_OR_RETURN(size_t n, ctx->fs->Write(InodeId{ino}, fi->fh,
                                                    static_cast<uint64_t>(off), {buf, size}));
    ctx->stats.RecordWrite(size, n, MonotonicNowNs() - t0);
    fuse_reply_write(req, n);
    return Status::OK();
  });
}

void OpFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Serve(req, FuseOp::kFlush, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->Flush(InodeId{ino}, fi->fh));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Serve(req, FuseOp::kRelease, fi, [&](AdapterContext* ctx) -> Status {
    FOLIO_RETURN_IF_ERROR(ctx->fs->Release(InodeId{ino}, fi->fh));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpFsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  Serve(req, FuseOp::kFsync, fi, [&](AdapterContext* ctx) -> Status {
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
  Serve(req, FuseOp::kFallocate, fi, [&](AdapterContext* ctx) -> Status {
    if (off < 0 || length <= 0) return Status::FromErrno(EINVAL, "fallocate range");
    FOLIO_RETURN_IF_ERROR(ctx->fs->Fallocate(InodeId{ino}, fi->fh, mode,
                                             static_cast<uint64_t>(off),
                                             static_cast<uint64_t>(length)));
    fuse_reply_err(req, 0);
    return Status::OK();
  });
}

void OpStatFs(fuse_req_t req, fuse_ino_t /*ino*/) {
  Serve(req, FuseOp::kStatFs, nullptr, [&](AdapterContext* ctx) -> Status {
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
  ops.statfs = OpStatFs;
  internal::AddNamespaceOps(&ops);
  internal::AddExtraOps(&ops);
  return ops;
}

}  // namespace

int ReplyWithReference(AdapterContext* ctx, InodeId ino, const std::function<int()>& reply) {
  ctx->lookups.Add(ino);
  const int r = reply();
  if (r != 0) ForgetOne(ctx, static_cast<fuse_ino_t>(ino), 1);
  return r;
}

void ForgetReferences(AdapterContext* ctx, InodeId ino, uint64_t n) {
  ForgetOne(ctx, static_cast<fuse_ino_t>(ino), n);
}

const fuse_lowlevel_ops& LowLevelOps() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace folio::fuse
