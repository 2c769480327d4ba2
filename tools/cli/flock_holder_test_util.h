// Test helper: another process holding a path's device lock (base/device_lock.h), as a
// `folio export` or any other Folio process would. It is flock(1) taking the lock (--close:
// not passed on to its command) and then sleeping, with `args` on its command line after
// the command (`sh -c 'sleep 60' ARGS...`), started in `cwd`. The constructor returns once the
// lock is held; the destructor kills the process group.
//
// Thread safety: one test thread; fork + exec.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace folio::cli::test {

class FlockHolder {
 public:
  FlockHolder(const std::string& path, const std::vector<std::string>& args = {},
              const std::string& cwd = "/") {
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      if (chdir(cwd.c_str()) != 0) _exit(127);
      std::vector<std::string> argv = {"flock", "--exclusive", "--close", path,
                                       "sh",    "-c",          "sleep 60"};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execvp("flock", cargv.data());
      _exit(127);
    }
    // Until the lock is held: a non-blocking flock of our own fails (or the helper died).
    const std::string probe = "flock --nonblock --close '" + path + "' true";
    while (std::system(probe.c_str()) == 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      usleep(1000);
    }
  }
  ~FlockHolder() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  FlockHolder(const FlockHolder&) = delete;
  FlockHolder& operator=(const FlockHolder&) = delete;

  // The holder's PID (the process /proc/locks names), or -1 when flock(1) did not start.
  pid_t pid() const { return pid_; }
  bool held() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

}  // namespace folio::cli::test
