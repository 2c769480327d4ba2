// The low-level ops table adapter: libfuse callbacks -> Filesystem calls -> exactly one reply.
// lowlevel_ops.cc, lowlevel_ns_ops.cc and lowlevel_extra_ops.cc are the only users of
// fuse_lowlevel.h (their shared helpers: lowlevel_util.h).
//
// Every callback runs its body inside one guard that catches anything thrown (a C frame is
// above it) and turns a non-OK Status into fuse_reply_err; a body that succeeds sends its own
// fuse_reply_* as its last statement. Forget is the only request without a reply
// (fuse_reply_none), as the protocol wants.
//
// Thread safety: the context is shared by all worker threads; LookupCounts has its own lock,
// RequestStats is lock-free, fs must be thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "fuse/filesystem.h"
#include "fuse/request_stats.h"
#include "fuse/session.h"

struct fuse_lowlevel_ops;

namespace folio::fuse {

// The kernel's references to each inode, as the adapter counted them from its replies.
// Invariant: a count never goes below zero (a Forget of more than was looked up aborts).
class LookupCounts {
 public:
  void Add(InodeId ino);
  // Returns the count left after subtracting nlookup.
  uint64_t Forget(InodeId ino, uint64_t nlookup);
  uint64_t Get(InodeId ino) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, uint64_t> counts_;  // GUARDED_BY(mu_)
};

struct AdapterContext {
  Filesystem* fs = nullptr;
  MountOptions options;
  RequestStats stats;
  LookupCounts lookups;
};

// The ops table; its userdata must be an AdapterContext*.
const fuse_lowlevel_ops& LowLevelOps();

// Sends a reply that hands the kernel one reference to ino (a lookup's entry) and keeps the
// count exact. The reference is counted before reply() runs: once the reply is out, a FORGET
// of it may be served by another worker before reply() even returns. When reply() fails (an
// interrupted request: the kernel never got the entry) the reference is forgotten again, the
// file system told as for a FORGET. `reply` returns the fuse_reply_* result (0 on success),
// which is returned.
int ReplyWithReference(AdapterContext* ctx, InodeId ino, const std::function<int()>& reply);
// Takes back n references counted for a reply that did not reach the kernel (a readdirplus
// page), telling the file system as for a FORGET.
void ForgetReferences(AdapterContext* ctx, InodeId ino, uint64_t n);

}  // namespace folio::fuse
