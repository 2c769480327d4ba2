#include "cli/device_spec.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/units.h"
#include "io/forwarding_device.h"

namespace folio::cli {
namespace {

// A device with the path locks it needs; stops a RAID volume before releasing them.
class LockedDevice final : public ForwardingDevice {
 public:
  LockedDevice(std::unique_ptr<BlockDevice> inner, std::vector<DeviceLock> locks)
      : ForwardingDevice(inner.get()), locks_(std::move(locks)), inner_(std::move(inner)) {}
  ~LockedDevice() override {
    if (RaidDevice* raid = dynamic_cast<RaidDevice*>(inner_.get())) (void)raid->Stop();
    inner_.reset();  // before the locks go
  }
  BlockDevice* inner() const { return inner_.get(); }

  Status RegisterArena(FolioArena* arena) override { return inner_->RegisterArena(arena); }

 private:
  std::vector<DeviceLock> locks_;
  std::unique_ptr<BlockDevice> inner_;
};

Status BadSpec(std::string_view text, std::string_view problem) {
  return Status::InvalidArgument(std::string(text) + ": " + std::string(problem));
}

// "TEXT: message", unless the message already starts with the spec (a bare path's errors
// name the path).
Status NameSpec(std::string_view text, const Status& s) {
  if (s.ok()) return s;
  const std::string_view m = s.message();
  if (m.size() > text.size() && m.substr(0, text.size()) == text && m[text.size()] == ':') {
    return s;
  }
  return s.WithContext(text);
}

// Whether `path` exists and is no directory. `what` prefixes the path in messages
// ("TEXT: " for a spec's path, "member " for a RAID member) and `fix` ends a missing path's.
Status CheckPath(const std::string& path, std::string_view what, std::string_view fix) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return Status::NotFound(std::string(what) + path + ": no such file or device; " +
                              std::string(fix));
    }
    return Status::FromErrno(err, std::string(what) + path);
  }
  if (S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(std::string(what) + path +
                                   ": is a directory; give a regular file or a block device");
  }
  return Status::OK();
}

// The prefix CheckPath puts before a spec's path: "TEXT: " unless the path is the whole spec.
std::string SpecPathPrefix(const DeviceSpec& spec, const std::string& path) {
  return spec.text == path ? std::string() : spec.text + ": ";
}

FileDeviceOptions FileOptions(const DeviceOpenOptions& o) {
  FileDeviceOptions f;
  f.engine = o.engine;
  f.direct = o.direct;
  f.queue_depth = o.queue_depth;
  f.max_request_bytes = o.max_request_bytes;
  f.read_only = o.read_only;
  return f;
}

// Opens (creating when asked) and, unless read-only, locks one file that CheckPath found or
// that is to be created.
Result<std::unique_ptr<BlockDevice>> OpenFile(const std::string& path, bool exists,
                                              const DeviceOpenOptions& o,
                                              std::vector<DeviceLock>* locks) {
  FileDeviceOptions f = FileOptions(o);
  if (!exists) {
    f.create = true;
    f.size_bytes = o.create_bytes;
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> dev, OpenFileDevice(path, f));
    FOLIO_ASSIGN_OR_RETURN(DeviceLock lock, LockDevicePath(path));
    locks->push_back(std::move(lock));
    return dev;
  }
  if (!o.read_only) {
    FOLIO_ASSIGN_OR_RETURN(DeviceLock lock, LockDevicePath(path));
    locks->push_back(std::move(lock));
  }
  return OpenFileDevice(path, f);
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

Result<uint64_t> ParseMemSize(std::string_view text) {
  auto bytes = ParseSize(text.substr(4), "mem:");
  if (!bytes.ok() || *bytes == 0 || *bytes % 4096 != 0) {
    return BadSpec(text, "SIZE must be a non-zero multiple of 4K (e.g. mem:64M)");
  }
  // A memory device holds its bytes in this process: no more than the machine has.
  struct sysinfo si;
  if (sysinfo(&si) == 0) {
    const uint64_t ram = static_cast<uint64_t>(si.totalram) * si.mem_unit;
    if (*bytes > ram) {
      return BadSpec(text, "larger than this machine's memory (" + FormatSize(ram) +
                               "); use a smaller size");
    }
  }
  return *bytes;
}

