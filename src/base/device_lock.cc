#include "base/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace folio {

namespace {

// "folio export --mount /mnt/v ..." from /proc/<pid>/cmdline, cut at 80 characters.
std::string CommandLineOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  if (raw.size() > 80) raw = raw.substr(0, 77) + "...";
  return raw;
}

}  // namespace

DeviceLock::DeviceLock(DeviceLock&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

DeviceLock& DeviceLock::operator=(DeviceLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) close(fd_);
}

pid_t FlockHolderPid(dev_t dev, ino_t ino) {
  std::ifstream in("/proc/locks");
  std::string line;
  char want[64];
  std::snprintf(want, sizeof(want), "%02x:%02x:%lu", major(dev), minor(dev),
                static_cast<unsigned long>(ino));
  while (std::getline(in, line)) {
    // "1: FLOCK  ADVISORY  WRITE 4242 08:01:131090 0 EOF"; waiters have "->" after the id.
    std::istringstream fields(line);
    std::string id, kind, mode, access, pid, file;
    fields >> id >> kind;
    if (kind != "FLOCK") continue;
    fields >> mode >> access >> pid >> file;
    if (file == want) return static_cast<pid_t>(std::atol(pid.c_str()));
  }
  return 0;
}

Result<DeviceLock> LockDevicePath(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, path);
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) return DeviceLock(fd, path);
  const int err = errno;
  struct stat st;
  const bool have_stat = fstat(fd, &st) == 0;
  close(fd);
  if (err != EWOULDBLOCK) return Status::FromErrno(err, path + ": flock");
  const pid_t holder = have_stat ? FlockHolderPid(st.st_dev, st.st_ino) : 0;
  if (holder <= 0) {
    return Status::Busy(path + ": in use by another process; stop it first");
  }
  std::string who = "process " + std::to_string(holder);
  if (holder == getpid()) who += " (this one)";
  const std::string cmd = holder == getpid() ? "" : CommandLineOf(holder);
  if (!cmd.empty()) who += " (" + cmd + ")";
  return Status::Busy(path + ": in use by " + who + "; stop it first");
}

}  // namespace folio
