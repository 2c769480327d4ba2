#include "bench/memcg.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "base/units.h"

namespace folio::bench {

namespace {

constexpr char kCgroupPrefix[] = "folio-bench.";

Status WriteText(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, path);
  const ssize_t n = write(fd, text.data(), text.size());
  const int err = errno;
  close(fd);
  if (n < 0) return Status::FromErrno(err, path + ": write '" + text + "'");
  return Status::OK();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

bool HasToken(std::string_view list, std::string_view token, char sep) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(sep, pos);
    if (end == std::string_view::npos) end = list.size();
    if (list.substr(pos, end - pos) == token) return true;
    pos = end + 1;
  }
  return false;
}

// The mount point of the v1 memory controller, or of cgroup2 (v2), from /proc/self/mounts.
std::string FindMount(int version) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, dir, type, opts;
  std::string rest;
  while (in >> dev >> dir >> type >> opts) {
    std::getline(in, rest);
    if (version == 1 && type == "cgroup" && HasToken(opts, "memory", ',')) return dir;
    if (version == 2 && type == "cgroup2") return dir;
  }
  return "";
}

// This process's cgroup path in hierarchy `version` (from /proc/self/cgroup), or "".
std::string OwnCgroup(int version) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string_view controllers = std::string_view(line).substr(a + 1, b - a - 1);
    const bool match = version == 1 ? HasToken(controllers, "memory", ',')
                                    : line.compare(0, a, "0") == 0 && controllers.empty();
    if (match) return line.substr(b + 1);
  }
  return "";
}

Status NotSupported(const std::string& why) { return Status::NotSupported(why); }

// Removes folio-bench.PID cgroups under `home` whose PID is gone (a bench killed with -9).
void RemoveStale(const std::string& home, int version) {
  DIR* d = opendir(home.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    const std::string_view name = e->d_name;
    if (!name.starts_with(kCgroupPrefix)) continue;
    const long pid = std::strtol(e->d_name + std::strlen(kCgroupPrefix), nullptr, 10);
    if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      stale.push_back(home + "/" + std::string(name));
    }
  }
  closedir(d);
  for (const std::string& dir : stale) {
    if (version == 1) {
      (void)WriteText(dir + "/memory.force_empty", "0");
    } else {
      (void)WriteText(dir + "/memory.reclaim", "1T");
    }
    rmdir(dir.c_str());
  }
}

}  // namespace

Result<std::unique_ptr<MemoryCgroup>> MemoryCgroup::Create(uint64_t limit_bytes) {
  if (geteuid() != 0) {
    return NotSupported("not root (creating a memory cgroup needs root); run as root for "
                        "equal memory");
  }
  int version = 0;
  std::string mount = FindMount(1);
  if (!mount.empty()) {
    version = 1;
  } else {
    mount = FindMount(2);
    if (!mount.empty()) version = 2;
  }
  if (version == 0) {
    return NotSupported("no memory cgroup controller is mounted (neither a v1 memory mount "
                        "nor cgroup2)");
  }
  const std::string rel = OwnCgroup(version);
  const std::string home = mount + (rel == "/" ? "" : rel);
  if (version == 2) {
    const std::string controllers = ReadText(home + "/cgroup.controllers");
    if (!HasToken(controllers.substr(0, controllers.find('\n')), "memory", ' ')) {
      return NotSupported("cgroup v2 at " + home + " has no memory controller (cgroup."
                          "controllers: '" + controllers.substr(0, controllers.find('\n')) +
                          "')");
    }
    const std::string subtree = ReadText(home + "/cgroup.subtree_control");
    if (!HasToken(subtree.substr(0, subtree.find('\n')), "memory", ' ')) {
      Status s = WriteText(home + "/cgroup.subtree_control", "+memory");
      if (!s.ok()) {
        return NotSupported("cgroup v2 at " + home + ": cannot enable memory for child "
                            "cgroups (" + std::string(s.message()) + "; a cgroup with "
                            "processes cannot delegate it)");
      }
    }
  }
  RemoveStale(home, version);
  const std::string path = home + "/" + kCgroupPrefix + std::to_string(getpid());
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    const int err = errno;
    return NotSupported("cannot create " + path + ": " + std::strerror(err));
  }
  std::unique_ptr<MemoryCgroup> cg(new MemoryCgroup(version, path, home, limit_bytes));
  const std::string limit = std::to_string(limit_bytes);
  if (version == 1) {
    Status s = WriteText(path + "/memory.limit_in_bytes", limit);
    if (!s.ok()) return NotSupported(std::string(s.message()));
    if (Exists(path + "/memory.memsw.limit_in_bytes")) {
      s = WriteText(path + "/memory.memsw.limit_in_bytes", limit);
      if (!s.ok()) return NotSupported(std::string(s.message()));
    }
  } else {
    Status s = WriteText(path + "/memory.max", limit);
    if (!s.ok()) return NotSupported(std::string(s.message()));
    if (Exists(path + "/memory.swap.max")) (void)WriteText(path + "/memory.swap.max", "0");
  }
  return cg;
}

MemoryCgroup::~MemoryCgroup() {
  if (joined_) (void)Leave();
  Empty();
  rmdir(path_.c_str());
}

Status MemoryCgroup::Join() {
  FOLIO_RETURN_IF_ERROR(WriteText(path_ + "/cgroup.procs", std::to_string(getpid())));
  joined_ = true;
  return Status::OK();
}

Status MemoryCgroup::Leave() {
  FOLIO_RETURN_IF_ERROR(WriteText(home_ + "/cgroup.procs", std::to_string(getpid())));
  joined_ = false;
  return Status::OK();
}

void MemoryCgroup::Empty() {
  if (version_ == 1) {
    (void)WriteText(path_ + "/memory.force_empty", "0");
  } else {
    (void)WriteText(path_ + "/memory.reclaim", std::to_string(UsageBytes() + (64 << 20)));
  }
}

void MemoryCgroup::ResetPeak() {
  if (version_ == 1) (void)WriteText(path_ + "/memory.max_usage_in_bytes", "0");
}

std::string MemoryCgroup::LimitName() const {
  return version_ == 1 ? "cgroup v1 memory.limit_in_bytes" : "cgroup v2 memory.max";
}

uint64_t MemoryCgroup::UsageBytes() const {
  const std::string text =
      ReadText(path_ + (version_ == 1 ? "/memory.usage_in_bytes" : "/memory.current"));
  return std::strtoull(text.c_str(), nullptr, 10);
}

uint64_t MemoryCgroup::PeakBytes() const {
  const std::string text =
      ReadText(path_ + (version_ == 1 ? "/memory.max_usage_in_bytes" : "/memory.peak"));
  return std::strtoull(text.c_str(), nullptr, 10);
}

}  // namespace folio::bench
