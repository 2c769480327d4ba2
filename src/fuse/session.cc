#define FUSE_USE_VERSION 312
#include "fuse/session.h"

#include <fuse3/fuse_lowlevel.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/poll_wait.h"
#include "fuse/log.h"
#include "fuse/lowlevel_ops.h"
#include "fuse/request_loop.h"

namespace folio::fuse {

struct FuseServer::Impl {
  AdapterContext ctx;
  fuse_session* se = nullptr;
  bool mounted = false;
};

namespace {

// "-o" options of the session: the kernel checks permissions (default_permissions), the mount
// is named after this process so `folio export --unmount` finds it.
std::string SessionOptions(const MountOptions& o) {
  std::string opts = "fsname=" + FsnameForPid(getpid()) + ",subtype=" + o.subtype;
  if (o.default_permissions) opts += ",default_permissions";
  if (o.allow_other) opts += ",allow_other";
  if (o.read_only) opts += ",ro";
  return opts;
}

Status MountFailure(const std::string& dir, const std::string& libfuse_says) {
  const bool denied = libfuse_says.find("ermission denied") != std::string::npos ||
                      libfuse_says.find("not permitted") != std::string::npos;
  const std::string why = libfuse_says.empty() ? "mount failed" : libfuse_says;
  if (denied) {
    return Status::InvalidArgument("--mount " + dir + ": not permitted to mount (" + why +
                                   "); run as root or install fuse3 (fusermount3)");
  }
  return Status::IOError("--mount " + dir + ": " + why);
}

// The session's requests for a RequestLoop: each worker receives into its own buffer, after
// polling for a request for up to poll_us (MountOptions::poll_us).
class SessionSource final : public RequestSource {
 public:
  SessionSource(fuse_session* se, uint32_t poll_us)
      : se_(se), poll_ns_(int64_t{poll_us} * 1000) {}
  void* NewWorker() override { return new fuse_buf{}; }
  void FreeWorker(void* w) override {
    auto* buf = static_cast<fuse_buf*>(w);
    std::free(buf->mem);
    delete buf;
  }
  int Receive(void* w) override {
    const int fd = fuse_session_fd(se_);
    PollFor(poll_ns_, [fd] {
      pollfd p{fd, POLLIN, 0};
      const int n = ::poll(&p, 1, 0);
      if (n > 0) return PollStep::kDone;  // a request, or the session's end: the read tells
      return n < 0 && errno != EINTR ? PollStep::kGiveUp : PollStep::kNothing;
    });
    return fuse_session_receive_buf(se_, static_cast<fuse_buf*>(w));
  }
  void Process(void* w) override { fuse_session_process_buf(se_, static_cast<fuse_buf*>(w)); }

 private:
  fuse_session* se_;
  int64_t poll_ns_;
};

}  // namespace

FuseServer::FuseServer(Filesystem* fs, const MountOptions& options)
    : options_(options), impl_(std::make_unique<Impl>()) {
  impl_->ctx.fs = fs;
  impl_->ctx.options = options;
}

Result<std::unique_ptr<FuseServer>> FuseServer::Mount(Filesystem* fs,
                                                      const MountOptions& options) {
  FOLIO_RETURN_IF_ERROR(CheckMountPoint("--mount", options.mountpoint));
  FOLIO_RETURN_IF_ERROR(CheckFuseDevice());
  std::unique_ptr<FuseServer> server(new FuseServer(fs, options));
  Impl* impl = server->impl_.get();

  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  const std::string opts = SessionOptions(options);
  bool args_ok = fuse_opt_add_arg(&args, "folio") == 0 && fuse_opt_add_arg(&args, "-o") == 0 &&
                 fuse_opt_add_arg(&args, opts.c_str()) == 0;
  if (args_ok && options.debug) args_ok = fuse_opt_add_arg(&args, "-d") == 0;
  if (!args_ok) {
    fuse_opt_free_args(&args);
    return Status::NoSpace("out of memory building the FUSE options");
  }
  BeginLibfuseCapture();
  const fuse_lowlevel_ops& ops = LowLevelOps();
  impl->se = fuse_session_new(&args, &ops, sizeof(ops), &impl->ctx);
  fuse_opt_free_args(&args);
  if (impl->se == nullptr) {
    return Status::IOError("libfuse refused the session options (" + opts +
                           "): " + EndLibfuseCapture());
  }
  if (fuse_session_mount(impl->se, options.mountpoint.c_str()) != 0) {
    return MountFailure(options.mountpoint, EndLibfuseCapture());
  }
  std::string noise = EndLibfuseCapture();
  if (!noise.empty()) Log("libfuse: " + noise);
  impl->mounted = true;
  return server;
}

FuseServer::~FuseServer() {
  if (impl_->se == nullptr) return;
  // A no-op when the kernel already ended the connection (unmounted from elsewhere).
  if (impl_->mounted) fuse_session_unmount(impl_->se);
  fuse_session_destroy(impl_->se);
}

Status FuseServer::Run() {
  SessionSource source(impl_->se, options_.poll_us);
  RequestLoopOptions lo;
  lo.max_threads = options_.max_threads;
  RequestLoop loop(&source, lo);
  const int rc = loop.Run();
  const RequestLoopStats st = loop.stats();
  Log(options_.mountpoint + ": served " + std::to_string(st.requests) + " requests on " +
      std::to_string(st.threads) + " threads; the reading moved " +
      std::to_string(st.handoffs_hinted) + " times before a wait, " +
      std::to_string(st.handoffs_stalled) + " times after a request ran " +
      std::to_string(lo.stall_ns / 1000000) + " ms");
  if (rc < 0) return Status::FromErrno(-rc, "FUSE loop on " + options_.mountpoint);
  return Status::OK();
}

void FuseServer::RequestUnmount() {
  if (unmount_requested_.exchange(true)) {
    Log(options_.mountpoint + ": unmount already requested");
  }
  Status s = UnmountPath(options_.mountpoint, UnmountMode::kNormal);
  if (s.code() == StatusCode::kBusy) {
    Log(options_.mountpoint + ": busy; detached lazily, serving open files until the last "
        "is closed");
    s = UnmountPath(options_.mountpoint, UnmountMode::kLazy);
  }
  if (s.IsNotFound()) return;  // already gone
  if (!s.ok()) Log(std::string(s.message()));
}

const RequestStats& FuseServer::stats() const { return impl_->ctx.stats; }

}  // namespace folio::fuse
