// FuseServer: one mounted FUSE file system, its requests served by a RequestLoop (one reading
// thread at a time, request_loop.h) over libfuse's low-level session.
//
// Life cycle:
//
//   Mount()  checks the mount point and /dev/fuse, creates the session with the adapter's ops
//            table, mounts (as "folio:<pid>"); on any error nothing is left mounted
//   Run()    serves requests on up to max_threads worker threads until the mount goes away:
//            an unmount from any process (`folio export --unmount`, umount, fusermount3 -u)
//            or RequestUnmount() (what the SIGINT / SIGTERM handler calls); then logs how
//            often the reading moved between threads
//   ~FuseServer  unmounts if still mounted and destroys the session
//
// The loop ends only when the kernel ends the connection, so a lazy unmount keeps serving the
// users that still have files open (an ext4 on a loop device on top) until the last closes.
// The owner flushes its data after Run() returns; nothing here touches the file system's data.
//
// Thread safety: Mount / Run / destruction from one thread; RequestUnmount and stats() from
// any thread (a signal-watching thread included) while Run() is serving.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/poll_wait.h"
#include "folio/status.h"
#include "fuse/filesystem.h"
#include "fuse/mount_point.h"
#include "fuse/request_stats.h"

namespace folio::fuse {

struct MountOptions {
  std::string mountpoint;
  std::string subtype = "folio";  // shows as fuse.<subtype> in /proc/mounts
  bool allow_other = false;       // other users may use the mount (-o allow_other)
  uint32_t max_threads = 16;      // worker threads serving requests
  uint32_t max_write_bytes = 1u << 20;      // largest write request (max_pages 256)
  uint32_t max_readahead_bytes = 1u << 20;  // kernel readahead (with the kernel cache on)
  uint32_t max_background = 64;             // async requests (readahead, async direct I/O)
  bool debug = false;                       // libfuse's request log on stderr
  // The kernel checks permissions from the attributes (-o default_permissions).
  bool default_permissions = true;
  bool read_only = false;                   // -o ro: the kernel refuses every change
  // What the file system serves beyond the core (FUSE_CAP_*): POSIX and flock locks,
  // readdirplus, directory operations in parallel, the kernel's writeback cache.
  bool locks = false;
  bool readdirplus = false;
  bool parallel_dirops = false;
  bool writeback_cache = false;
  double attr_timeout_s = 1.0;              // what getattr / setattr replies let the kernel cache
  // How long the reading thread polls /dev/fuse for the next request (base/poll_wait.h)
  // before it blocks in read: a thread that slept is woken ~50 us after the request came on
  // this project's test machine (docs/fs.md, "Polling for the next request"). 0: never polls.
  uint32_t poll_us = kDefaultPollUs;
};

class FuseServer {
 public:
  // REQUIRES: fs outlives the server. Errors: InvalidArgument / NotSupported for the mount
  // point and /dev/fuse (see mount_point.h), IOError when the mount itself fails (with
  // libfuse's reason).
  static Result<std::unique_ptr<FuseServer>> Mount(Filesystem* fs, const MountOptions& options);
  ~FuseServer();
  FuseServer(const FuseServer&) = delete;
  FuseServer& operator=(const FuseServer&) = delete;

  // Serves until the mount is gone. Returns the loop's error, if any.
  // Context: blocks; called once.
  Status Run();

  // Starts an unmount: a normal one, or a lazy one when busy (users keep their open files and
  // Run() returns after the last is closed). Safe to call more than once and from any thread.
  void RequestUnmount();

  const std::string& mountpoint() const { return options_.mountpoint; }
  const RequestStats& stats() const;

 private:
  struct Impl;
  FuseServer(Filesystem* fs, const MountOptions& options);

  MountOptions options_;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> unmount_requested_{false};
};

}  // namespace folio::fuse
