#include "fuse/request_stats.h"

namespace folio::fuse {

std::string_view FuseOpName(FuseOp op) {
  switch (op) {
    case FuseOp::kInit: return "init";
    case FuseOp::kLookup: return "lookup";
    case FuseOp::kForget: return "forget";
    case FuseOp::kGetAttr: return "getattr";
    case FuseOp::kSetAttr: return "setattr";
    case FuseOp::kOpen: return "open";
    case FuseOp::kRead: return "read";
    case FuseOp::kWrite: return "write";
    case FuseOp::kFlush: return "flush";
    case FuseOp::kRelease: return "release";
    case FuseOp::kFsync: return "fsync";
    case FuseOp::kOpenDir: return "opendir";
    case FuseOp::kReadDir: return "readdir";
    case FuseOp::kReleaseDir: return "releasedir";
    case FuseOp::kStatFs: return "statfs";
    case FuseOp::kFallocate: return "fallocate";
    case FuseOp::kAccess: return "access";
    case FuseOp::kCreate: return "create";
    case FuseOp::kMknod: return "mknod";
    case FuseOp::kMkdir: return "mkdir";
    case FuseOp::kUnlink: return "unlink";
    case FuseOp::kRmdir: return "rmdir";
    case FuseOp::kSymlink: return "symlink";
    case FuseOp::kReadLink: return "readlink";
    case FuseOp::kRename: return "rename";
    case FuseOp::kLink: return "link";
    case FuseOp::kXattr: return "xattr";
    case FuseOp::kLock: return "lock";
    case FuseOp::kLseek: return "lseek";
    case FuseOp::kCopyFileRange: return "copy_file_range";
    case FuseOp::kOther: return "other";
    case FuseOp::kCount: break;
  }
  return "?";
}

void RequestStats::RecordRead(uint64_t asked_bytes, uint64_t done_bytes, uint64_t latency_ns) {
  read_request_bytes_.Record(asked_bytes);
  read_latency_ns_.Record(latency_ns);
  read_bytes_.fetch_add(done_bytes, std::memory_order_relaxed);
}

void RequestStats::RecordWrite(uint64_t asked_bytes, uint64_t done_bytes, uint64_t latency_ns) {
  write_request_bytes_.Record(asked_bytes);
  write_latency_ns_.Record(latency_ns);
  write_bytes_.fetch_add(done_bytes, std::memory_order_relaxed);
}

RequestStatsSnapshot RequestStats::Snapshot() const {
  RequestStatsSnapshot s;
  for (size_t i = 0; i < kNumFuseOps; ++i) {
    s.requests[i] = requests_[i].load(std::memory_order_relaxed);
    s.errors[i] = errors_[i].load(std::memory_order_relaxed);
  }
  s.read_request_bytes = read_request_bytes_.Snapshot();
  s.write_request_bytes = write_request_bytes_.Snapshot();
  s.read_latency_ns = read_latency_ns_.Snapshot();
  s.write_latency_ns = write_latency_ns_.Snapshot();
  s.fsync_latency_ns = fsync_latency_ns_.Snapshot();
  s.read_bytes = read_bytes_.load(std::memory_order_relaxed);
  s.write_bytes = write_bytes_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace folio::fuse
