#include "fs/fs_bench_mounts.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/check.h"
#include "bench/memcg.h"
#include "fuse/mount_point.h"

namespace folio::cli {

namespace {

constexpr uint64_t kServerExitTimeoutMs = 120000;

std::string Joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last.empty() ? "(no output)" : last;
}

// fork + exec with stdout and stderr appended to log_path, in a process group of its own.
Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return Status::FromErrno(errno, log_path);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    // The bench turns SIGINT / SIGTERM into a flag (bench::StopSignal); the child gets the
    // default actions back.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(log, 1);
    dup2(log, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  const int err = errno;
  ::close(log);
  if (pid < 0) return Status::FromErrno(err, "fork for " + argv[0]);
  return pid;
}

Result<int> WaitChild(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::FromErrno(errno, "waitpid");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace

Status RunChild(const std::vector<std::string>& argv, const std::string& log_path) {
  FOLIO_ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, log_path));
  FOLIO_ASSIGN_OR_RETURN(int code, WaitChild(pid));
  if (code == 0) return Status::OK();
  return Status::IOError("'" + Joined(argv) + "' exited with " + std::to_string(code) + ": " +
                         LastLine(log_path) + " (log " + log_path + ")");
}

Result<std::unique_ptr<BenchMount>> BenchMount::Folio(const std::string& folio_binary,
                                                      const std::string& work,
                                                      const std::string& name,
                                                      const std::string& storage, bool packing,
                                                      uint64_t cache_bytes,
                                                      uint64_t readahead_bytes) {
  const std::string meta = "sqlite:" + work + "/" + name + ".db";
  const std::string log = work + "/" + name + ".log";
  const std::string mnt = work + "/mnt-" + name;
  std::filesystem::create_directories(mnt);
  std::vector<std::string> format = {folio_binary, "fs", "format", meta, name, "--storage",
                                     storage};
  if (!packing) format.insert(format.end(), {"--pack-below", "0"});
  FOLIO_RETURN_IF_ERROR(RunChild(format, log));
  std::vector<std::string> mount = {folio_binary, "fs", "mount", meta, mnt,
                                    "--cache", std::to_string(cache_bytes >> 20) + "M",
                                    "--daemon", "--log", log, "-o", "meta_sync=fsync"};
  if (readahead_bytes != 0) {
    mount.back() += ",readahead=" + std::to_string(readahead_bytes >> 10) + "K";
  }
  FOLIO_RETURN_IF_ERROR(RunChild(mount, log));
  Result<fuse::MountEntry> m = fuse::FindFuseMount(mnt);
  if (!m.ok() || m->pid <= 0) {
    return Status::IOError("'" + Joined(mount) + "' reported success but " + mnt +
                           " is not a Folio FUSE mount; see " + log);
  }
  return std::unique_ptr<BenchMount>(
      new BenchMount(mnt, m->pid, /*child=*/false, Joined(format) + " && " + Joined(mount)));
}

Result<std::unique_ptr<BenchMount>> BenchMount::Passthrough(const std::string& pll,
                                                            const std::string& source,
                                                            const std::string& mountpoint,
                                                            const std::string& log_path,
                                                            bench::MemoryCgroup* memcg) {
  std::filesystem::create_directories(mountpoint);
  const std::vector<std::string> argv = {pll, "-f", "-o", "source=" + source, mountpoint};
  if (memcg != nullptr) FOLIO_RETURN_IF_ERROR(memcg->Join());  // the child is forked inside
  Result<pid_t> pid = Spawn(argv, log_path);
  if (memcg != nullptr) {
    Status left = memcg->Leave();
    FOLIO_CHECK_MSG(left.ok(), "folio fs bench: cannot leave the memory cgroup after fork");
  }
  if (!pid.ok()) return pid.status();
  std::unique_ptr<BenchMount> m(new BenchMount(mountpoint, *pid, /*child=*/true, Joined(argv)));
  for (int i = 0; i < 200; ++i) {
    if (fuse::FindFuseMount(mountpoint).ok()) return m;
    int status = 0;
    if (waitpid(*pid, &status, WNOHANG) == *pid) {
      m->mounted_ = false;
      return Status::IOError("'" + Joined(argv) + "' exited before mounting: " +
                             LastLine(log_path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::IOError("'" + Joined(argv) + "' did not mount within 10 s: " +
                         LastLine(log_path));
}

Status BenchMount::Unmount() {
  if (!mounted_) return Status::OK();
  mounted_ = false;
  Status s = Status::OK();
  if (fuse::FindFuseMount(path_).ok()) {
    s = fuse::UnmountPath(path_, fuse::UnmountMode::kNormal);
    if (!s.ok()) (void)fuse::UnmountPath(path_, fuse::UnmountMode::kLazy);
  }
  Status w = fuse::WaitForExit(pid_, kServerExitTimeoutMs);
  if (!w.ok()) {
    kill(pid_, SIGKILL);
    if (s.ok()) s = w;
  }
  if (child_) {
    Result<int> code = WaitChild(pid_);
    if (s.ok() && code.ok() && *code != 0) {
      s = Status::IOError(command_ + ": exited with " + std::to_string(*code));
    }
  }
  return s;
}

BenchMount::~BenchMount() { (void)Unmount(); }

uint64_t CountStoreObjects(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file(ec) && name != "store.json" && !name.starts_with(".tmp.")) ++n;
  }
  return n;
}

}  // namespace folio::cli
