// DeviceLock: exclusive use of a device path (a member file, a block device) among Folio
// processes, so two exports, or an export and a `folio raid` command, never open the same
// devices at once.
//
// The lock is flock(LOCK_EX | LOCK_NB) on the path, held by an open descriptor for the
// object's lifetime; the kernel drops it when the holder exits, even by kill -9, so no stale
// lock is ever left. When the path is already locked, the holder's PID is read from
// /proc/locks and named in the error (with its command line), e.g.
//   "/tmp/m0.img: in use by process 4242 (folio export --mount /mnt/v ...); stop it first"
//
// Thread safety: LockDevicePath is thread-safe; a DeviceLock is a move-only value.
#pragma once

#include <sys/types.h>

#include <string>

#include "folio/status.h"

namespace folio {

class DeviceLock {
 public:
  DeviceLock() = default;
  DeviceLock(DeviceLock&& other) noexcept;
  DeviceLock& operator=(DeviceLock&& other) noexcept;
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;
  ~DeviceLock();

  bool held() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  friend Result<DeviceLock> LockDevicePath(const std::string& path);
  DeviceLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  int fd_ = -1;
  std::string path_;
};

// Takes the lock. Errors: NotFound for a missing path; Busy naming the holder when another
// open file description holds it (another process, or another lock of this one); IOError.
Result<DeviceLock> LockDevicePath(const std::string& path);

// The PID that holds an flock on the file (st_dev, st_ino) according to /proc/locks, or 0
// when none is listed.
pid_t FlockHolderPid(dev_t dev, ino_t ino);

}  // namespace folio
