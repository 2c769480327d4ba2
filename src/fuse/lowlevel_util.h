// Pieces the low-level ops files share (lowlevel_ops.cc, lowlevel_ns_ops.cc,
// lowlevel_extra_ops.cc): the request guard, stat / entry conversion, the caller context.
// Included only by those files (they define FUSE_USE_VERSION and include fuse_lowlevel.h).
//
// Thread safety: every helper works on its own request; the context is thread-safe.
#pragma once

#ifndef FUSE_USE_VERSION
#error "define FUSE_USE_VERSION before including lowlevel_util.h"
#endif

#include <fuse3/fuse_lowlevel.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "fuse/lowlevel_ops.h"

namespace folio::fuse::internal {

inline AdapterContext* Ctx(fuse_req_t req) {
  return static_cast<AdapterContext*>(fuse_req_userdata(req));
}

inline int ErrnoOf(const Status& s) {
  const int err = s.ToErrno();
  return err > 0 ? err : EIO;
}

// Makes `ctx` the CallerContext() of this thread while it lives.
class ScopedCaller {
 public:
  explicit ScopedCaller(const RequestContext* ctx);
  ~ScopedCaller();

 private:
  const RequestContext* saved_;
};

// The RequestContext of a request (fi may be null).
RequestContext ContextOf(fuse_req_t req, const fuse_file_info* fi);

// Runs body(ctx) for a request: a body replies itself and returns OK, or returns an error and
// the guard replies with its errno. Nothing thrown crosses into libfuse's C frames. The
// request's context is the file system's CallerContext() during the body.
template <typename Body>
void Serve(fuse_req_t req, FuseOp op, const fuse_file_info* fi, Body&& body) {
  AdapterContext* ctx = Ctx(req);
  ctx->stats.RecordRequest(op);
  const RequestContext caller = ContextOf(req, fi);
  ScopedCaller scope(&caller);
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

inline struct stat ToStat(const NodeAttr& a) {
  struct stat st;
  std::memset(&st, 0, sizeof(st));
  st.st_ino = static_cast<ino_t>(a.ino);
  st.st_mode = a.mode;
  st.st_nlink = a.nlink;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_rdev = static_cast<dev_t>(a.rdev);
  st.st_size = static_cast<off_t>(a.size_bytes);
  st.st_blksize = a.blksize_bytes;
  st.st_blocks = static_cast<blkcnt_t>(a.blocks_512);
  st.st_atim = a.atime;
  st.st_mtim = a.mtime;
  st.st_ctim = a.ctime;
  return st;
}

inline fuse_entry_param ToEntry(const EntryReply& e) {
  fuse_entry_param p;
  std::memset(&p, 0, sizeof(p));
  p.ino = static_cast<fuse_ino_t>(e.attr.ino);
  p.attr = ToStat(e.attr);
  p.attr_timeout = e.attr_timeout_s;
  p.entry_timeout = e.entry_timeout_s;
  return p;
}

// Replies with an entry, keeping the lookup count exact (ReplyWithReference).
inline void ReplyEntry(AdapterContext* ctx, fuse_req_t req, const EntryReply& e) {
  const fuse_entry_param p = ToEntry(e);
  ReplyWithReference(ctx, e.attr.ino, [&] { return fuse_reply_entry(req, &p); });
}

inline void FillOpen(const OpenReply& o, fuse_file_info* fi) {
  fi->fh = o.fh;
  fi->direct_io = o.direct_io ? 1 : 0;
  fi->keep_cache = o.keep_cache ? 1 : 0;
  fi->nonseekable = o.nonseekable ? 1 : 0;
}

// Registers the namespace, directory and extra operations (lowlevel_ns_ops.cc,
// lowlevel_extra_ops.cc) in the table.
void AddNamespaceOps(fuse_lowlevel_ops* ops);
void AddExtraOps(fuse_lowlevel_ops* ops);

}  // namespace folio::fuse::internal
