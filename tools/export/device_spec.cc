#include "export/device_spec.h"

#include <limits.h>
#include <stdlib.h>

#include "base/units.h"

namespace folio::cli {

namespace {

constexpr std::string_view kForms = "use file:PATH, PATH, mem:SIZE or raid:PATH,PATH,...";

Status BadSpec(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("device spec '" + std::string(text) + "': " + std::string(why) +
                                 "; " + std::string(kForms));
}

std::string Basename(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

Result<OpenedVolume> OpenFile(const DeviceSpec& spec) {
  OpenedVolume v;
  v.spec = spec;
  FOLIO_ASSIGN_OR_RETURN(DeviceLock lock, LockDevicePath(spec.paths[0]));
  v.locks.push_back(std::move(lock));
  FileDeviceOptions o;
  o.direct = true;
  o.queue_depth = 128;
  FOLIO_ASSIGN_OR_RETURN(v.device, OpenFileDevice(spec.paths[0], o));
  return v;
}

Result<OpenedVolume> OpenMem(const DeviceSpec& spec) {
  OpenedVolume v;
  v.spec = spec;
  MemDeviceOptions o;
  o.size_bytes = spec.mem_bytes;
  o.logical_block_bytes = 4096;
  FOLIO_ASSIGN_OR_RETURN(v.device, NewMemDevice(o));
  return v;
}

}  // namespace

// Defined in raid_volume.cc.
Result<OpenedVolume> OpenRaidVolume(const DeviceSpec& spec);

std::string DeviceSpec::DefaultName(size_t index) const {
  if (kind == Kind::kMem) return "mem" + std::to_string(index);
  return Basename(paths.at(0));
}

Result<DeviceSpec> ParseDeviceSpec(std::string_view text) {
  DeviceSpec spec;
  spec.text = std::string(text);
  if (text.empty()) return BadSpec(text, "empty");
  if (text.rfind("mem:", 0) == 0) {
    spec.kind = DeviceSpec::Kind::kMem;
    Result<uint64_t> size = ParseSize(text.substr(4), "mem:SIZE");
    if (!size.ok() || *size == 0 || *size % 4096 != 0) {
      return BadSpec(text, "SIZE must be a positive multiple of 4K (e.g. mem:256M)");
    }
    spec.mem_bytes = *size;
    return spec;
  }
  if (text.rfind("raid:", 0) == 0) {
    spec.kind = DeviceSpec::Kind::kRaid;
    std::string_view rest = text.substr(5);
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view member = rest.substr(0, comma);
      if (member.empty()) return BadSpec(text, "empty member path");
      spec.paths.emplace_back(member);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
      if (rest.empty()) return BadSpec(text, "empty member path after ','");
    }
    if (spec.paths.size() < 2) return BadSpec(text, "a RAID volume needs at least 2 members");
    return spec;
  }
  std::string_view path = text;
  if (text.rfind("file:", 0) == 0) path = text.substr(5);
  if (path.empty()) return BadSpec(text, "empty path");
  const size_t colon = path.find(':');
  if (text.rfind("file:", 0) != 0 && colon != std::string_view::npos && path.find('/') > colon) {
    return BadSpec(text, "unknown kind '" + std::string(path.substr(0, colon)) + ":'");
  }
  spec.kind = DeviceSpec::Kind::kFile;
  spec.paths.emplace_back(path);
  return spec;
}

Status MakePathsAbsolute(DeviceSpec* spec) {
  for (std::string& p : spec->paths) {
    char buf[PATH_MAX];
    if (realpath(p.c_str(), buf) == nullptr) return Status::FromErrno(errno, p);
    p = buf;
  }
  return Status::OK();
}

Result<OpenedVolume> OpenVolume(const DeviceSpec& spec) {
  switch (spec.kind) {
    case DeviceSpec::Kind::kFile:
      return OpenFile(spec);
    case DeviceSpec::Kind::kMem:
      return OpenMem(spec);
    case DeviceSpec::Kind::kRaid:
      return OpenRaidVolume(spec);
  }
  return Status::InvalidArgument("unknown device kind");
}

}  // namespace folio::cli