Result<std::vector<std::string>> ParseRaidMembers(std::string_view text) {
  // Every comma-separated element must name a member: an empty one (",,", a trailing comma)
  // is a typo that would otherwise assemble fewer members than the user listed.
  std::vector<std::string> paths;
  std::string_view rest = text.substr(5);
  while (true) {
    const size_t comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    if (part.substr(0, 5) == "file:") part.remove_prefix(5);
    if (part.empty()) return BadSpec(text, "empty member path; use raid:PATH,PATH,...");
    paths.emplace_back(part);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (paths.size() < 2) {
    return BadSpec(text, "raid: needs two or more comma-separated member paths (e.g. "
                         "raid:/d/m0,/d/m1,/d/m2)");
  }
  return paths;
}

}  // namespace

std::string DeviceSpec::Canonical() const {
  switch (kind) {
    case Kind::kMem:
      return "mem:" + FormatSize(mem_bytes);
    case Kind::kFile:
      return "file:" + paths[0];
    case Kind::kRaid: {
      std::string s = "raid:";
      for (size_t i = 0; i < paths.size(); ++i) s += (i ? "," : "") + paths[i];
      return s;
    }
  }
  return text;
}

Result<DeviceSpec> ParseDeviceSpec(std::string_view text) {
  DeviceSpec spec;
  spec.text = std::string(text);
  if (text.empty()) return Status::InvalidArgument("empty device spec; " +
                                                   std::string(kDeviceSpecForms));
  if (text.substr(0, 4) == "mem:") {
    spec.kind = DeviceSpec::Kind::kMem;
    FOLIO_ASSIGN_OR_RETURN(spec.mem_bytes, ParseMemSize(text));
    return spec;
  }
  if (text.substr(0, 5) == "raid:") {
    spec.kind = DeviceSpec::Kind::kRaid;
    FOLIO_ASSIGN_OR_RETURN(spec.paths, ParseRaidMembers(text));
    return spec;
  }
  std::string_view path = text;
  if (path.substr(0, 5) == "file:") path.remove_prefix(5);
  if (path.empty()) return BadSpec(text, "no path; " + std::string(kDeviceSpecForms));
  spec.kind = DeviceSpec::Kind::kFile;
  spec.paths.emplace_back(path);
  return spec;
}

Status ResolveDevicePaths(DeviceSpec* spec) {
  for (std::string& p : spec->paths) {
    FOLIO_RETURN_IF_ERROR(CheckPath(p, SpecPathPrefix(*spec, p), kDeviceSpecForms));
    char buf[PATH_MAX];
    if (realpath(p.c_str(), buf) == nullptr) {
      return Status::FromErrno(errno, SpecPathPrefix(*spec, p) + p);
    }
    p = buf;
  }
  return Status::OK();
}

Result<std::vector<RaidMember>> OpenMembers(const std::vector<std::string>& paths,
                                            const DeviceOpenOptions& options,
                                            std::vector<DeviceLock>* locks) {
  // Every path is checked before any is opened, and the locks reach *locks only when all
  // members opened: a refused list leaves nothing locked or created.
  std::set<std::string> seen;
  std::vector<bool> exists;
  for (const std::string& path : paths) {
    if (!seen.insert(path).second) {
      return Status::InvalidArgument("member " + path + " is listed twice");
    }
    exists.push_back(Exists(path));
    if (exists.back() || options.create_bytes == 0) {
      FOLIO_RETURN_IF_ERROR(CheckPath(path, "member ",
                                      "give the paths of the array's existing members (a "
                                      "lost one may be left out: the array runs degraded)"));
    }
  }
  std::vector<DeviceLock> taken;
  std::vector<RaidMember> members;
  for (size_t i = 0; i < paths.size(); ++i) {
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> dev,
                           OpenFile(paths[i], exists[i], options, &taken));
    members.push_back({paths[i], std::move(dev)});
  }
  FOLIO_CHECK(locks != nullptr || taken.empty());
  for (DeviceLock& l : taken) locks->push_back(std::move(l));
  return members;
}

