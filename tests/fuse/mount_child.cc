#include "mount_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "fuse/mount_point.h"

namespace folio::fuse::test {
namespace {

// fork + exec of argv with stdout and stderr on out_fd; -1 when fork fails.
pid_t Spawn(const std::vector<std::string>& argv, int out_fd) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

int Reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv) {
  CommandResult r;
  char path[] = "/tmp/folio-cmd-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    r.output = std::string("mkstemp: ") + std::strerror(errno);
    return r;
  }
  unlink(path);
  const pid_t pid = Spawn(argv, fd);
  if (pid < 0) {
    r.output = std::string("fork: ") + std::strerror(errno);
    close(fd);
    return r;
  }
  r.code = Reap(pid);
  char buf[4096];
  ssize_t n;
  off_t off = 0;
  while ((n = pread(fd, buf, sizeof buf, off)) > 0) {
    r.output.append(buf, static_cast<size_t>(n));
    off += n;
  }
  close(fd);
  return r;
}

MountChild::MountChild(std::string folio_binary, std::string meta_url, std::string mountpoint,
                       std::string log_path)
    : folio_(std::move(folio_binary)),
      meta_(std::move(meta_url)),
      dir_(std::move(mountpoint)),
      log_(std::move(log_path)) {}

MountChild::~MountChild() {
  if (pid_ > 0) (void)Kill9();
}

std::string MountChild::LogTail() const {
  std::ifstream in(log_);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > 20 ? lines.size() - 20 : 0; i < lines.size(); ++i) {
    out += "\n  | " + lines[i];
  }
  return out.empty() ? " (empty log " + log_ + ")" : out;
}

Status MountChild::Start(const std::vector<std::string>& args) {
  struct stat before;
  if (stat(dir_.c_str(), &before) != 0) return Status::FromErrno(errno, dir_);
  const int log = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return Status::FromErrno(errno, log_);
  std::vector<std::string> argv = {folio_, "fs", "mount", meta_, dir_};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = Spawn(argv, log);
  close(log);
  if (pid_ < 0) return Status::FromErrno(errno, "fork for folio fs mount");
  for (int i = 0; i < 1200; ++i) {
    struct stat now;
    if (stat(dir_.c_str(), &now) == 0 && now.st_dev != before.st_dev &&
        FindFuseMount(dir_).ok()) {
      return Status::OK();
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Status::IOError("folio fs mount exited before mounting:" + LogTail());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  (void)Kill9();
  return Status::IOError("folio fs mount did not mount " + dir_ + " within 60 s:" + LogTail());
}

Status MountChild::Stop() {
  if (pid_ <= 0) return Status::OK();
  CommandResult u = RunCommand({folio_, "fs", "umount", dir_});
  if (u.code != 0) {
    return Status::IOError("folio fs umount exited " + std::to_string(u.code) + ": " + u.output);
  }
  const int code = Reap(pid_);
  pid_ = -1;
  if (code != 0) {
    return Status::IOError("folio fs mount exited " + std::to_string(code) + ":" + LogTail());
  }
  return Status::OK();
}

Status MountChild::Kill9() {
  if (pid_ <= 0) return Status::OK();
  kill(pid_, SIGKILL);
  Reap(pid_);
  pid_ = -1;
  return UnmountPath(dir_, UnmountMode::kLazy);
}

}  // namespace folio::fuse::test
