#include "export/export_volume.h"

#include "export/raid_volume.h"

namespace folio::cli {

std::string DefaultVolumeName(const DeviceSpec& spec, size_t index) {
  if (spec.kind == DeviceSpec::Kind::kMem) return "mem" + std::to_string(index);
  std::string p = spec.paths.at(0);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

Result<OpenedVolume> OpenVolume(const DeviceSpec& spec) {
  OpenedVolume v;
  v.spec = spec;
  DeviceOpenOptions o;
  o.queue_depth = 128;
  FOLIO_ASSIGN_OR_RETURN(v.device, OpenDevice(spec, o));
  if (RaidDevice* raid = AsRaid(v.device.get())) {
    v.raid = std::make_shared<RaidRunner>(raid, o);
    v.raid->StartPendingSync();
  }
  return v;
}

}  // namespace folio::cli
