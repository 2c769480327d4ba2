#include "export/device_spec.h"

#include <limits.h>
#include <stdlib.h>

#include <cerrno>

#include "base/units.h"
#include "export/raid_volume.h"

namespace folio::cli {

namespace {

std::string Basename(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

std::string DeviceSpec::Canonical() const {
  switch (parsed.kind) {
    case DeviceSpecText::Kind::kMem:
      return "mem:" + FormatSize(parsed.mem_bytes);
    case DeviceSpecText::Kind::kFile:
      return "file:" + parsed.paths[0];
    case DeviceSpecText::Kind::kRaid: {
      std::string s = "raid:";
      for (size_t i = 0; i < parsed.paths.size(); ++i) s += (i ? "," : "") + parsed.paths[i];
      return s;
    }
  }
  return text;
}

std::string DeviceSpec::DefaultName(size_t index) const {
  if (parsed.kind == DeviceSpecText::Kind::kMem) return "mem" + std::to_string(index);
  return Basename(parsed.paths.at(0));
}

Result<DeviceSpec> ParseDeviceSpec(std::string_view text) {
  DeviceSpec spec;
  spec.text = std::string(text);
  FOLIO_ASSIGN_OR_RETURN(spec.parsed, ParseDeviceSpecText(text));
  for (std::string& p : spec.parsed.paths) {
    char buf[PATH_MAX];
    if (realpath(p.c_str(), buf) == nullptr) {
      const int err = errno;
      if (err == ENOENT) {
        return Status::NotFound("device spec '" + spec.text + "': " + p +
                                ": no such file or device; use file:PATH (or a bare PATH), "
                                "raid:PATH,PATH,... or mem:SIZE");
      }
      return Status::FromErrno(err, "device spec '" + spec.text + "': " + p);
    }
    p = buf;
  }
  return spec;
}

Result<OpenedVolume> OpenVolume(const DeviceSpec& spec) {
  OpenedVolume v;
  v.spec = spec;
  OpenDeviceOptions o;
  o.queue_depth = 128;
  FOLIO_ASSIGN_OR_RETURN(v.device, OpenDeviceSpec(spec.Canonical(), o));
  if (RaidDevice* raid = AsRaid(v.device.get())) {
    v.raid = std::make_shared<RaidRunner>(raid, o);
    v.raid->StartPendingSync();
  }
  return v;
}

}  // namespace folio::cli