std::unique_ptr<BlockDevice> WithLocks(std::unique_ptr<BlockDevice> device,
                                       std::vector<DeviceLock> locks) {
  return std::make_unique<LockedDevice>(std::move(device), std::move(locks));
}

namespace {

Result<std::unique_ptr<BlockDevice>> OpenUnnamed(const DeviceSpec& spec,
                                                 const DeviceOpenOptions& options) {
  std::vector<DeviceLock> locks;
  switch (spec.kind) {
    case DeviceSpec::Kind::kMem: {
      MemDeviceOptions m;
      m.size_bytes = spec.mem_bytes;
      m.queue_depth = options.queue_depth;
      m.max_request_bytes = options.max_request_bytes;
      return NewMemDevice(m);
    }
    case DeviceSpec::Kind::kFile: {
      const std::string& path = spec.paths[0];
      const bool exists = Exists(path);
      if (exists || options.create_bytes == 0) {
        FOLIO_RETURN_IF_ERROR(CheckPath(path, "", kDeviceSpecForms));
      }
      FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> dev,
                             OpenFile(path, exists, options, &locks));
      return WithLocks(std::move(dev), std::move(locks));
    }
    case DeviceSpec::Kind::kRaid: {
      for (const std::string& path : spec.paths) {
        FOLIO_RETURN_IF_ERROR(CheckPath(path, "", kDeviceSpecForms));
      }
      DeviceOpenOptions member_options = options;
      member_options.create_bytes = 0;  // an array is never made of files created here
      FOLIO_ASSIGN_OR_RETURN(std::vector<RaidMember> members,
                             OpenMembers(spec.paths, member_options, &locks));
      FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<RaidDevice> raid,
                             RaidDevice::Assemble(std::move(members), options.raid));
      return WithLocks(std::move(raid), std::move(locks));
    }
  }
  return BadSpec(spec.text, kDeviceSpecForms);
}

}  // namespace

Result<std::unique_ptr<BlockDevice>> OpenDevice(const DeviceSpec& spec,
                                                const DeviceOpenOptions& options) {
  Result<std::unique_ptr<BlockDevice>> dev = OpenUnnamed(spec, options);
  if (!dev.ok()) return NameSpec(spec.text, dev.status());
  return dev;
}

Result<std::unique_ptr<BlockDevice>> OpenDevice(std::string_view text,
                                                const DeviceOpenOptions& options) {
  FOLIO_ASSIGN_OR_RETURN(DeviceSpec spec, ParseDeviceSpec(text));
  return OpenDevice(spec, options);
}

std::function<Result<std::unique_ptr<BlockDevice>>(std::string_view spec)> DeviceOpener(
    const DeviceOpenOptions& options) {
  return [options](std::string_view spec) { return OpenDevice(spec, options); };
}

RaidDevice* AsRaid(BlockDevice* device) {
  if (auto* locked = dynamic_cast<LockedDevice*>(device)) device = locked->inner();
  return dynamic_cast<RaidDevice*>(device);
}

pid_t LockHolderPid(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return 0;
  const pid_t pid = FlockHolderPid(st.st_dev, st.st_ino);
  return pid > 0 ? pid : 0;
}

std::vector<std::string> ProcessArguments(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  for (size_t b = 0, e; b < raw.size(); b = e + 1) {
    e = raw.find('\0', b);
    if (e == std::string::npos) e = raw.size();
    argv.push_back(raw.substr(b, e - b));
  }
  return argv;
}

std::string LockHolder(const std::string& path) {
  const pid_t pid = LockHolderPid(path);
  if (pid == 0) return "";
  std::string who = "process " + std::to_string(pid);
  if (pid == getpid()) return who + " (this one)";
  std::string cmd;
  for (const std::string& arg : ProcessArguments(pid)) cmd += (cmd.empty() ? "" : " ") + arg;
  if (cmd.size() > 80) cmd = cmd.substr(0, 77) + "...";
  return cmd.empty() ? who : who + " (" + cmd + ")";
}

Status ForSpec(std::string_view name, const Status& status) {
  if (status.ok()) return status;
  return Status(status.code(), std::string(name) + " " + std::string(status.message()));
}

}  // namespace folio::cli
