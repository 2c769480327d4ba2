#include "raid/device_open.h"

#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>

#include "base/units.h"

namespace folio::cli {
namespace {

constexpr std::string_view kForms =
    "use file:PATH (or a bare PATH), raid:PATH,PATH,... or mem:SIZE";

// A device with the path locks it needs; stops a RAID volume before releasing them.
class LockedDevice final : public BlockDevice {
 public:
  LockedDevice(std::unique_ptr<BlockDevice> inner, std::vector<DeviceLock> locks)
      : locks_(std::move(locks)), inner_(std::move(inner)) {}
  ~LockedDevice() override {
    if (RaidDevice* raid = dynamic_cast<RaidDevice*>(inner_.get())) (void)raid->Stop();
    inner_.reset();  // before the locks go
  }
  BlockDevice* inner() const { return inner_.get(); }

  std::string name() const override { return inner_->name(); }
  uint32_t logical_block_bytes() const override { return inner_->logical_block_bytes(); }
  uint64_t size_bytes() const override { return inner_->size_bytes(); }
  uint32_t queue_depth() const override { return inner_->queue_depth(); }
  uint64_t max_request_bytes() const override { return inner_->max_request_bytes(); }
  bool supports_trim() const override { return inner_->supports_trim(); }
  Status Submit(std::span<IoRequest* const> batch) override { return inner_->Submit(batch); }
  Result<size_t> Poll(size_t min_complete) override { return inner_->Poll(min_complete); }
  size_t InFlight() const override { return inner_->InFlight(); }
  Status RegisterArena(FolioArena* arena) override { return inner_->RegisterArena(arena); }
  DeviceStatsSnapshot stats() const override { return inner_->stats(); }
  void ResetStats() override { inner_->ResetStats(); }

 private:
  std::vector<DeviceLock> locks_;
  std::unique_ptr<BlockDevice> inner_;
};

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

FileDeviceOptions FileOptions(const OpenDeviceOptions& o) {
  FileDeviceOptions f;
  f.engine = o.engine;
  f.direct = o.direct;
  f.queue_depth = o.queue_depth;
  f.max_request_bytes = o.max_request_bytes;
  return f;
}

// Opens (creating when asked) and locks one file.
Result<std::unique_ptr<BlockDevice>> OpenLockedFile(const std::string& path,
                                                    const OpenDeviceOptions& o,
                                                    uint64_t create_bytes,
                                                    std::vector<DeviceLock>* locks,
                                                    std::string_view what) {
  FileDeviceOptions f = FileOptions(o);
  if (!Exists(path)) {
    if (create_bytes == 0) {
      return Status::NotFound(std::string(what) + " " + path +
                              ": no such file; give --size to create it");
    }
    f.create = true;
    f.size_bytes = create_bytes;
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> dev, OpenFileDevice(path, f));
    FOLIO_ASSIGN_OR_RETURN(DeviceLock lock, LockDevicePath(path));
    locks->push_back(std::move(lock));
    return dev;
  }
  FOLIO_ASSIGN_OR_RETURN(DeviceLock lock, LockDevicePath(path));
  locks->push_back(std::move(lock));
  return OpenFileDevice(path, f);
}

}  // namespace

