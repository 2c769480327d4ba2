// Device specs as `folio export` takes them, and opening them as locked volumes.
//
//   file:PATH or PATH       a regular file or block device (O_DIRECT, io_uring)
//   mem:SIZE                a memory device (tests, experiments)
//   raid:PATH,PATH,...      a RAID volume assembled from its members' superblocks
//
// Opening a spec locks every path it names (LockDevicePath) before opening it, so two Folio
// processes never use the same device; the locks live as long as the volume.
//
// Thread safety: pure parsing; OpenVolume from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/device_lock.h"
#include "folio/block_device.h"
#include "folio/status.h"

namespace folio::cli {

struct DeviceSpec {
  enum class Kind { kFile, kMem, kRaid };
  Kind kind = Kind::kFile;
  std::string text;                // as given
  std::vector<std::string> paths;  // kFile: one path; kRaid: the members
  uint64_t mem_bytes = 0;          // kMem

  // The volume's default file name: the basename of the file (or of the first RAID member),
  // "mem0", "mem1", ... for memory devices (index = position among the specs).
  std::string DefaultName(size_t index) const;
};

// Parses one spec. InvalidArgument names the spec and the accepted forms.
Result<DeviceSpec> ParseDeviceSpec(std::string_view text);

// Makes every path of the spec absolute (a daemon changes to "/").
Status MakePathsAbsolute(DeviceSpec* spec);

struct OpenedVolume {
  DeviceSpec spec;
  std::vector<DeviceLock> locks;        // one per path, held while the volume is open
  std::unique_ptr<BlockDevice> device;  // what the page cache reads and writes
  // Live RAID statistics for .stats; empty for plain devices.
  std::function<nlohmann::ordered_json()> raid_stats;
  // Called once before the device is destroyed (a RAID volume marks itself clean).
  std::function<Status()> stop;
};

// Locks and opens the spec's device(s). Errors: NotFound for a missing path, Busy naming the
// process that holds a member, InvalidArgument / NotSupported for unusable devices, IOError.
Result<OpenedVolume> OpenVolume(const DeviceSpec& spec);

}  // namespace folio::cli
