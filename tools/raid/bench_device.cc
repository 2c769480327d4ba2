#include "raid/bench_device.h"

#include <sys/stat.h>

#include <memory>
#include <string>
#include <string_view>

#include "bench/device.h"
#include "raid/device_open.h"

namespace folio::cli {
namespace {

Result<std::string> KernelPath(std::string_view spec) {
  FOLIO_ASSIGN_OR_RETURN(DeviceSpecText parsed, ParseDeviceSpecText(spec));
  if (parsed.kind == DeviceSpecText::Kind::kFile) return parsed.paths[0];
  return std::string();
}

Result<std::unique_ptr<BlockDevice>> Open(std::string_view spec, uint32_t queue_depth) {
  FOLIO_ASSIGN_OR_RETURN(DeviceSpecText parsed, ParseDeviceSpecText(spec));
  // The bench never creates a device: a missing path is named here (OpenDeviceSpec's own
  // message suggests `--size`, which the bench does not have).
  for (const std::string& path : parsed.paths) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return Status::NotFound("--device " + std::string(spec) + ": " + path +
                              ": no such file; give an existing file or block device, the "
                              "members of a created RAID volume, or mem:SIZE");
    }
  }
  OpenDeviceOptions o;
  o.direct = true;
  o.queue_depth = queue_depth;
  Result<std::unique_ptr<BlockDevice>> device = OpenDeviceSpec(spec, o);
  if (!device.ok()) return device.status().WithContext("--device " + std::string(spec));
  return device;
}

}  // namespace

void InstallBenchDeviceHooks() {
  bench::BenchDeviceHooks hooks;
  hooks.kernel_path = &KernelPath;
  hooks.open = &Open;
  bench::SetBenchDeviceHooks(hooks);
}

}  // namespace folio::cli