Result<DeviceSpecText> ParseDeviceSpecText(std::string_view text) {
  DeviceSpecText spec;
  if (text.empty()) return Status::InvalidArgument("empty device spec; " + std::string(kForms));
  if (text.substr(0, 4) == "mem:") {
    spec.kind = DeviceSpecText::Kind::kMem;
    auto bytes = ParseSize(text.substr(4), "mem:");
    if (!bytes.ok() || *bytes == 0 || *bytes % 4096 != 0) {
      return Status::InvalidArgument("device spec '" + std::string(text) +
                                     "': SIZE must be a non-zero multiple of 4K (e.g. mem:64M)");
    }
    // A memory device holds its bytes in this process: no more than the machine has.
    struct sysinfo si;
    if (sysinfo(&si) == 0) {
      const uint64_t ram = static_cast<uint64_t>(si.totalram) * si.mem_unit;
      if (*bytes > ram) {
        return Status::InvalidArgument("device spec '" + std::string(text) + "': larger than "
                                       "this machine's memory (" + FormatSize(ram) +
                                       "); use a smaller size");
      }
    }
    spec.mem_bytes = *bytes;
    return spec;
  }
  if (text.substr(0, 5) == "raid:") {
    spec.kind = DeviceSpecText::Kind::kRaid;
    // Every comma-separated element must name a member: an empty one (",,", a trailing
    // comma) is a typo that would otherwise assemble fewer members than the user listed.
    std::string_view rest = text.substr(5);
    while (true) {
      const size_t comma = rest.find(',');
      std::string_view part = rest.substr(0, comma);
      if (part.substr(0, 5) == "file:") part.remove_prefix(5);
      if (part.empty()) {
        return Status::InvalidArgument(std::string(text) +
                                       ": empty member path; use raid:PATH,PATH,...");
      }
      spec.paths.emplace_back(part);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (spec.paths.size() < 2) {
      return Status::InvalidArgument("device spec '" + std::string(text) +
                                     "': raid: needs two or more comma-separated member paths "
                                     "(e.g. raid:/d/m0,/d/m1,/d/m2)");
    }
    return spec;
  }
  std::string_view path = text;
  if (path.substr(0, 5) == "file:") path.remove_prefix(5);
  if (path.empty()) {
    return Status::InvalidArgument("device spec '" + std::string(text) + "': no path; " +
                                   std::string(kForms));
  }
  spec.kind = DeviceSpecText::Kind::kFile;
  spec.paths.emplace_back(path);
  return spec;
}

Result<std::vector<RaidMember>> OpenMembers(const std::vector<std::string>& paths,
                                            const OpenDeviceOptions& options,
                                            uint64_t create_bytes,
                                            std::vector<DeviceLock>* locks) {
  std::set<std::string> seen;
  std::vector<RaidMember> members;
  for (const std::string& path : paths) {
    if (!seen.insert(path).second) {
      return Status::InvalidArgument("member " + path + " is listed twice");
    }
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> dev,
                           OpenLockedFile(path, options, create_bytes, locks, "member"));
    members.push_back({path, std::move(dev)});
  }
  return members;
}

Result<std::vector<RaidMember>> OpenMembersReadOnly(const std::vector<std::string>& paths,
                                                    const OpenDeviceOptions& options) {
  std::set<std::string> seen;
  std::vector<RaidMember> members;
  FileDeviceOptions f = FileOptions(options);
  f.read_only = true;
  for (const std::string& path : paths) {
    if (!seen.insert(path).second) {
      return Status::InvalidArgument("member " + path + " is listed twice");
    }
    if (!Exists(path)) return Status::NotFound("member " + path + ": no such file");
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> dev, OpenFileDevice(path, f));
    members.push_back({path, std::move(dev)});
  }
  return members;
}

std::string LockHolder(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";
  const pid_t pid = FlockHolderPid(st.st_dev, st.st_ino);
  if (pid <= 0) return "";
  std::string who = "process " + std::to_string(pid);
  if (pid == getpid()) return who + " (this one)";
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  for (char& c : cmd) {
    if (c == '\0') c = ' ';
  }
  if (cmd.size() > 80) cmd = cmd.substr(0, 77) + "...";
  return cmd.empty() ? who : who + " (" + cmd + ")";
}

std::unique_ptr<BlockDevice> WithLocks(std::unique_ptr<BlockDevice> device,
                                       std::vector<DeviceLock> locks) {
  return std::make_unique<LockedDevice>(std::move(device), std::move(locks));
}

Result<std::unique_ptr<BlockDevice>> OpenDeviceSpec(std::string_view text,
                                                    const OpenDeviceOptions& options) {
  FOLIO_ASSIGN_OR_RETURN(DeviceSpecText spec, ParseDeviceSpecText(text));
  std::vector<DeviceLock> locks;
  switch (spec.kind) {
    case DeviceSpecText::Kind::kMem: {
      MemDeviceOptions m;
      m.size_bytes = spec.mem_bytes;
      m.queue_depth = options.queue_depth;
      m.max_request_bytes = options.max_request_bytes;
      return NewMemDevice(m);
    }
    case DeviceSpecText::Kind::kFile: {
      FOLIO_ASSIGN_OR_RETURN(
          std::unique_ptr<BlockDevice> dev,
          OpenLockedFile(spec.paths[0], options, options.create ? options.create_bytes : 0,
                         &locks, "device"));
      return WithLocks(std::move(dev), std::move(locks));
    }
    case DeviceSpecText::Kind::kRaid: {
      FOLIO_ASSIGN_OR_RETURN(std::vector<RaidMember> members,
                             OpenMembers(spec.paths, options, 0, &locks));
      FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<RaidDevice> raid,
                             RaidDevice::Assemble(std::move(members), options.raid));
      return WithLocks(std::move(raid), std::move(locks));
    }
  }
  return Status::InvalidArgument("device spec '" + std::string(text) + "': " +
                                 std::string(kForms));
}

RaidDevice* AsRaid(BlockDevice* device) {
  if (auto* locked = dynamic_cast<LockedDevice*>(device)) device = locked->inner();
  return dynamic_cast<RaidDevice*>(device);
}

}  // namespace folio::cli
