#include "fuse/mount_point.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace folio::fuse {

namespace {

constexpr char kFsnamePrefix[] = "folio:";

std::string Errno(int err) { return std::strerror(err); }

// Undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
std::string Unescape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// An absolute path for dir without stat-ing dir itself (a dead FUSE mount fails every stat
// with ENOTCONN): the parent is resolved, the last component kept.
std::string AbsoluteMountPath(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.rfind('/');
  std::string parent = slash == std::string::npos ? "." : (slash == 0 ? "/" : d.substr(0, slash));
  std::string base = slash == std::string::npos ? d : d.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") {
    char buf[PATH_MAX];
    return realpath(d.c_str(), buf) != nullptr ? std::string(buf) : d;
  }
  char buf[PATH_MAX];
  if (realpath(parent.c_str(), buf) == nullptr) return d;
  std::string abs = buf;
  if (abs != "/") abs += "/";
  return abs + base;
}

pid_t PidFromSource(const std::string& source) {
  const size_t n = sizeof(kFsnamePrefix) - 1;
  if (source.compare(0, n, kFsnamePrefix) != 0) return 0;
  char* end = nullptr;
  const long v = std::strtol(source.c_str() + n, &end, 10);
  if (end == source.c_str() + n || *end != '\0' || v <= 0) return 0;
  return static_cast<pid_t>(v);
}

// Runs `fusermount3 -u [-z] -q dir`; returns its stderr (one line) on failure.
Status RunFusermount(const std::string& dir, UnmountMode mode) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  std::vector<std::string> args = {"fusermount3", "-u", "-q"};
  if (mode == UnmountMode::kLazy) args.push_back("-z");
  args.push_back(dir);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "fusermount3", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    return Status::NotSupported(dir + ": not permitted to unmount it (" + Errno(rc) +
                                " running fusermount3); install fuse3 or run as root");
  }
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof(buf))) > 0) err.append(buf, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return Status::OK();
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  if (err.find("busy") != std::string::npos) {
    return Status::Busy(dir + ": busy (open files or a loop device use it); close them, or "
                        "unmount lazily with --lazy");
  }
  return Status::IOError(dir + ": fusermount3 -u failed: " + err);
}

}  // namespace

std::string FsnameForPid(pid_t pid) { return kFsnamePrefix + std::to_string(pid); }

Status CheckMountPoint(const std::string& flag, const std::string& dir) {
  const std::string what = flag + " " + dir;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return Status::InvalidArgument(what + ": no such directory; create it first (mkdir -p " +
                                     dir + ")");
    }
    if (err == ENOTCONN) {
      return Status::InvalidArgument(what + ": a dead FUSE mount (its server exited); clear it "
                                     "with 'folio export --unmount " + dir + "'");
    }
    return Status::InvalidArgument(what + ": " + Errno(err));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(what + ": not a directory; give an empty directory");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    return Status::InvalidArgument(what + ": not permitted (" + Errno(errno) +
                                   "); use a directory you own");
  }
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Status::InvalidArgument(what + ": " + Errno(errno));
  size_t entries = 0;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++entries;
  }
  closedir(d);
  if (entries != 0) {
    Result<MountEntry> m = FindFuseMount(dir);
    if (m.ok() && m->pid != 0) {
      return Status::InvalidArgument(what + ": already a Folio export (process " +
                                     std::to_string(m->pid) + "); unmount it first with "
                                     "'folio export --unmount " + dir + "'");
    }
    return Status::InvalidArgument(what + ": not empty (" + std::to_string(entries) +
                                   (entries == 1 ? " entry" : " entries") +
                                   "); use an empty directory");
  }
  return Status::OK();
}

Status CheckFuseDevice() {
  const int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENODEV || err == ENXIO) {
      return Status::NotSupported("FUSE is unavailable: /dev/fuse: " + Errno(err) +
                                  "; load the fuse module (modprobe fuse) or run where "
                                  "/dev/fuse exists");
    }
    return Status::InvalidArgument("FUSE is not permitted: /dev/fuse: " + Errno(err) +
                                   "; run as root or get read-write access to /dev/fuse");
  }
  close(fd);
  return Status::OK();
}

std::optional<MountEntry> ParseMountInfoLine(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> fields;
  std::string f;
  while (in >> f) fields.push_back(f);
  // id parent maj:min root mountpoint options [optional...] - fstype source superoptions
  size_t dash = 0;
  for (size_t i = 6; i < fields.size(); ++i) {
    if (fields[i] == "-") {
      dash = i;
      break;
    }
  }
  if (fields.size() < 10 || dash == 0 || dash + 2 >= fields.size()) return std::nullopt;
  MountEntry e;
  e.mountpoint = Unescape(fields[4]);
  e.fstype = Unescape(fields[dash + 1]);
  e.source = Unescape(fields[dash + 2]);
  e.pid = PidFromSource(e.source);
  return e;
}

Result<MountEntry> FindFuseMount(const std::string& dir) {
  const std::string abs = AbsoluteMountPath(dir);
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return Status::IOError("/proc/self/mountinfo: cannot read it");
  std::optional<MountEntry> found;
  std::string line;
  while (std::getline(in, line)) {
    std::optional<MountEntry> e = ParseMountInfoLine(line);
    // The last match is the one on top when mounts are stacked.
    if (e && e->mountpoint == abs && e->fstype.rfind("fuse", 0) == 0) found = std::move(e);
  }
  if (!found) return Status::NotFound(dir + ": not a FUSE mount point");
  return *found;
}

Status UnmountPath(const std::string& dir, UnmountMode mode) {
  const std::string abs = AbsoluteMountPath(dir);
  if (geteuid() == 0) {
    if (umount2(abs.c_str(), mode == UnmountMode::kLazy ? MNT_DETACH : 0) == 0) {
      return Status::OK();
    }
    const int err = errno;
    if (err == EBUSY) {
      return Status::Busy(dir + ": busy (open files or a loop device use it); close them, or "
                          "unmount lazily with --lazy");
    }
    if (err == EINVAL) return Status::NotFound(dir + ": not a mount point");
    if (err != EPERM) return Status::FromErrno(err, "umount " + dir);
  }
  return RunFusermount(abs, mode);
}

Status WaitForExit(pid_t pid, uint64_t timeout_ms) {
  if (pid <= 0) return Status::OK();
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    if (errno == ESRCH) return Status::OK();
    return Status::FromErrno(errno, "pidfd_open " + std::to_string(pid));
  }
  pollfd p{fd, POLLIN, 0};
  int rc;
  const int timeout = timeout_ms > INT_MAX ? INT_MAX : static_cast<int>(timeout_ms);
  while ((rc = poll(&p, 1, timeout)) < 0 && errno == EINTR) {
  }
  close(fd);
  if (rc > 0) return Status::OK();
  return Status::Again("process " + std::to_string(pid) + " is still running after " +
                       std::to_string(timeout_ms / 1000) + " s");
}

}  // namespace folio::fuse
